# Flotilla Makefile. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
K8S_BINS ?= $(LOCALBIN)/k8s
export PATH := $(LOCALBIN):$(PATH)

CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

# Integration tests and the local fleet find kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler and kwok here. Set KUBEBUILDER_ASSETS to use binaries you already have.
export KUBEBUILDER_ASSETS ?= $(K8S_BINS)
export FLOTILLA_K8S_BINS ?= $(KUBEBUILDER_ASSETS)

GO_TEST_FLAGS ?=
FLEET_DIR ?= $(CURDIR)/.fleet

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (config/crd/bases) and RBAC (config/rbac) from markers.
	$(CONTROLLER_GEN) rbac:roleName=flotilla-manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: docs
docs: ## Regenerate docs/cli.md from the kubectl flotilla commands and the YAML blocks included from files.
	UPDATE_GOLDEN=1 go test ./cmd/kubectl-flotilla/ -run '^TestCLIDoc$$' -count=1 >/dev/null
	go run ./hack/doccheck -fix

.PHONY: verify-docs
verify-docs: ## Fail when docs/cli.md or an included YAML block is stale, a command lacks an example, or a doc link, anchor or path is broken.
	go test ./cmd/kubectl-flotilla/ -run '^(TestCLIDoc|TestCommandsHaveExamples)$$' -count=1
	go run ./hack/doccheck

.PHONY: verify
verify: manifests generate verify-docs ## Fail when generated files are stale, code is unformatted or the docs are broken.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@git diff --exit-code -- config api || { echo "generated files are stale: run 'make manifests generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- config api)" || { echo "untracked generated files:"; git status --porcelain -- config api; exit 1; }
	go vet ./...

.PHONY: rollout-timing
rollout-timing: k8s-bins ## Progressive rollout measurements on the e2e fleet: time per stage, and a 12-replica rollout under a fleet-wide maxUnavailable of 2 sampled every second (not part of make test).
	FLOTILLA_ROLLOUT_TIMING=1 go test ./test/e2e/ -count=1 -v -timeout 20m -ginkgo.v -ginkgo.focus "Rollout timing" | grep -E 'TIMING|Ran |PASS|FAIL|SUCCESS'

.PHONY: test
test: k8s-bins ## Unit, integration and end-to-end tests against real apiservers (binaries built on first run).
	@# Suites that start clusters run one package at a time: on a 2-core machine several
	@# fleets at once starve each other's controllers. Building and linking stay parallel
	@# (hack/test.sh: go test -p 1 would link each test binary serially between runs).
	@# With GO_TEST_FLAGS set (e.g. -race, -run X), plain go test -p 1 as before.
	$(if $(strip $(GO_TEST_FLAGS)),go test -p 1 $(GO_TEST_FLAGS) ./... -timeout 40m,hack/test.sh 40m)

.PHONY: test-unit
test-unit: ## Pure unit tests only (no apiserver).
	go test $(GO_TEST_FLAGS) -short ./... -timeout 10m

.PHONY: test-e2e
test-e2e: k8s-bins ## End-to-end suite: both scenarios and the propagation rules on a local fleet of full members.
	go test $(GO_TEST_FLAGS) ./test/e2e/... -timeout 20m -v -ginkgo.v

.PHONY: bench
bench: k8s-bins ## Benchmarks: scheduler cycles, propagation of 1,000 Deployments onto 3 members (requests, CPU and time against the floor), a manager restart over 10,000 bound templates (FLOTILLA_BENCH_RESTART_TEMPLATES), manager memory (figures printed).
	go test -run '^$$' -bench . -benchmem -benchtime 200x ./internal/scheduler/...
	go test -run '^$$' -bench . -benchtime 5000x ./internal/customization/
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./test/bench/...

.PHONY: bench-scale
bench-scale: k8s-bins ## Opt-in scale bench: 30 apiserver-only members, 5,000 Divided and 1,000 Duplicated templates, one manager then 3 sharded replicas; table, cost per member (projected to 100 and 1,000), sharded replicas against one manager, PNG plots (docs/bench-scale/). FLOTILLA_SCALE_* size it.
	FLOTILLA_BENCH_SCALE=1 go test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 600m ./test/bench/

.PHONY: soak
soak: k8s-bins ## Chaos soak (not part of make test's long run): SOAK_DURATION (default 10m; or FLOTILLA_SOAK_DURATION) of random changes, manager kills, member restarts; SOAK_SEED replays a run; SOAK_LOG_LEVEL=debug logs each Work's apply. Modes: SOAK_SHARDS=1 (3 replicas, --shards=6; SOAK_SHARDS=N for --shards=N), SOAK_PULL=1 (member2 Pull, its agent killed too), SOAK_CHURN=1 (full members: status churn); SOAK_PROFILE=full sets all three; SOAK_KEEP=1 keeps the run directory (logs, journal).
	go test ./test/soak/ -run 'TestSoak$$' -v -count=1 -timeout 0 -soak.long $(if $(SOAK_DURATION),-soak.duration=$(SOAK_DURATION)) $(if $(SOAK_SEED),-soak.seed=$(SOAK_SEED)) $(if $(SOAK_LOG_LEVEL),-soak.log-level=$(SOAK_LOG_LEVEL)) $(if $(SOAK_KEEP),-soak.keep) $(SOAK_MODE_FLAGS)

