#!/usr/bin/env bash
# Compiles scripts/maskbench_llama/grammar.c (our own code) against
# llama.cpp's prebuilt CPU libraries from node-llama-cpp
# (scripts/oracle/node_modules) and the headers of the llama.cpp source
# bundle (.cache/llama.cpp), into .cache/maskbench-grammar, as
# scripts/llamabench/build.sh does. Nothing of llama.cpp is copied or
# committed; the binary finds the libraries through its rpath. Run
# scripts/oracle.sh first.
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=$PWD/scripts/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
src=$PWD/.cache/llama.cpp
out=.cache/maskbench-grammar
if [ ! -d "$bins" ] || [ ! -f "$src/include/llama.h" ]; then
  echo "maskbench-grammar: llama.cpp libraries or headers missing ($bins, $src/include); run scripts/oracle.sh" >&2
  exit 1
fi
llama=$(cd "$bins" && ls libllama.v*.so 2>/dev/null | head -n1)
ggml=$(cd "$bins" && ls libggml.v*.so 2>/dev/null | head -n1)
if [ -z "$llama" ] || [ -z "$ggml" ] || [ ! -f "$bins/libggml-base.so" ]; then
  echo "maskbench-grammar: libllama.v*.so, libggml.v*.so or libggml-base.so not found in $bins" >&2
  exit 1
fi
if [ -x "$out" ] && [ "$out" -nt scripts/maskbench_llama/grammar.c ] && [ "$out" -nt "$bins/$llama" ]; then
  exit 0
fi
mkdir -p .cache
gcc -O2 -std=c11 -Wall -Wextra -Werror \
  -DMASKBENCH_BACKEND_DIR="\"$bins\"" \
  -I"$src/include" -I"$src/ggml/include" \
  -o "$out" scripts/maskbench_llama/grammar.c \
  -L"$bins" -l:"$llama" -l:"$ggml" -l:libggml-base.so -lm -Wl,-rpath,"$bins"
echo "maskbench-grammar: built $out ($llama, $ggml)"
