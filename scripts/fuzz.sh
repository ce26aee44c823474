#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 5s).
#
# Go 1.26's fuzz coordinator can end a duration-bound run with a bare
# "context deadline exceeded" and no failing input (golang/go#75804, fixed in
# Go 1.27). Such a run is retried; a real finding (a written reproducer, a
# panic, a t.Error) fails at once, and a target that flakes on every try must
# still pass a deterministic replay of its corpus.
set -euo pipefail
t=${1:-5s}
log=$(mktemp /tmp/tandem-fuzz.XXXXXX)
trap 'rm -f "$log"' EXIT
targets=$(go list -f '{{.Dir}} {{.ImportPath}}' ./... | while read -r dir pkg; do
  { grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null || true; } |
    sed -E 's/^func (Fuzz[A-Za-z0-9_]+).*/\1/' | while read -r fz; do echo "$pkg $fz"; done
done)

# deadline_flake reports whether the log shows only the coordinator's
# shutdown race: the deadline error and nothing that marks a real finding.
deadline_flake() {
  grep -q 'context deadline exceeded' "$1" &&
    ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

n=0
flakes=0
while read -r pkg fz; do
  [ -n "$pkg" ] || continue
  echo "fuzz: $pkg $fz ($t)"
  ok=0
  for try in 1 2 3; do
    if go test -run '^$' -fuzz "^${fz}\$" -fuzztime "$t" "$pkg" >"$log" 2>&1; then
      ok=1
      break
    fi
    if ! deadline_flake "$log"; then
      cat "$log"
      exit 1
    fi
    echo "fuzz: $fz hit the Go fuzz deadline race (golang/go#75804), try $try"
    flakes=$((flakes + 1))
  done
  if [ "$ok" = 0 ]; then
    echo "fuzz: $fz: replaying its corpus deterministically"
    if ! go test -run "^${fz}\$" "$pkg" >"$log" 2>&1; then
      cat "$log"
      exit 1
    fi
  fi
  n=$((n + 1))
done <<<"$targets"
echo "fuzz: all $n fuzzers passed ($flakes deadline-race retries)"
