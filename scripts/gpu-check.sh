#!/usr/bin/env bash
# The GPU check (issue 7): one prepared run on a machine with an NVIDIA GPU
# and no network, in under 8 minutes. Two halves:
#
#   scripts/gpu-check.sh prepare   on a development machine (Go, no GPU): builds
#                                  .cache/devbin/{cuda.test,gpucheck} and a cut-down
#                                  copy of the default model that fits the transfer
#                                  limit, and prints the device call to make.
#   scripts/gpu-check.sh [run]     on the GPU machine (no Go needed; `make gpu-check`):
#                                  probe, nvcc build of the kernels, kernel and model
#                                  tests against the CPU reference, benchmarks.
#   scripts/gpu-check.sh locate    where libcuda.so.1 and cuBLASLt are (the probe's
#                                  search, alone).
#   scripts/gpu-check.sh dry-run   run's steps on a machine without a GPU: the tests
#                                  on the emulator, tandem serve on CPU engines, no
#                                  benchmarks; make test runs it (TestGPUCheckDryRun)
#                                  so that the script cannot rot.
#
# With the device tool: run `scripts/gpu-check.sh prepare` here, then
#   run(command="bash scripts/gpu-check.sh", carry=[".cache/devbin"], timeout_s=540)
# and give the machine back. Results land in $OUT: log.txt, tests.txt,
# serve.txt, serve.log, ptxas.txt, sanitizer.txt, bench.json, summary.md,
# verdict.txt.
# See docs/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/.."
devbin=.cache/devbin

