//go:build cuda

// Package cuda is the CUDA runner.Backend: a Llama-family forward pass on
// one NVIDIA GPU, with our own kernels (kernels/*.cu) and cuBLASLt GEMMs,
// over a paged KV cache in device memory.
//
// Nothing CUDA is needed to build it: shim.c dlopens libcuda.so.1 and
// libcublasLt.so.13 (or .12, or $TANDEM_CUBLASLT) at run time and calls
// them through hand-typed pointers, so one binary runs with or without a
// GPU; Available says why a machine cannot use it. The kernels are
// compiled ahead of time by `make kernels` (scripts/kernels.sh): PTX by
// clang-19 (JIT-compiled by the driver on any sm_80+ GPU) and an sm_90
// cubin by nvcc 13.0, both embedded; $TANDEM_CUDA_KERNELS overrides them.
// Every file carries the build tag `cuda`; builds without it have no CUDA
// code at all. The package emu runs the same kernels on the CPU, and the
// tests run the whole backend on it, so CI without a GPU exercises every
// kernel and the forward pass; tests that need a real device skip.
//
// Dimension glossary (as in enginecore/runner): T tokens in a step, S
// sequences, R logits rows, L layers, V vocab, Dim model width, H query
// heads, Hkv KV heads, G = H/Hkv, D head dim, F FFN width, B block size,
// P attention partitions.
//
// Data on the device:
//
//	weights   matrices bf16 [out][in] (Q, K, V stacked: [H·D+2·Hkv·D][Dim];
//	          gate, up stacked: [2F][Dim]); token_embd also as in the file;
//	          norms and biases f32; RoPE table [maxContext][D] f32
//	KV cache  [L][2][numBlocks][B][Hkv][D] bf16 (vLLM's flash / NHD layout)
//	stream    x f32 [T][Dim] residual; GEMM inputs bf16, outputs f32
//
// One step: embedding gather (dequantizing token_embd rows) → per layer
// {RMSNorm (fused residual add) → QKV GEMM → bias, QK norm → RoPE → K/V
// into the cache → paged attention (split-K for long contexts with few
// tokens) → Wo GEMM → add + RMSNorm → gate/up GEMM → SiLU·mul → down
// GEMM} → final add + RMSNorm of the rows that want logits → LM head GEMM
// → logits copied back (the runner samples on the CPU). Weights are
// uploaded once; scratch grows to the largest step and is reserved up
// front by KVBudget; the steady state allocates nothing.
//
// The context of the device is made current in every C call (goroutines
// move between OS threads). A Backend is used by one goroutine at a time.
//
// It imports enginecore/model and enginecore/runner, nothing else from
// this repository; cgo stays in this package and gpu/cuda/emu.
//
// Usage:
//
//	if ok, why := cuda.Available(); !ok {
//		log.Print(why) // fall back to the CPU backend
//	}
//	be, err := cuda.New(cfg, w, cuda.Options{Device: 0})
//	budget, err := be.KVBudget(0.9, maxBatchedTokens, maxSeqs)
//	err = be.AllocateKV(int(budget/be.KVBytesPerBlock(16)), 16)
//	err = be.Forward(ctx, &step, logits)
package cuda
