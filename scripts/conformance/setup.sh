#!/usr/bin/env bash
# Prepares the peer suites for `make conformance` (scripts/conformance/run.sh):
#  - a venv .cache/conformance-venv with pytest, the OpenAI SDK and the
#    test files' other imports (versions from vLLM's requirements/test/cuda.txt);
#  - vLLM's source distribution from PyPI, its tests/entrypoints/openai
#    (and the examples/*.jinja chat templates some of them name) copied
#    into .cache/conformance/vllm-run/tests with our shim
#    (scripts/conformance/vllm) in place of tests/utils.py and tests/conftest.py;
#  - llama.cpp's tools/server/tests (from the node-llama-cpp source bundle,
#    scripts/oracle.sh) copied into .cache/conformance/llamacpp-run with
#    our utils.py shim in front of theirs.
# Idempotent: each step is skipped when its result is there.
set -euo pipefail
cd "$(dirname "$0")/../.."
vllm_version=${VLLM_VERSION:-0.33.0}
venv=.cache/conformance-venv
work=.cache/conformance
py=${PYTHON:-python3}
say() { echo "conformance: $*"; }

# 1. The venv.
pins=(openai==2.44.0 pytest==9.1.0 pytest-asyncio==1.4.0 pytest-timeout==2.4.0 requests==2.34.2
  httpx==0.27.2 jsonschema==4.23.0 numpy==2.2.6 regex==2026.2.28 pydantic==2.12.0
  transformers==5.20.2 tokenizers==0.23.2 gguf==0.19.0 aiohttp==3.14.5 filelock==3.20.3
  prometheus-client==0.20.0 wget==3.2 fastapi==0.136.3 starlette==1.3.1 pybase64==1.4.3
  schemathesis==4.21.6 hypothesis==6.131.0)
stamp="$venv/.pins-$(printf '%s\n' "${pins[@]}" | sha256sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  say "installing ${#pins[@]} Python packages into $venv…"
  mkdir -p .cache
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
  touch "$stamp"
fi
say "venv ready ($venv)"

# 2. vLLM's sdist. `pip download --no-binary :all:` would build the sdist's
# metadata (torch, CUDA, cmake from source); we take the file pip would
# download from the same index (PEP 503 simple page) and check its sha256.
mkdir -p "$work/dl"
sdist="$work/dl/vllm-$vllm_version.tar.gz"
if [ ! -f "$sdist" ]; then
  index=${PIP_INDEX_URL:-https://pypi.org/simple}
  say "looking up vllm==$vllm_version on $index…"
  link=$(curl -fsSL "${index%/}/vllm/" | grep -o "href=\"[^\"]*/vllm-$vllm_version\.tar\.gz#sha256=[0-9a-f]*\"" | head -1 | sed 's/^href="//; s/"$//' || true)
  if [ -z "$link" ]; then
    say "vllm==$vllm_version has no sdist on $index; newest versions there:" >&2
    curl -fsSL "${index%/}/vllm/" | grep -o 'vllm-[0-9][0-9.]*\.tar\.gz' | sort -uV | tail -3 >&2
    exit 1
  fi
  url=${link%%#*}; sum=${link##*sha256=}
  say "downloading $url…"
  curl -fsSL -o "$sdist.part" "$url"
  echo "$sum  $sdist.part" | sha256sum -c --quiet
  mv "$sdist.part" "$sdist"
fi
run="$work/vllm-run"
shim_sum=$(cat scripts/conformance/vllm/tests/*.py | sha256sum | cut -c1-12)
if [ ! -f "$run/.ready-$vllm_version-$shim_sum" ]; then
  say "extracting vLLM $vllm_version tests/entrypoints/openai into $run…"
  rm -rf "$run" && mkdir -p "$run"
  tar xzf "$sdist" -C "$run" --strip-components=1 --wildcards \
    "vllm-$vllm_version/tests/entrypoints/openai" "vllm-$vllm_version/tests/entrypoints/conftest.py" \
    "vllm-$vllm_version/tests/entrypoints/__init__.py" "vllm-$vllm_version/tests/__init__.py" \
    "vllm-$vllm_version/examples/*.jinja"
  cp -r scripts/conformance/vllm/tests/. "$run/tests/"
  cat > "$run/pytest.ini" <<'INI'
[pytest]
asyncio_default_fixture_loop_scope = function
markers =
    slow_test
    skip_global_cleanup
    core_model
    cpu_model
    cpu_test
    distributed
    optional
    split
INI
  touch "$run/.ready-$vllm_version-$shim_sum"
fi
say "vLLM $vllm_version tests ready ($run)"

# 3. llama.cpp's server tests.
if [ ! -d .cache/llama.cpp/tools/server/tests ]; then
  ./scripts/oracle.sh
fi
lrun="$work/llamacpp-run"
lsum=$( (cd .cache/llama.cpp && git rev-parse HEAD); cat scripts/conformance/llamacpp/utils.py scripts/conformance/setup.sh | sha256sum)
lsum=$(echo "$lsum" | sha256sum | cut -c1-12)
if [ ! -f "$lrun/.ready-$lsum" ]; then
  say "copying llama.cpp tools/server/tests into $lrun…"
  # At the same depth as in llama.cpp's tree: the tests name chat templates
  # as ../../../models/templates/*.jinja.
  rm -rf "$work/llamacpp-tree" "$lrun" && mkdir -p "$work/llamacpp-tree/tools/server"
  cp -r .cache/llama.cpp/tools/server/tests "$work/llamacpp-tree/tools/server/"
  ln -s "$PWD/.cache/llama.cpp/models" "$work/llamacpp-tree/models"
  ln -s llamacpp-tree/tools/server/tests "$lrun"
  mv "$lrun/utils.py" "$lrun/llama_utils.py"
  cp scripts/conformance/llamacpp/utils.py "$lrun/utils.py"
  touch "$lrun/.ready-$lsum"
fi
say "llama.cpp server tests ready ($lrun, llama.cpp $(cd .cache/llama.cpp && git log -1 --format=%cs 2>/dev/null))"
