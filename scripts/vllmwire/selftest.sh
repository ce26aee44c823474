#!/usr/bin/env bash
# Self-test of the vLLM 0.33.0 wire fakes: fake_frontend.py (vLLM's
# AsyncMPClient/DPLBAsyncMPClient side) against fake_engine.py (vLLM's
# EngineCoreProc side), 1 and 2 engines, every scenario, plus DP=2 without a
# DP coordinator. Shows the two fakes agree; each follows vLLM's source on its
# own (see their header comments). Checks: the frontend's JSON summary is ok,
# the engine log saw session_id at index 20, engines exit 0 on SIGTERM and
# 1 after ENGINE_CORE_DEAD. The frontend's --structure-only mode (any model's
# tokens) runs against the fake engine too, and, with TANDEM=path/to/tandem,
# against `tandem engine dummy --protocol vllm` (death: --device
# null:fail-after=10). Prints PASS/FAIL per case and overall; exit 0 iff all
# passed.
#
# Usage: scripts/vllmwire/selftest.sh   (PYTHON=... to pick the interpreter,
#        TANDEM=... to add the Tandem engine cases)
set -u
cd "$(dirname "$0")"
PY=${PYTHON:-../../.cache/kvevents-venv/bin/python}
[ -x "$PY" ] || PY=python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
pids=()

free_port() {
	"$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

run_case() { # engines scenario [frontend flags...]
	local n=$1 scen=$2
	shift 2
	local port name log die=() want_rc=0 ok=1 out
	port=$(free_port)
	name="engines=$n scenario=$scen${*:+ $*}"
	log="$TMP/engine-$n-$scen-$port.log"
	if [ "$scen" = death ]; then die=(--die-after-requests 1); want_rc=1; fi
	pids=()
	for ((r = 0; r < n; r++)); do
		"$PY" fake_engine.py --handshake "tcp://127.0.0.1:$port" --rank "$r" \
			--vocab 32000 --log "$log" "${die[@]}" 2>"$TMP/engine-$r.err" &
		pids+=($!)
	done
	out=$(timeout 40 "$PY" fake_frontend.py --handshake "tcp://127.0.0.1:$port" \
		--engines "$n" --scenario "$scen" --requests 64 --vocab 32000 --timeout 15 "$@")
	local frc=$?
	[ $frc -eq 0 ] || ok=0
	for i in "${!pids[@]}"; do
		kill -TERM "${pids[$i]}" 2>/dev/null
		wait "${pids[$i]}"
		local erc=$?
		if [ $erc -ne $want_rc ]; then
			ok=0
			echo "  engine $i exit $erc, want $want_rc: $(tail -n 3 "$TMP/engine-$i.err")"
		fi
	done
	if [ "$scen" = basic ] && ! grep -q '"session_id": "conv-42"' "$log"; then
		ok=0
		echo "  engine log has no ADD with session_id conv-42"
	fi
	if grep -q '"type": "INVALID"' "$log" 2>/dev/null; then
		ok=0
		echo "  engine received an invalid request type"
	fi
	if [ $ok -eq 1 ]; then
		echo "PASS $name"
	else
		echo "FAIL $name (frontend rc $frc)"
		echo "  $out"
		fails=$((fails + 1))
	fi
}

run_tandem() { # scenario: the frontend in --structure-only mode against Tandem
	local scen=$1 port out erc want_rc=0 dev=cpu
	port=$(free_port)
	if [ "$scen" = death ]; then dev=null:fail-after=10; want_rc=1; fi
	"$TANDEM" engine dummy --protocol vllm --device "$dev" --data-parallel-rpc-port "$port" \
		--threads 1 --kv-cache-memory 64M --log-level warn 2>"$TMP/tandem.err" &
	local pid=$!
	out=$(timeout 60 "$PY" fake_frontend.py --handshake "tcp://127.0.0.1:$port" --scenario "$scen" \
		--requests 64 --vocab 320 --eos 257 --timeout 30 --structure-only)
	local frc=$?
	[ "$scen" = death ] || kill -TERM $pid 2>/dev/null
	wait $pid
	erc=$?
	if [ $frc -eq 0 ] && [ $erc -eq $want_rc ]; then
		echo "PASS tandem scenario=$scen"
	else
		echo "FAIL tandem scenario=$scen (frontend rc $frc, engine rc $erc, want $want_rc)"
		echo "  $out"
		tail -n 3 "$TMP/tandem.err"
		fails=$((fails + 1))
	fi
}

start=$(date +%s)
for n in 1 2; do
	for scen in basic concurrent utility abort death; do
		run_case "$n" "$scen"
	done
done
run_case 2 basic --no-coordinator
run_case 2 abort --no-coordinator
for scen in basic concurrent utility abort death; do
	run_case 1 "$scen" --structure-only
done
if [ -n "${TANDEM:-}" ]; then
	for scen in basic concurrent utility abort death; do
		run_tandem "$scen"
	done
fi
echo "elapsed $(($(date +%s) - start))s"
if [ $fails -eq 0 ]; then
	echo PASS
	exit 0
fi
echo "FAIL ($fails cases)"
exit 1
