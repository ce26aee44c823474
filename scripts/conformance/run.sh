#!/usr/bin/env bash
# `make conformance`: vLLM's and llama.cpp's own HTTP server tests, run with
# pytest against `tandem serve` (bin/tandem, default model) through the shims
# in scripts/conformance. One pytest per test file, each under a time limit;
# prints pass / fail / out of scope / skipped per file and a summary, and
# exits non-zero if a test failed that out_of_scope.txt does not list.
#
#   scripts/conformance/run.sh [vllm|llamacpp|vllm-engines] [FILE-GLOB]   (default: all three, every file)
# vllm-engines is ours: Tandem against real vLLM (PyPI's CPU build) over
# vLLM's engine-core protocol, both ways (scripts/conformance/vllmengines).
# Env: CONFORMANCE_FILE_TIMEOUT (s, default 1200), CONFORMANCE_TEST_TIMEOUT (s, default 300),
#      TANDEM_MODEL, TANDEM_BIN, TANDEM_CONFORMANCE_THREADS.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
suites=${1:-vllm llamacpp vllm-engines}
glob=${2:-*}
./scripts/conformance/setup.sh || exit 1
export TANDEM_BIN=${TANDEM_BIN:-$root/bin/tandem}
export TANDEM_MODEL=${TANDEM_MODEL:-$root/models/SmolLM2-135M-Instruct.Q4_1.gguf}
export TANDEM_CONFORMANCE_DIR=$root/scripts/conformance
export TANDEM_LLAMA_CPP_SRC=$root/.cache/llama.cpp
export HF_HUB_OFFLINE=1 # the tests' own Hugging Face downloads fail at once, not after retries
for f in "$TANDEM_BIN" "$TANDEM_MODEL"; do
  [ -e "$f" ] || { echo "conformance: $f missing (make build model)" >&2; exit 1; }
done
py=$root/.cache/conformance-venv/bin/python
results=$root/.cache/conformance/results
file_timeout=${CONFORMANCE_FILE_TIMEOUT:-1200}
test_timeout=${CONFORMANCE_TEST_TIMEOUT:-300}
pids=$root/.cache/conformance/pids/$$ # this run's own: runs side by side must not end each other's servers
export TANDEM_CONFORMANCE_PIDS=$pids
mkdir -p "$results" "$pids"

run_file() { # suite rundir relpath (out_of_scope.txt patterns are relative to $oos_root)
  local suite=$1 dir=$2 rel=$3 out="$results/$1/${3%.py}"
  mkdir -p "$(dirname "$out")"
  rm -f "$out.xml" "$out.json" "$out.log" "$out.oos"
  local start=$SECONDS reason
  reason=$("$py" "$root/scripts/conformance/plugin.py" "$suite" "$(realpath --relative-to="$oos_root" "$dir/$rel")")
  if [ -n "$reason" ]; then # not even imported (some import what is not there: torch, a model from the HF hub)
    echo "$reason" >"$out.oos"
    printf 'conformance: %-8s %-64s  out of scope: %s\n' "$suite" "$rel" "$reason"
    return
  fi
  (cd "$dir" && TANDEM_CONFORMANCE_SUITE=$suite TANDEM_CONFORMANCE_ROOT=$oos_root \
    TANDEM_CONFORMANCE_FILE="$(realpath --relative-to="$oos_root" "$dir/$rel")" \
    PYTHONPATH=$root/scripts/conformance:${EXTRA_PYTHONPATH:-} \
    timeout -k 30 "$file_timeout" "${suite_py:-$py}" -m pytest -p plugin -p no:cacheprovider -rA --timeout "$test_timeout" \
      --junitxml="$out.xml" -o junit_family=xunit1 "$rel" >"$out.log" 2>&1)
  local rc=$?
  local pid
  for pid in $(ls "$pids" 2>/dev/null); do # tandem serves a killed pytest left
    kill -0 "$pid" 2>/dev/null && kill -TERM -- "-$pid" 2>/dev/null && sleep 2 && kill -KILL -- "-$pid" 2>/dev/null
    rm -f "$pids/$pid"
  done
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "{\"timed_out\": true, \"timeout\": $file_timeout}" >"$out.json"
  fi
  local line
  line=$(grep -E '^=+ .*(passed|failed|skipped|error|deselected|no tests ran).* in [0-9.]+s' "$out.log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
  printf 'conformance: %-8s %-64s %4ss  %s\n' "$suite" "$rel" "$((SECONDS - start))" "${line:-rc=$rc, see $out.log}"
}

for suite in $suites; do
  suite_py=
  case $suite in
  vllm)
    dir=$root/.cache/conformance/vllm-run
    oos_root=$dir/tests/entrypoints/openai
    export TANDEM_CONFORMANCE_HTTP_ONLY=1 EXTRA_PYTHONPATH=$root/scripts/conformance/vllm/stub
    # The HTTP test files: those that start a server or take its client.
    files=$(cd "$dir" && grep -rlE 'RemoteOpenAIServer|def test_\w*\([^)]*\b(client|server)\b' --include='test_*.py' tests/entrypoints/openai | sort)
    ;;
  llamacpp)
    dir=$root/.cache/conformance/llamacpp-run
    oos_root=$dir/unit
    export TANDEM_CONFORMANCE_HTTP_ONLY=0 EXTRA_PYTHONPATH=
    files=$(cd "$dir" && ls unit/test_*.py)
    ;;
  vllm-engines)
    dir=$root/scripts/conformance/vllmengines
    oos_root=$dir
    export TANDEM_CONFORMANCE_HTTP_ONLY=0 EXTRA_PYTHONPATH=
    ./scripts/conformance/vllmengines/setup.sh
    # Without real vLLM the file runs under the conformance venv, where it
    # skips itself with the reason setup.sh wrote.
    suite_py=$root/.cache/vllm-venv/bin/python
    [ -x "$suite_py" ] && [ ! -f "$root/.cache/vllm-venv.unavailable" ] || suite_py=$py
    files=test_engines.py
    ;;
  *) echo "conformance: unknown suite $suite (vllm, llamacpp, vllm-engines)" >&2; exit 2 ;;
  esac
  [ "$glob" = "*" ] && rm -rf "${results:?}/$suite" # a run of some files keeps the others' results
  echo "conformance: $suite: $(echo "$files" | wc -w) test files"
  for rel in $files; do
    # shellcheck disable=SC2053
    [[ $rel == $glob || $(basename "$rel") == $glob ]] || continue
    run_file "$suite" "$dir" "$rel"
  done
done
"$py" scripts/conformance/report.py "$results"
