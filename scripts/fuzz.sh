#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 10s).
set -euo pipefail
t=${1:-10s}
go list -f '{{.Dir}} {{.ImportPath}}' ./... | while read -r dir pkg; do
  grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | while read -r fz; do
    echo "fuzz: $pkg $fz ($t)"
    go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$t" "$pkg" >/tmp/tandem-fuzz.log 2>&1 || { cat /tmp/tandem-fuzz.log; exit 1; }
  done
done
echo "fuzz: all fuzzers passed"
