#!/usr/bin/env bash
# govulncheck for Tandem, offline-friendly: vuln.go.dev is not always
# reachable, but the Go module proxy serves golang.org/x/vulndb, whose
# data/osv holds every Go advisory. We build a v1 database from it with
# vulndb's own indexdb and scan the module (GOEXPERIMENT=simd and -tags cuda
# both, so every build path is covered).
#
#   VULNDB_VERSION=latest (default) or a pseudo-version to pin the data.
#   VULNCHECK_DB=https://vuln.go.dev to use the live database instead.
set -euo pipefail
cd "$(dirname "$0")/.."
vuln=golang.org/x/vuln/cmd/govulncheck@v1.9.0
ver=${VULNDB_VERSION:-latest}
cache=.cache/vulndb
allow=scripts/vulncheck/allow.txt

db=${VULNCHECK_DB:-}
if [ -z "$db" ]; then
  mkdir -p "$cache"
  json=$(cd "$cache" && go mod download -json "golang.org/x/vulndb@$ver")
  dir=$(sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p' <<<"$json")
  rev=$(sed -nE 's/^\s*"Version": "(.*)",?$/\1/p' <<<"$json")
  [ -d "$dir/data/osv" ] || { echo "vulncheck: no data/osv in golang.org/x/vulndb@$ver" >&2; exit 1; }
  out="$cache/$rev"
  if [ ! -f "$out/index/db.json" ]; then
    echo "vulncheck: indexing $(ls "$dir/data/osv" | wc -l) advisories from golang.org/x/vulndb@$rev"
    rm -rf "$out"
    go run "golang.org/x/vulndb/cmd/indexdb@$rev" -vulns "$dir/data/osv" -out "$out"
  fi
  db="file://$PWD/$out"
fi

found=$(mktemp)
trap 'rm -f "$found"' EXIT
for tags in "" cuda; do
  go run "$vuln" -db "$db" -tags "$tags" -format json ./... |
    python3 -c '
import json, sys
text, dec, i = sys.stdin.read(), json.JSONDecoder(), 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    f = obj.get("finding")
    # Only symbol-level findings (a call path from our code) count; module- and
    # package-level ones mean "required/imported but not called".
    if f and f["trace"][0].get("function"):
        print(f["osv"], f.get("fixed_version", "none"), f["trace"][0].get("module", ""))
' >>"$found"
done
sort -u -o "$found" "$found"

status=0
while read -r id fix mod; do
  if grep -qE "^$id " "$allow"; then
    echo "vulncheck: $id ($mod) allowed: $(grep -E "^$id " "$allow" | cut -d' ' -f2-)"
  else
    echo "vulncheck: $id in $mod is reachable from Tandem's code (fixed in: $fix)" >&2
    status=1
  fi
done < <(sort -u -k1,1 "$found")
while read -r id _; do
  case $id in ''|'#'*) continue ;; esac
  if ! grep -q "^$id " "$found"; then
    echo "vulncheck: $id is in $allow but no longer found; remove it" >&2
    status=1
  fi
done <"$allow"
[ "$status" = 0 ] && echo "vulncheck: no unaccepted vulnerabilities (database $db)"
exit "$status"
