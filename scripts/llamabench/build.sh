#!/usr/bin/env bash
# Compiles scripts/llamabench/bench.c (our own code) against llama.cpp's
# prebuilt CPU libraries from node-llama-cpp (scripts/oracle/node_modules)
# and the headers of the llama.cpp source bundle extracted by
# scripts/oracle.sh (.cache/llama.cpp), into .cache/llamabench. Nothing of
# llama.cpp is copied or committed; the binary finds the libraries through
# its rpath. Run scripts/oracle.sh first.
set -euo pipefail
cd "$(dirname "$0")/../.."
bins=$PWD/scripts/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
src=$PWD/.cache/llama.cpp
out=.cache/llamabench
if [ ! -d "$bins" ] || [ ! -f "$src/include/llama.h" ]; then
  echo "llamabench: llama.cpp libraries or headers missing ($bins, $src/include); run scripts/oracle.sh" >&2
  exit 1
fi
# The library names carry node-llama-cpp's release (libllama.v0.4.0.so, ...).
llama=$(cd "$bins" && ls libllama.v*.so 2>/dev/null | head -n1)
ggml=$(cd "$bins" && ls libggml.v*.so 2>/dev/null | head -n1)
if [ -z "$llama" ] || [ -z "$ggml" ] || [ ! -f "$bins/libggml-base.so" ]; then
  echo "llamabench: libllama.v*.so, libggml.v*.so or libggml-base.so not found in $bins" >&2
  exit 1
fi
if [ -x "$out" ] && [ "$out" -nt scripts/llamabench/bench.c ] && [ "$out" -nt "$bins/$llama" ]; then
  echo "llamabench: $out up to date"
  exit 0
fi
mkdir -p .cache
gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
  -DLLAMABENCH_BACKEND_DIR="\"$bins\"" \
  -I"$src/include" -I"$src/ggml/include" \
  -o "$out" scripts/llamabench/bench.c \
  -L"$bins" -l:"$llama" -l:"$ggml" -l:libggml-base.so -Wl,-rpath,"$bins"
echo "llamabench: built $out ($llama, $ggml)"
