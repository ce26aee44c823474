// Package conformance holds tests only: they check that the CPU forward
// pass (enginecore/cpu over enginecore/loader and enginecore/model)
// computes the logits llama.cpp computes for the same GGUF file.
//
// The oracle is llama.cpp's prebuilt CPU library from npm
// (@node-llama-cpp/linux-x64, driven by scripts/oracle/logits.mjs through
// node-llama-cpp: 1 thread, flash attention off, F32 KV cache). For every
// position of a few prompts, teacher-forced, both sides' next-token
// log-softmax are compared: top-1 must be identical (a near-tie in the
// oracle, below a per-type margin, may go either way and is logged), and
// the largest |Δ log-softmax| over the oracle's top-k and a probe set of
// ids must stay under a per-tensor-type bound. Models: random-weight GGUFs
// written with enginecore/loader/testmodel (every supported tensor type,
// llama and NEOX RoPE, GQA, Q/K/V bias, QK-norm, tied and untied
// embeddings, llama3 rope_freqs, SmolLM3's NoPE layers; Gemma 2 and 3's
// layers, sliding windows and soft-caps), the default model
// (TANDEM_MODEL), which is also checked on a 32-token greedy
// continuation, and Gemma 3 270M (TANDEM_GEMMA3_MODEL), as stored and
// dequantized to float32.
//
// Environment (set by `make test`): TANDEM_ORACLE_NODE_MODULES, the
// scripts/oracle/node_modules holding node-llama-cpp; TANDEM_MODEL, the
// default model file; TANDEM_GEMMA3_MODEL, Gemma 3 270M. Tests skip, saying why, when either is unset or
// missing, or when node is not on PATH.
//
// The package has no non-test code and nothing imports it. Its tests
// import enginecore/cpu, enginecore/loader, enginecore/loader/testmodel and
// enginecore/model; never frontend (token ids come from the oracle).
//
// Usage:
//
//	TANDEM_ORACLE_NODE_MODULES=$PWD/scripts/oracle/node_modules \
//	TANDEM_MODEL=$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf \
//	go test -v ./enginecore/conformance
package conformance