prepare() {
  set -e
  mkdir -p "$devbin"
  rm -rf "$devbin"/*.gguf "$devbin"/*.gz "$devbin/build" "$devbin/cuda.test" "$devbin/gpucheck"
  local build=$devbin/build
  mkdir -p "$build/lib"
  echo "gpu-check: building the test and bench binaries and tandem (-tags cuda)"
  go test -c -tags cuda -ldflags='-s -w' -o "$build/cuda.test" ./gpu/cuda
  go build -tags cuda -ldflags='-s -w' -o "$build/gpucheck" ./gpu/cuda/cmd/gpucheck
  # tandem finds the shared libraries it links (libzmq and its chain:
  # libsodium, libpgm, libnorm, Kerberos, libstdc++) in lib/ next to it
  # (DT_RPATH, which also serves their own dependencies): the device has
  # a glibc, and no libzmq, and no apt.
  go build -tags cuda -ldflags='-s -w -extldflags=-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib' -o "$build/tandem" ./cmd/tandem
  ldd "$build/tandem" | awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' |
    xargs -r cp -L -t "$build/lib"
  tar czf "$devbin/lib.tar.gz" -C "$build" lib
  local f
  for f in cuda.test gpucheck tandem; do gzip -9 -c "$build/$f" >"$devbin/$f.gz"; done
  # What travels: tracked and untracked-not-ignored files, plus what is carried,
  # 64 MiB in all; keep 3 MiB of margin.
  local tree bins budget model=models/SmolLM2-135M-Instruct.Q4_1.gguf
  tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | { xargs -0 stat -c %s 2>/dev/null || true; } | awk '{s+=$1} END {print s+0}')
  bins=$(stat -c %s "$devbin"/*.gz | awk '{s+=$1} END {print s}')
  budget=$(( (61 << 20) - tree - bins ))
  echo "gpu-check: working tree $((tree >> 20)) MiB, binaries and libraries (gzip) $((bins >> 20)) MiB, $((budget >> 20)) MiB left for the model"
  if [ ! -f "$model" ]; then
    echo "gpu-check: $model missing (make model): the device runs no default-model test"
    rm -rf "$build"
    return 0
  fi
  # The vocabulary stays (tandem serve's frontend reads the tokenizer from
  # it); token_embd goes to Q4_0, half its Q8_0 bytes, so more layers fit
  # (the CPU reference reads the same file).
  "$build/gpucheck" shrink -keep-vocab -embed-q4 -layers 1 "$model" "$build/l1.gguf"
  "$build/gpucheck" shrink -keep-vocab -embed-q4 -layers 2 "$model" "$build/l2.gguf"
  local s1 s2 n
  s1=$(stat -c %s "$build/l1.gguf"); s2=$(stat -c %s "$build/l2.gguf")
  if [ "$budget" -lt "$s1" ]; then
    echo "gpu-check: not even one layer of the default model fits ($((s1 >> 20)) MiB): the device runs no default-model test."
    echo "gpu-check: (a large tracked file? git ls-files | xargs du -h | sort -h | tail)"
    rm -rf "$build"
    return 0
  fi
  n=$(( (budget - s1) / (s2 - s1) + 1 ))
  n=$(( n > 30 ? 30 : n ))
  "$build/gpucheck" shrink -keep-vocab -embed-q4 -layers "$n" "$model" "$devbin/smollm2-${n}L.gguf"
  rm -rf "$build"
  echo "gpu-check: $devbin/smollm2-${n}L.gguf: the default model's first $n of 30 layers"
  du -sh "$devbin"
  echo 'gpu-check: now run(command="bash scripts/gpu-check.sh", carry=[".cache/devbin"], timeout_s=540)'
}

# unpack BIN: the carried binaries, gunzipped into BIN, and lib/ beside them.
unpack() {
  local f
  mkdir -p "$1"
  for f in "$devbin"/*.gz; do
    [ -e "$f" ] || continue
    gunzip -c "$f" >"$1/$(basename "$f" .gz)" && chmod +x "$1/$(basename "$f" .gz)"
  done
  [ -f "$devbin/lib.tar.gz" ] && tar xzf "$devbin/lib.tar.gz" -C "$1"
}

# http_post URL JSON: the response body; fails on a non-2xx status.
http_post() {
  if command -v curl >/dev/null; then
    curl -sf -m 120 -H 'Content-Type: application/json' -d "$2" "$1"
  else
    python3 -c 'import sys, urllib.request
r = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(r, timeout=120).read().decode())' "$1" "$2"
  fi
}

# serve_check BIN MODEL: tandem gpus, then tandem serve MODEL as a user
# starts it: its engine core on the GPU NVML finds (cuda:0), the KV cache
# sized from the device's free memory by --gpu-memory-utilization (both
# read from its log), a chat completion and an embedding through the
# frontend, then a clean stop. With GPU_CHECK_DRY_RUN the engines are CPU
# ones (no GPU there) and the log is not checked for them.
serve_check() {
  local bin=$1 model=$2 port=${GPU_CHECK_PORT:-18431} pid i body up log=$OUT/serve.log
  LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin/tandem" gpus || return 1
  LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin/tandem" serve --model "$model" --port "$port" \
    --max-model-len 1024 --gpu-memory-utilization 0.5 --threads 2 >"$log" 2>&1 &
  pid=$!
  for i in $(seq 1 90); do
    up=$( (http_get "http://127.0.0.1:$port/health" >/dev/null 2>&1 && echo y) || true)
    [ "$up" = y ] && break
    kill -0 "$pid" 2>/dev/null || { echo "tandem serve exited:"; tail -20 "$log"; return 1; }
    sleep 1
  done
  grep -E 'starting|on GPU|device memory|KV cache' "$log" | head -8
  local rc=0
  if [ -z "${GPU_CHECK_DRY_RUN:-}" ] && ! { grep -q 'msg="engine on GPU".*device=cuda:0' "$log" && grep -q 'KV cache budget from device memory' "$log"; }; then
    echo "tandem serve did not put its engine on cuda:0 with a KV cache sized from the device's memory"
    rc=1
  fi
  body=$(http_post "http://127.0.0.1:$port/v1/chat/completions" \
    '{"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16, "temperature": 0}') &&
    echo "chat: $body" && echo "$body" | grep -q '"content"' || rc=1
  body=$(http_post "http://127.0.0.1:$port/v1/embeddings" '{"input": ["the sea", "the sky"]}') &&
    echo "embeddings: ${body:0:160}…" && echo "$body" | grep -q '"embedding"' || rc=1
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  tail -3 "$log"
  return $rc
}

# http_get URL: the body; fails on a non-2xx status.
http_get() {
  if command -v curl >/dev/null; then
    curl -sf -m 10 "$1"
  else
    python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"
  fi
}

# step NAME SECONDS LOG CMD…: runs CMD with a time limit (cut to what is
# left of the whole run's $budget seconds; skipped under 15 s), its output
# also appended to LOG (unless LOG is -), and records PASS, FAIL or SKIP.
# The places NVIDIA's libraries are installed, in order: the driver's
# (Debian/Ubuntu, RHEL, the container toolkit's /usr/local/nvidia, WSL,
# the GPU operator's /run/nvidia/driver), the CUDA toolkit's, and the pip
# wheels' (nvidia-cublas-cu12's nvidia/cublas/lib, CUDA 13's
# nvidia/cu13/lib) under every site-packages; then ldconfig's cache.
# GPU_CHECK_ROOT prefixes every path (tests point it at a fake tree).
lib_dirs() {
  local r=${GPU_CHECK_ROOT:-} d
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib \
    /run/nvidia/driver/usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    echo "$r$d"
  done
  local sp
  for sp in $( { python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null || true
    ls -d /usr/local/lib/python3*/dist-packages /usr/lib/python3/dist-packages 2>/dev/null; } | sort -u); do
    echo "$r$sp/nvidia/cublas/lib"
    echo "$r$sp/nvidia/cu13/lib"
  done
}

