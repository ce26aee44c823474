#!/usr/bin/env bash
# `make soak`: builds bin/tandem and cmd/tandemsoak, then soaks
# `tandem serve --model dummy --data-parallel-size 2` with SOAK_CLIENTS concurrent
# clients for SOAK_DURATION, SIGKILLing an engine every SOAK_KILL_EVERY (0 = never).
# The report goes to .cache/soak/report.{md,json}; with SOAK_UPDATE_DOCS=1 it also
# replaces the section between <!-- soak:begin --> and <!-- soak:end --> in
# docs/reliability.md. Then the hostile phase: a raw ZeroMQ peer sends an engine core
# random messages for SOAK_HOSTILE_DURATION (default 5m; 0 skips it) while a real
# frontend's streams must all finish with every token
# (enginecore TestRandomPeerDoesNotHurtAFrontend). Last the worst-body phase: the
# heaviest body the limits allow against another client's chat on the real model, with
# the 1 s stall bound asserted (cmd/tandem TestWorstBodyIsBoundedAndFair). Exits
# non-zero when any fails.
set -euo pipefail
cd "$(dirname "$0")/.."

clients=${SOAK_CLIENTS:-1000}
duration=${SOAK_DURATION:-60s}
kill_every=${SOAK_KILL_EVERY:-20s}
max_waiting=${SOAK_MAX_WAITING:-600}
out=.cache/soak
mkdir -p "$out" bin

go build -o bin/tandem ./cmd/tandem
go build -o bin/tandemsoak ./cmd/tandemsoak

status=0
./bin/tandemsoak --tandem bin/tandem --clients "$clients" --duration "$duration" \
  --kill-engine-every "$kill_every" --max-waiting-requests "$max_waiting" \
  --markdown "$out/report.md" --json "$out/report.json" 2> >(tee "$out/soak.log" >&2) || status=$?
cat "$out/report.md"

if [[ "${SOAK_UPDATE_DOCS:-0}" == 1 ]]; then
  {
    echo "Run: \`make soak\` on $(date -u +%Y-%m-%d), $(nproc) CPUs, $(go version | awk '{print $3}'), commit $(git describe --always --dirty 2>/dev/null || echo unknown)."
    echo
    cat "$out/report.md"
  } > "$out/section.md"
  python3 - "$out/section.md" docs/reliability.md <<'PY'
import re, sys
section = open(sys.argv[1]).read()
doc = open(sys.argv[2]).read()
new, n = re.subn(r"(<!-- soak:begin -->\n).*?(<!-- soak:end -->)", lambda m: m.group(1) + section + m.group(2), doc, flags=re.S)
if n != 1:
    sys.exit("soak: docs/reliability.md lacks the soak:begin/soak:end markers")
open(sys.argv[2], "w").write(new)
PY
  echo "soak: updated docs/reliability.md"
fi
hostile=${SOAK_HOSTILE_DURATION:-5m}
if [[ "$hostile" != 0 ]]; then
  echo "== soak: hostile peer for $hostile against an engine core serving a frontend"
  TANDEM_HOSTILE_DURATION="$hostile" go test -count=1 -timeout 0 -run '^TestRandomPeerDoesNotHurtAFrontend$' -v ./enginecore/ \
    2>&1 | grep -E 'hostile|^(---|ok|FAIL|PASS)' || status=1
fi
echo "== soak: the heaviest body one client may send, against another client's chat (real default model)"
TANDEM_WORST_BODY_STRICT=1 TANDEM_MODEL="${TANDEM_MODEL:-$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf}" \
  go test -count=1 -timeout 20m -run '^TestWorstBodyIsBoundedAndFair$' -v ./cmd/tandem/ \
  2>&1 | grep -E 'worstbody|^(---|ok|FAIL|PASS)' || status=1
exit $status
