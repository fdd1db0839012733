#!/usr/bin/env bash
# make test: every package's tests, one package at a time (on 2 cores, several fleets at once
# starve each other's controllers), with every test binary built and linked in parallel first.
#
# Why not `go test -p 1 ./...`: -p 1 also serialises the link of each of the ~90 test binaries
# (1-4 s each, the controllers' with all of client-go) between two packages' runs, and nothing
# caches a linked test binary, so a warm run spent minutes linking on the critical path. Here
# the links run side by side before the first test, and the tests then run back to back as
# before, each in its package directory with -test.timeout, as go test runs them; the output
# is go test's: "ok" and the time per package, the whole output of a package that fails.
# Vet, which go test would run on the way, is make verify's (go vet ./... covers test files).
#
# Usage: hack/test.sh [timeout [packages...]]  (default 40m per package, as go test -timeout;
# default ./...); TEST_ARGS are
# passed to every test binary (e.g. TEST_ARGS='-test.run=^$' times the build alone).
set -uo pipefail
cd "$(dirname "$0")/.."

timeout=${1:-40m}
shift || true
[ $# -gt 0 ] || set -- ./...
bin=$(mktemp -d "${TMPDIR:-/tmp}/flotilla-test-bin-XXXXXX")
trap 'rm -rf "$bin"' EXIT

# Import path and directory of every package that has tests, in go test's order.
list=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@") || exit 1

# The binaries that tests run as processes of their own, built once here for every package
# (test/e2e/framework.PrebuiltEnv), as make build builds them, beside the test binaries.
export FLOTILLA_TEST_BINS="$bin/tools"
mkdir -p "$FLOTILLA_TEST_BINS"
(
	export CGO_ENABLED=0
	go build -o "$FLOTILLA_TEST_BINS/manager" . &&
		go build -o "$FLOTILLA_TEST_BINS/" ./cmd/agent ./cmd/kubectl-flotilla ./test/tools/kubectl
) &
tools=$!

# go test -c -o DIR/ names each binary after the last element of the import path, so packages
# whose last elements clash go to different batches: batch N holds each name's Nth package.
# A batch is one go command (parallel inside); one per package would load the module's
# package graph ~90 times.
declare -A seen
declare -a batches exes
while read -r pkg dir; do
	elem=${pkg##*/}
	n=${seen[$elem]:-0}
	seen[$elem]=$((n + 1))
	batches[n]+=" $pkg"
	exes+=("$bin/b$n/$elem.test")
done <<<"$list"

echo "building $(wc -l <<<"$list") test binaries in ${#batches[@]} batches, and the tools"
build_failed=0
for n in "${!batches[@]}"; do
	# shellcheck disable=SC2086 # the batch is a list of import paths
	go test -c -o "$bin/b$n/" ${batches[n]} || build_failed=1
done
wait "$tools" || build_failed=1
if [ "$build_failed" -ne 0 ]; then
	echo "FAIL	(building the test binaries or the tools)"
	exit 1
fi

failed=0
i=0
while read -r pkg dir; do
	exe=${exes[i]}
	i=$((i + 1))
	out="$bin/out"
	start=$(date +%s.%N)
	(cd "$dir" && "$exe" -test.paniconexit0 -test.timeout="$timeout" ${TEST_ARGS:-}) >"$out" 2>&1
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }')
	if [ "$rc" -eq 0 ]; then
		printf 'ok  \t%s\t%ss\n' "$pkg" "$secs"
	else
		cat "$out"
		printf 'FAIL\t%s\t%ss\n' "$pkg" "$secs"
		failed=1
	fi
done <<<"$list"
exit "$failed"
