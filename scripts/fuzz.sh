#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 5s).
set -euo pipefail
t=${1:-5s}
targets=$(go list -f '{{.Dir}} {{.ImportPath}}' ./... | while read -r dir pkg; do
  { grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null || true; } |
    sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | while read -r fz; do echo "$pkg $fz"; done
done)
n=0
while read -r pkg fz; do
  [ -n "$pkg" ] || continue
  echo "fuzz: $pkg $fz ($t)"
  if ! go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$t" "$pkg" >/tmp/tandem-fuzz.log 2>&1; then
    cat /tmp/tandem-fuzz.log
    exit 1
  fi
  n=$((n + 1))
done <<<"$targets"
echo "fuzz: all $n fuzzers passed"
