#!/usr/bin/env bash
# Builds llama.cpp for this machine, the second llama.cpp column of
# `make bench`: the source bundle node-llama-cpp ships (.cache/llama.cpp,
# extracted by scripts/oracle.sh; the same release as its prebuilt
# libraries) compiled by CMake with the options node-llama-cpp's `source
# build` passes for a build on the host (GGML_NATIVE=ON, i.e.
# -march=native; no curl, no HTTP, no ccache; OpenMP left at llama.cpp's
# default), into .cache/llama-native. Offline; nothing is committed.
#
# Why not `npx node-llama-cpp source build` itself: it also compiles the
# Node addon, for which cmake-js downloads Node's headers from nodejs.org,
# and it writes into node_modules. The libraries it would build are these.
#
# Cached: rebuilt only when the source, the options, the compiler or the
# CPU's flags change (-march=native depends on the CPU). If it cannot build
# (no cmake or C++ compiler, or the build fails), it writes the reason to
# .cache/llama-native/unavailable and exits 0; build.sh and tandembench
# then measure the prebuilt column only and say so in the report.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD/.cache/llama.cpp
out=$PWD/.cache/llama-native
build=$out/build
why=$out/unavailable
mkdir -p "$out"

unavailable() {
  echo "llama-native: not built: $1" >&2
  echo "$1" >"$why"
  exit 0
}

if [ ! -f "$src/CMakeLists.txt" ]; then
  unavailable "llama.cpp source $src missing (run scripts/oracle.sh)"
fi
for tool in cmake c++ cc; do
  command -v "$tool" >/dev/null 2>&1 || unavailable "$tool not found"
done
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi

# The compiler. On a CPU with AMX, -march=native compiles ggml's AMX
# kernels, and GCC 12 (Debian 12's) drops the stores that fill their tile
# configuration before ldtilecfg, so the first tilezero faults with SIGILL.
# A probe shaped like ggml's ggml_tile_config_init is compiled and run with
# each compiler found; the first that runs it builds llama.cpp. If none
# does, AMX is left out of the build (-mno-amx-*) and the report says so.
cxx=c++
cc=cc
amx_flags=()
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
  probe_dir=$(mktemp -d)
  trap 'rm -rf "$probe_dir"' EXIT
  cat >"$probe_dir/probe.cpp" <<'PROBE'
#include <immintrin.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
struct cfg { uint8_t palette = 0, start = 0, reserved[14] = {0}; uint16_t colsb[16] = {0}; uint8_t rows[16] = {0}; };
__attribute__((noinline)) static void load() {
  alignas(64) cfg c = {};
  c.palette = 1;
  for (int i = 0; i < 8; i++) { c.rows[i] = 16; c.colsb[i] = 64; }
  _tile_loadconfig(&c);
}
int main() {
  if (syscall(SYS_arch_prctl, 0x1023, 18)) return 2; // ARCH_REQ_XCOMP_PERM, XTILEDATA
  load();
  _tile_zero(4);
  _tile_release();
  return 0;
}
PROBE
  found=""
  for cand in c++ clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -O2 -march=native -std=c++17 -o "$probe_dir/probe" "$probe_dir/probe.cpp" >/dev/null 2>&1 &&
      ("$probe_dir/probe"; exit $?) >/dev/null 2>&1; then # a subshell that waits: bash says "Illegal instruction" into /dev/null
      found=$cand
      break
    fi
    echo "llama-native: $cand miscompiles or cannot run an AMX tile configuration; trying the next compiler" >&2
  done
  if [ -n "$found" ]; then
    cxx=$found
    cc=${found/clang++/clang}
    [ "$cc" = c++ ] && cc=cc
  else
    amx_flags=(-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
    echo "llama-native: no compiler here runs an AMX tile configuration; building without AMX" >&2
  fi
fi
command -v "$cc" >/dev/null 2>&1 || cc=cc

options=(
  -DCMAKE_BUILD_TYPE=Release
  -DBUILD_SHARED_LIBS=ON
  -DGGML_NATIVE=ON
  -DGGML_BUILD_NUMBER=1
  -DGGML_METAL=OFF
  -DGGML_CCACHE=OFF
  -DLLAMA_CURL=OFF
  -DLLAMA_HTTPLIB=OFF
  -DLLAMA_BUILD_BORINGSSL=OFF
  -DLLAMA_OPENSSL=OFF
  -DLLAMA_BUILD_COMMON=OFF
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_TOOLS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=OFF
  -DLLAMA_BUILD_APP=OFF
  -DCMAKE_C_COMPILER="$cc"
  -DCMAKE_CXX_COMPILER="$cxx"
)
if [ ${#amx_flags[@]} -gt 0 ]; then
  options+=(-DCMAKE_C_FLAGS="${amx_flags[*]}" -DCMAKE_CXX_FLAGS="${amx_flags[*]}")
fi
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
cpuflags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
key=$(printf '%s\n' "$commit" "${options[*]}" "$("$cxx" --version | head -n1)" "$cpuflags" | sha256sum | cut -c1-16)
if [ -f "$build/bin/libllama.so" ] && [ "$(cat "$out/key" 2>/dev/null)" = "$key" ]; then
  echo "llama-native: $build/bin up to date"
  exit 0
fi

rm -f "$why" "$out/key"
log=$out/build.log
echo "llama-native: building llama.cpp ${commit:0:12} with GGML_NATIVE=ON ($cxx${amx_flags[*]:+, ${amx_flags[*]}}) into $build (once; 5–15 minutes on 2 cores, log $log)"
if ! cmake -S "$src" -B "$build" "${generator[@]}" "${options[@]}" >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  unavailable "cmake configure failed (see $log)"
fi
jobs=$(nproc 2>/dev/null || echo 2)
# nice: other work on this machine (benchmarks) keeps its cores first.
nice -n 10 cmake --build "$build" --target llama -j "$jobs" >>"$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 20
  step=$(grep -oE '^\[ *[0-9]+(/[0-9]+|%)\]' "$log" | tail -n1 || true)
  echo "llama-native: building ${step:-…}"
done
rc=0
wait "$pid" || rc=$?
if [ "$rc" != 0 ] || [ ! -f "$build/bin/libllama.so" ]; then
  tail -n 20 "$log" >&2
  unavailable "build failed with status $rc (see $log)"
fi
echo "$key" >"$out/key"
echo "$("$cxx" --version | head -n1)${amx_flags[*]:+ ${amx_flags[*]}}" >"$out/compiler"
echo "llama-native: built $(cd "$build/bin" && ls lib*.so | tr '\n' ' ')"
