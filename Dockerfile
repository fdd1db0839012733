# The Flotilla manager image (the default target): `make docker-build IMG=...`; and the Pull
# mode agent's image (target agent): `make docker-build-agent AGENT_IMG=...`.
# The binaries are built exactly as `make build` builds bin/manager and bin/agent, statically,
# and run on distroless as the unprivileged user 65532.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Dependencies first, so that they stay cached while only the sources change.
COPY go.mod go.sum ./
RUN go mod download

COPY main.go main.go
COPY pkg/ pkg/
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/

# TARGETOS and TARGETARCH are set by `docker buildx build --platform`; a plain build targets
# the builder's platform.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -o manager . && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -o agent ./cmd/agent

# The Pull mode agent, run in member clusters (`kubectl flotilla register --image ...`).
FROM gcr.io/distroless/static:nonroot AS agent
WORKDIR /
COPY --from=builder /workspace/agent .
USER 65532:65532
ENTRYPOINT ["/agent"]

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
