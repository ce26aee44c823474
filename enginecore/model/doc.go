// Package model holds a decoder-only transformer's hyper-parameters
// ([Config]) and its weights as flat float32 slices ([Weights]), and builds
// the built-in `dummy` model ([Dummy]).
//
// It computes nothing: backends (enginecore/cpu, gpu/cuda) read Weights;
// loaders (GGUF, safetensors) fill them. It must not import other
// enginecore packages, frontend/*, wire or gpu/*.
//
// Conventions (those of llama.cpp and llama2.c): a matrix W [out][in] is
// stored row-major, so out[j] = Σ_i W[j*in+i]·x[i] (GGUF ne[0] = in).
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
// Weights are drawn from math/rand/v2's PCG seeded with (DummySeed, 0), one
// rng.NormFloat64 per element in this order: TokenEmbed, then per layer
// AttnNorm, Wq, Wk, Wv, Wo, FFNNorm, W1, W3, W2, then OutNorm, Output.
// Matrices get std 1/sqrt(in) (so every projection keeps unit variance and
// attention scores are O(1): attention really depends on the context),
// Output gets 4/sqrt(Dim) (logits with std ≈ 4, so greedy decoding varies
// with context instead of cycling), TokenEmbed std 1, norm weights 1+0.02·N.
//
// Usage:
//
//	cfg, w := model.Dummy(2048)
//	if err := w.Validate(cfg); err != nil { ... }
//	be, err := cpu.New(cfg, w, 4)
package model
