#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 20s).
set -euo pipefail
t=${1:-20s}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}' | sed 's/(.*//'); do
    echo "== $pkg $f"
    go test "$pkg" -run '^$' -fuzz "^$f\$" -fuzztime "$t"
  done
done
