#!/usr/bin/env bash
# MaskBench through llama.cpp's grammar engine next to LLGuidance, on the
# same cases and the same token ids, in one run: TestMaskBench measures
# LLGuidance on every Nth dev case (TANDEM_MASKBENCH_EVERY, default 16:
# the cases make test runs) and TestMaskBenchExport writes those cases'
# token ids; run.py forces the same ids through llama.cpp's grammar
# sampler (grammar.c) and writes both columns to the file named by $1
# (default docs/benchmarks/maskbench-llamacpp.json). Each step masks all
# 49,152 tokens through llama.cpp's sampler (MaskBench's full mask), so
# the every-16th run takes about 8 minutes on 2 cores. Run
# scripts/oracle.sh, scripts/model.sh and scripts/llguidance.sh first
# (make bench does).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/benchmarks/maskbench-llamacpp.json}
export GOEXPERIMENT=simd GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
export TANDEM_MODEL=${TANDEM_MODEL:-$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf}
export TANDEM_MASKBENCH_EVERY=${TANDEM_MASKBENCH_EVERY:-16}
./scripts/maskbench_llama/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== MaskBench, LLGuidance (every $TANDEM_MASKBENCH_EVERY th dev case)"
TANDEM_MASKBENCH_JSON=$tmp/llguidance.json TANDEM_MASKBENCH_EXPORT=$tmp/cases.jsonl \
  ${GO:-go} test -count=1 -timeout 60m -run 'TestMaskBench$|TestMaskBenchExport$' -v ./enginecore/structured/
echo "== MaskBench, llama.cpp grammar (the same cases and token ids)"
python3 scripts/maskbench_llama/run.py --cases "$tmp/cases.jsonl" --llguidance "$tmp/llguidance.json" \
  --llama-cpp .cache/llama.cpp --bin .cache/maskbench-grammar --model "$TANDEM_MODEL" --out "$out"
echo "maskbench-llamacpp: wrote $out"
