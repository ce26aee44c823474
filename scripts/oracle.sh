#!/usr/bin/env bash
# Installs the test oracles (never part of the product): llama.cpp's prebuilt
# CPU libraries through npm node-llama-cpp, HF tokenizers, @huggingface/jinja,
# the OpenAI Node SDK and the Vercel AI SDK (ai, its OpenAI providers, zod)
# into scripts/oracle/node_modules, then extracts the llama.cpp source bundle
# that node-llama-cpp ships (vocab test vectors and chat templates, read by
# tests at run time; nothing of it is committed or built) into
# .cache/llama.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "oracle: npm is required (apt-get install -y nodejs npm)" >&2
  exit 1
fi
if [ ! -f scripts/oracle/node_modules/.package-lock.json ] || [ scripts/oracle/package-lock.json -nt scripts/oracle/node_modules/.package-lock.json ]; then
  echo "oracle: installing npm packages (node-llama-cpp, tokenizers, @huggingface/jinja, openai, ai)…"
  (cd scripts/oracle && npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error)
fi
src=.cache/llama.cpp
bundle=scripts/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -d "$src/models" ] || [ "$bundle" -nt "$src/.extracted" ]; then
  echo "oracle: extracting llama.cpp test data from the node-llama-cpp bundle…"
  rm -rf "$src"
  mkdir -p .cache
  git -c advice.detachedHead=false clone --quiet "$bundle" "$src"
  touch "$src/.extracted"
fi
echo "oracle: ready ($src, scripts/oracle/node_modules)"
