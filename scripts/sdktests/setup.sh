#!/usr/bin/env bash
# Installs the OpenAI Python SDK (PyPI `openai`), Anthropic's (PyPI
# `anthropic`), Ollama's and Cohere's clients, LangChain's integrations,
# OpenAI's Agents SDK, Pydantic AI and LiteLLM into a virtual
# environment under .cache/sdktests-venv for the SDK acceptance tests
# (cmd/tandem/e2e_sdk_test.go runs scripts/sdktests/test_openai.py with
# it, e2e_anthropic_test.go test_anthropic.py, e2e_ollama_test.go
# test_ollama.py, e2e_rerank_test.go test_cohere.py,
# test_tei.py, e2e_structured_test.go the tool-loop scripts).
# The Node SDK comes from scripts/oracle (make oracle); the Go SDK is a
# module dependency. Idempotent: does nothing when the pinned version is
# already installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=${OPENAI_PY_VERSION:-3.51.0}
# LangChain's OpenAI integration, for the tool-loop test (test_langchain.py).
langchain=${LANGCHAIN_OPENAI_VERSION:-1.7.4}
# Anthropic's SDK, for the Messages API test (test_anthropic.py).
anthropic=${ANTHROPIC_PY_VERSION:-2.16.0}
# Ollama's Python client, for its native API (test_ollama.py).
ollama=${OLLAMA_PY_VERSION:-0.6.3}
# LangChain's Ollama integration (ChatOllama), in test_ollama.py.
langchain_ollama=${LANGCHAIN_OLLAMA_VERSION:-1.1.0}
# Cohere's SDK, for its rerank and embed APIs (test_cohere.py).
cohere=${COHERE_PY_VERSION:-7.3.1}
# Agent frameworks and gateways with their own clients: OpenAI's Agents
# SDK (test_agents.py), Pydantic AI (test_pydantic_ai.py), LiteLLM
# (test_litellm.py).
agents=${OPENAI_AGENTS_VERSION:-0.25.0}
pydantic_ai=${PYDANTIC_AI_VERSION:-2.78.0}
litellm=${LITELLM_VERSION:-1.110.2}
# huggingface_hub's InferenceClient (test_tei.py) and numpy, which its
# feature_extraction answers in.
hfhub=${HF_HUB_VERSION:-2.5.0}
numpy=${NUMPY_VERSION:-2.4.6}
venv=.cache/sdktests-venv
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "sdktests: $py not found; the Python SDK tests will be skipped" >&2
  exit 0
fi
ready() {
  "$venv/bin/python" -c "import openai, sys, importlib.metadata as m; sys.exit(openai.__version__ != '$version' or m.version('langchain-openai') != '$langchain' or m.version('anthropic') != '$anthropic' or m.version('ollama') != '$ollama' or m.version('langchain-ollama') != '$langchain_ollama' or m.version('cohere') != '$cohere' or m.version('openai-agents') != '$agents' or m.version('pydantic-ai-slim') != '$pydantic_ai' or m.version('litellm') != '$litellm' or m.version('huggingface_hub') != '$hfhub' or m.version('numpy') != '$numpy')" 2>/dev/null
}
if [ -x "$venv/bin/python" ] && ready; then
  echo "sdktests: ready in $venv"
  exit 0
fi
pins=("openai==$version" "langchain-openai==$langchain" "anthropic==$anthropic" "ollama==$ollama" "langchain-ollama==$langchain_ollama"
  "cohere==$cohere" "openai-agents==$agents" "pydantic-ai-slim[openai]==$pydantic_ai" "litellm==$litellm" "huggingface_hub==$hfhub" "numpy==$numpy")
echo "sdktests: installing ${pins[*]} into $venv…"
mkdir -p .cache
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
echo "sdktests: ${pins[*]} ready in $venv"