# find_lib PATTERN: the first file matching PATTERN (a glob of a file
# name) in lib_dirs, else the first ldconfig -p path; empty when none.
find_lib() {
  local d f
  while read -r d; do
    for f in "$d"/$1; do
      [ -e "$f" ] && { echo "$f"; return; }
    done
  done < <(lib_dirs)
  [ -n "${GPU_CHECK_ROOT:-}" ] && return
  ldconfig -p 2>/dev/null | awk -v pat="$1" 'BEGIN { gsub(/\./, "\\.", pat); gsub(/\*/, ".*", pat) } $1 ~ "^" pat "$" { print $NF; exit }'
}

# locate_libs finds libcuda.so.1 and cuBLASLt where they are installed and
# exports what the backend needs: LD_LIBRARY_PATH gains libcuda's
# directory, TANDEM_CUBLASLT names the cuBLASLt file (unless already set).
locate_libs() {
  local cuda lt
  cuda=$(find_lib 'libcuda.so.1')
  echo "libcuda: ${cuda:-not found}"
  if [ -n "$cuda" ]; then
    export LD_LIBRARY_PATH="$(dirname "$cuda")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -z "${TANDEM_CUBLASLT:-}" ]; then
    lt=$(find_lib 'libcublasLt.so.13*')
    [ -n "$lt" ] || lt=$(find_lib 'libcublasLt.so.12*')
    [ -n "$lt" ] && export TANDEM_CUBLASLT=$lt
  fi
  echo "cuBLASLt: ${TANDEM_CUBLASLT:-not found}"
}

verdicts=()
budget=${GPU_CHECK_SECONDS:-480}
step() {
  local name=$1 secs=$2 log=$3 rc start=$SECONDS left
  shift 3
  left=$((budget - SECONDS - 5))
  if [ "$left" -lt 15 ]; then
    verdicts+=("$(printf '%-36s SKIP (out of time)' "$name")")
    return 1
  fi
  secs=$((secs < left ? secs : left))
  echo
  echo "=== $name (limit ${secs}s): $*"
  if [ "$log" = - ]; then
    timeout --kill-after=10 "$secs" "$@"
    rc=$?
  else
    timeout --kill-after=10 "$secs" "$@" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
  fi
  verdicts+=("$(printf '%-36s %s (%ds)' "$name" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL rc=$rc")" $((SECONDS - start)))")
  return $rc
}

