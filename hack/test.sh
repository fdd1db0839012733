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
jobs=${TEST_BUILD_JOBS:-$(nproc)}
bin=$(mktemp -d "${TMPDIR:-/tmp}/flotilla-test-bin-XXXXXX")
trap 'rm -rf "$bin"' EXIT

# Import path and directory of every package that has tests, in go test's order.
list=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@") || exit 1

# The binaries that tests run as processes of their own, built once here for every package
# (test/e2e/framework.PrebuiltEnv), as make build builds them.
tools=(manager=. agent=./cmd/agent kubectl-flotilla=./cmd/kubectl-flotilla kubectl=./test/tools/kubectl)
mkdir -p "$bin/tools"
export FLOTILLA_TEST_BINS="$bin/tools"

echo "building $(wc -l <<<"$list") test binaries and ${#tools[@]} tools ($jobs at a time)"
# go test -c writes nothing for a package without tests; a package whose tests do not compile
# fails here, with the compiler's message.
if ! { printf '%s\n' "${tools[@]}"; cut -d' ' -f1 <<<"$list"; } | xargs -P "$jobs" -I{} sh -c '
	case "$2" in
	*=*) CGO_ENABLED=0 go build -o "$1/tools/${2%%=*}" "${2#*=}" || exit 255 ;;
	*) go test -c -o "$1/$(printf %s "$2" | tr / _).test" "$2" || exit 255 ;;
	esac' _ "$bin" {}; then
	echo "FAIL	(building the test binaries)"
	exit 1
fi

failed=0
while read -r pkg dir; do
	exe="$bin/$(printf %s "$pkg" | tr / _).test"
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
