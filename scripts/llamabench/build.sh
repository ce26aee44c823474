#!/usr/bin/env bash
# Compiles scripts/llamabench/bench.c (our own code) twice, with the headers
# of the llama.cpp source bundle extracted by scripts/oracle.sh
# (.cache/llama.cpp):
#   .cache/llamabench         against llama.cpp's prebuilt CPU libraries from
#                             node-llama-cpp (scripts/oracle/node_modules);
#   .cache/llamabench-native  against llama.cpp built for this machine by
#                             scripts/llamabench/native.sh (.cache/llama-native).
# Nothing of llama.cpp is copied or committed; the binaries find the
# libraries through their rpath. Run scripts/oracle.sh first. When the
# native build is unavailable, .cache/llamabench-native.unavailable says why
# (tandembench puts it in the report) and only the prebuilt binary is built.
set -euo pipefail
cd "$(dirname "$0")/../.."
pkg=$PWD/scripts/oracle/node_modules/@node-llama-cpp/linux-x64
bins=$pkg/bins/linux-x64
src=$PWD/.cache/llama.cpp
native=$PWD/.cache/llama-native/build/bin
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
version=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkg/package.json" | head -n1)
release=$(sed -n 's/.*"release": *"\([^"]*\)".*/\1/p' "$PWD/scripts/oracle/node_modules/node-llama-cpp/llama/binariesGithubRelease.json" 2>/dev/null | head -n1)
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
flags=(-O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -I"$src/include" -I"$src/ggml/include")

# compile OUT BACKEND_DIR BUILD LIBDIR LIB... builds OUT unless it is newer
# than bench.c, this script and the first library.
compile() {
  local bin=$1 dir=$2 build=$3 libdir=$4
  shift 4
  if [ -x "$bin" ] && [ "$bin" -nt scripts/llamabench/bench.c ] && [ "$bin" -nt "$0" ] && [ "$bin" -nt "$libdir/$1" ]; then
    echo "llamabench: $bin up to date"
    return
  fi
  local libs=()
  for l in "$@"; do libs+=(-l:"$l"); done
  mkdir -p .cache
  gcc "${flags[@]}" -DLLAMABENCH_BACKEND_DIR="\"$dir\"" -DLLAMABENCH_BUILD="\"$build\"" \
    -o "$bin" scripts/llamabench/bench.c -L"$libdir" "${libs[@]}" -ldl -Wl,-rpath,"$libdir"
  echo "llamabench: built $bin ($*)"
}

compile "$out" "$bins" "node-llama-cpp $version's prebuilt CPU libraries (llama.cpp release $release, commit $commit; GGML_CPU_ALL_VARIANTS, GGML_BACKEND_DL)" \
  "$bins" "$llama" "$ggml" libggml-base.so

rm -f "$out-native.unavailable"
if [ -f "$native/libllama.so" ] && [ -f "$native/libggml.so" ]; then
  cc=$(cat .cache/llama-native/compiler 2>/dev/null || c++ --version | head -n1)
  compile "$out-native" "" "llama.cpp commit $commit built on this machine by scripts/llamabench/native.sh (GGML_NATIVE=ON, i.e. -march=native; $cc)" \
    "$native" libllama.so libggml.so libggml-base.so
  # A build for this CPU can compile and still not run on it (seen: GCC 12
  # dropped the stores to ggml's AMX tile configuration, and tilezero
  # faulted with SIGILL; native.sh now picks a compiler that runs an AMX
  # probe), so a 16-token prompt must go through before the column counts.
  model=${LLAMABENCH_SMOKE_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
  if [ -f "$model" ]; then
    rc=0
    "$out-native" --model "$model" --threads 1 --prompt-tokens 16 --gen-tokens 2 --reps 1 >"$out-native.smoke.log" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
      sig=""
      if [ "$rc" -gt 128 ]; then sig=" (signal $(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128))))"; fi
      why="llama.cpp built for this machine exits with status $rc$sig on a 16-token prompt ($out-native.smoke.log); the prebuilt libraries are llama.cpp's column here"
      rm -f "$out-native"
      echo "$why" >"$out-native.unavailable"
      echo "llamabench: WARNING: no native llama.cpp column: $why" >&2
    fi
  fi
else
  rm -f "$out-native"
  why=$(cat .cache/llama-native/unavailable 2>/dev/null || echo "no native build in $native (run scripts/llamabench/native.sh)")
  echo "$why" >"$out-native.unavailable"
  echo "llamabench: WARNING: no native llama.cpp column: $why" >&2
fi