# SOAK_SHARDS=1 means sharded (--shards=6): one shard is the unsharded manager, which needs no option.
SOAK_SHARDS_N = $(if $(filter 1,$(SOAK_SHARDS)),6,$(SOAK_SHARDS))
SOAK_MODE_FLAGS = $(if $(filter full,$(SOAK_PROFILE)),-soak.shards=6 -soak.pull -soak.churn,$(if $(SOAK_SHARDS_N),-soak.shards=$(SOAK_SHARDS_N)) $(if $(filter-out 0,$(SOAK_PULL)),-soak.pull) $(if $(filter-out 0,$(SOAK_CHURN)),-soak.churn))

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 20s).
	@hack/fuzz.sh $${FUZZTIME:-20s}

##@ Local fleet and demo

.PHONY: fleet-up
fleet-up: k8s-bins build ## Start (or reuse) the local fleet: a host and 3 full members on 127.0.0.1, kubeconfigs in .fleet/.
	$(LOCALBIN)/fleet up --members $${MEMBERS:-3} --full --dir $(FLEET_DIR) --crds config/crd/bases

.PHONY: fleet-down
fleet-down: ## Stop the local fleet and remove .fleet/.
	@if [ -x $(LOCALBIN)/fleet ]; then $(LOCALBIN)/fleet down --dir $(FLEET_DIR); else go run ./cmd/fleet down --dir $(FLEET_DIR); fi

.PHONY: demo
demo: k8s-bins build ## Show the main job: fleet up, manager, join 3 members, play both scenarios. Leaves it running.
	go run ./test/demo --dir $(notdir $(FLEET_DIR))

.PHONY: demo-down
demo-down: ## Stop the demo's manager and fleet.
	go run ./test/demo --down --dir $(notdir $(FLEET_DIR))

##@ Build

.PHONY: build
build: ## Build the manager and tools into bin/.
	go build -o $(LOCALBIN)/manager .
	@if [ -d cmd ]; then for d in cmd/*/; do n=$$(basename $$d); go build -o $(LOCALBIN)/$$n ./$$d; done; fi

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run . $(ARGS)

.PHONY: k8s-bins
k8s-bins: ## Build kube-apiserver, etcd, kube-controller-manager, kube-scheduler and kwok (cached).
	@hack/k8s-bins.sh $(K8S_BINS)

##@ Tools

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $(CONTROLLER_GEN)

##@ Deployment

# The manager image that build-installer and docker-build use.
IMG ?= ghcr.io/flotilla-io/flotilla:latest
# AGENT_IMG is the Pull mode agent's image (config/agent, `kubectl flotilla register --image`).
AGENT_IMG ?= ghcr.io/flotilla-io/flotilla-agent:latest
# The operator version of the OLM bundle; its CSV is flotilla.v$(VERSION) and runs
# $(BUNDLE_MANAGER_IMG).
VERSION ?= 0.1.0
BUNDLE_MANAGER_IMG ?= ghcr.io/flotilla-io/flotilla:v$(VERSION)
BUNDLE_CHANNELS ?= candidate
BUNDLE_DEFAULT_CHANNEL ?= candidate
BUNDLE_IMG ?= ghcr.io/flotilla-io/flotilla-bundle:v$(VERSION)
CONTAINER_TOOL ?= docker
# Renders config/ with kustomize's and Helm's Go libraries: no kubectl, kustomize, helm or
# operator-sdk binary is needed.
DEPLOYGEN ?= go run ./hack/deploygen

.PHONY: build-installer
build-installer: ## Render config/default into dist/install.yaml (namespace, CRDs, RBAC, manager) for IMG.
	$(DEPLOYGEN) installer -image $(IMG) -o dist/install.yaml

.PHONY: helm
helm: ## Regenerate charts/flotilla's crds/ and templates/rbac.yaml from config/.
	$(DEPLOYGEN) helm

.PHONY: bundle
bundle: ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/ for VERSION.
	$(DEPLOYGEN) bundle -version $(VERSION) -image $(BUNDLE_MANAGER_IMG) -channels $(BUNDLE_CHANNELS) -default-channel $(BUNDLE_DEFAULT_CHANNEL)

.PHONY: deploy-manifests
deploy-manifests: manifests helm bundle ## After changing markers or config/: regenerate RBAC and CRDs, the chart and the bundle.

.PHONY: verify-deploy
verify-deploy: manifests ## Fail when the chart's generated files or the bundle are stale.
	$(MAKE) --no-print-directory helm bundle
	@git diff --exit-code -- charts bundle bundle.Dockerfile || { echo "the chart or the bundle is stale: run 'make deploy-manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- charts bundle bundle.Dockerfile)" || { echo "untracked generated files:"; git status --porcelain -- charts bundle bundle.Dockerfile; exit 1; }

# make verify checks the deployment artifacts too.
verify: verify-deploy

.PHONY: docker-build
docker-build: ## Build the manager image IMG (needs a container engine; not run in CI).
	$(CONTAINER_TOOL) build -t $(IMG) .

.PHONY: docker-build-agent
docker-build-agent: ## Build the Pull mode agent's image AGENT_IMG (needs a container engine; not run in CI).
	$(CONTAINER_TOOL) build --target agent -t $(AGENT_IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image IMG.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG (needs a container engine; not run in CI).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image BUNDLE_IMG.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)
