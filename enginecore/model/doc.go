// Package model holds a decoder-only transformer's hyper-parameters
// ([Config]) and weights ([Weights]: matrices as ggml-layout [Tensor]s of
// any supported type, norms and biases as float32), builds them from GGUF
// tensors ([FromTensors]), and implements ggml's block formats: reference
// dequantization ([Dequantize]) and round-to-nearest quantization
// ([Quantize]) for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS, bit-exact with ggml-quants.c
// (checked against gguf-py in testdata/quant_golden.json, made by
// scripts/gen-quant-golden.py); Q2_K, Q3_K, IQ4_NL and IQ4_XS quantize by
// plain rounding (quantlow.go), not ggml's search, for test models. It
// also builds the built-in `dummy` model ([Dummy]) and random models of any
// shape and types ([Random]) for tests and benchmarks.
//
// It computes no forward pass: backends (enginecore/cpu, gpu/cuda) read
// Weights; loaders (GGUF, safetensors) fill them. It must not import other
// enginecore packages, frontend/*, wire or gpu/*.
//
// Conventions (those of llama.cpp and llama2.c): a matrix W [out][in] is
// stored row-major, so out[j] = Σ_i W[j*in+i]·x[i]; its GGUF Shape is
// [in, out] (ne[0] = in).
//
// Usage:
//
//	w, err := model.FromTensors(cfg, tensorsByName) // from a GGUF reader
//	be, err := cpu.New(cfg, w, threads)
//
// # The dummy model
//
// Like vLLM's --load-format dummy: real compute, meaningless text, for tests
// and benchmarks. Shape:
//
//	Arch "llama", V = 320, Dim = 128, L = 4, H = 4, Hkv = 2 (GQA), D = 32,
//	FFN = 384, RopeTheta = 10000 (normal/adjacent-pair RoPE), NormEps = 1e-5,
//	untied output, BOS = 256, EOS = {257, 259}.
//
// Vocabulary (the frontend's byte tokenizer relies on it):
//
//	0..255   the raw bytes 0x00..0xFF
//	256      <|begin_of_text|>  (BOS)
//	257      <|end_of_text|>    (EOS)
//	258      <|im_start|>
//	259      <|im_end|>         (also EOS)
//	260..319 <|reserved_N|>, N = id-260
//
// Weights (F32 tensors) are drawn from math/rand/v2's PCG seeded with
// (DummySeed, 0), one rng.NormFloat64 per element in this order:
// TokenEmbed, then per layer AttnNorm, Wq, Wk, Wv, Wo, FFNNorm, W1, W3,
// W2, then OutNorm, Output.
// Matrices get std 1/sqrt(in) (so every projection keeps unit variance and
// attention scores are O(1): attention really depends on the context),
// Output gets 4/sqrt(Dim) (logits with std ≈ 4, so greedy decoding varies
// with context instead of cycling), TokenEmbed std 1, norm weights 1+0.02·N.
//
// Dummy usage:
//
//	cfg, w := model.Dummy(2048)
//	if err := w.Validate(cfg); err != nil { ... }
//	be, err := cpu.New(cfg, w, 4)
package model