run() {
  OUT=${OUT:-$PWD/gpu-check-out}
  mkdir -p "$OUT"
  exec > >(tee "$OUT/log.txt") 2>&1
  local work
  work=$(mktemp -d)
  echo "gpu-check $(date -u +%FT%TZ) on $(hostname)"

  # 0. Probe (seconds).
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm --format=csv || true
  (command -v nvcc && nvcc --version | tail -2) || echo "no nvcc"
  ldd --version | head -1
  ldconfig -p | grep -E 'libcuda\.so|libcublasLt' || true
  locate_libs
  [ -f "$devbin/cuda.test.gz" ] || { echo "missing $devbin/cuda.test.gz: run scripts/gpu-check.sh prepare here and carry .cache/devbin"; exit 1; }
  local bin=$work/bin
  unpack "$bin"
  local model
  model=$(ls "$devbin"/smollm2-*L.gguf 2>/dev/null | head -1)
  echo "default model (cut down): ${model:-none}"

  # 1. nvcc on the machine: sm_90 SASS + PTX, with the register/spill report.
  if command -v nvcc >/dev/null; then
    step "nvcc fatbin (sm_90 + compute_90)" 90 - nvcc -O3 -std=c++17 -fmad=false -Xptxas -v \
      -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
      -fatbin -o "$work/kernels.fatbin" gpu/cuda/kernels/all.cu 2>"$OUT/ptxas.txt"
  fi

  # 2. Correctness against the Go CPU reference, on the device only. Test
  # binaries run in their package's directory, as go test runs them.
  local tests=$OUT/tests.txt run_tests='Kernel|Matmul|Backend|Forward|KVBudget|ModelInfo|Greedy|LogitRows|HiddenRows|Engine'
  [ -n "$model" ] && model=$PWD/$model
  export TANDEM_CUDA_TEST_DEVICES=cuda TANDEM_REQUIRE_GPU=1
  if [ -n "${GPU_CHECK_DRY_RUN:-}" ]; then # the script's own test, on a machine without a GPU: the emulator
    export TANDEM_CUDA_TEST_DEVICES=emu
    unset TANDEM_REQUIRE_GPU
    run_tests='ModelInfo|KVBudget|LogitRows'
  fi
  pushd gpu/cuda >/dev/null
  step "kernel + backend tests (cubin)" 150 "$tests" env TANDEM_MODEL="$model" "$bin/cuda.test" -test.v \
    -test.count=1 -test.run "$run_tests" -test.timeout 140s
  if [ -z "${GPU_CHECK_DRY_RUN:-}" ]; then
    step "kernel tests (clang PTX, JIT)" 60 "$tests" env TANDEM_CUDA_KERNELS=ptx "$bin/cuda.test" -test.count=1 \
      -test.run 'Kernel|Matmul|BackendMatchesCPU' -test.timeout 50s
  fi
  if [ -f "$work/kernels.fatbin" ]; then
    step "kernel tests (fatbin built here)" 40 "$tests" env TANDEM_CUDA_KERNELS="$work/kernels.fatbin" \
      "$bin/cuda.test" -test.count=1 -test.run 'Kernel' -test.timeout 30s
  fi
  popd >/dev/null

  # 3. tandem itself: its GPUs, and serve answering through the frontend.
  if [ -n "$model" ]; then
    export OUT
    export -f serve_check http_post http_get
    step "tandem gpus + serve (chat, embeddings)" 120 "$OUT/serve.txt" bash -c 'serve_check "$0" "$1"' "$bin" "$model"
  fi

  # 4. Benchmarks: ceilings, kernels, decode at batch 1/32/128.
  if [ -n "${GPU_CHECK_DRY_RUN:-}" ]; then
    verdicts+=("$(printf '%-36s SKIP (dry run: no device)' "benchmarks")")
  else
    step "benchmarks" 200 - "$bin/gpucheck" bench -out "$OUT"
  fi

  # 5. With what time is left: memcheck of the kernels (Firecracker only).
  if command -v compute-sanitizer >/dev/null && [ -z "${GPU_CHECK_DRY_RUN:-}" ]; then
    pushd gpu/cuda >/dev/null
    step "compute-sanitizer memcheck" 90 "$OUT/sanitizer.txt" compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$bin/cuda.test" -test.count=1 -test.run 'KernelDequant|KernelRMSNorm|KernelRoPE|KernelReshape|KernelAttention'
    popd >/dev/null
  fi

  echo
  printf '%s\n' "${verdicts[@]}" | tee "$OUT/verdict.txt"
  rm -rf "$work"
  ! grep -q FAIL "$OUT/verdict.txt"
}

case "${1:-run}" in
  prepare) prepare ;;
  run) run ;;
  dry-run) export GPU_CHECK_DRY_RUN=1; run ;;
  locate) locate_libs ;;
  *) echo "usage: $0 [prepare|run|dry-run|locate]" >&2; exit 2 ;;
esac
