// Package testmodel writes random-weight models of the supported
// architectures (llama, smollm3, granite, phi3, qwen2, qwen3, gemma2,
// gemma3, and the mixtures of experts llama with Experts (Mixtral), granitemoe,
// qwen2moe and qwen3moe) as GGUF files or Hugging Face
// directories, for tests and benchmarks that need a real model file
// without downloading one.
//
// Weights come from math/rand/v2's PCG seeded with (Spec.Seed, 0), one
// NormFloat64 per element, tensor by tensor in this order: token_embd, then
// per layer attn_norm, attn_q, attn_k, attn_v, the Q/K/V biases (qwen2),
// attn_q_norm and attn_k_norm (qwen3), attn_output, ffn_norm, ffn_gate,
// ffn_up, ffn_down (a mixture of experts: its router and experts, see
// Spec.experts), then output_norm and output (unless tied). Matrices
// have std 1/sqrt(in), the embedding std 1, the output 4/sqrt(Dim), norm
// gains 1+0.02·N, biases 0.1·N. The values are those llama.cpp would see:
// WriteHF stores Llama's Q/K rows in Hugging Face order, so loading either
// file with enginecore/loader gives the same tensors.
//
// Matrix types are chosen per tensor (Spec.Types, else Spec.MatrixType);
// norms, biases and rope_freqs stay F32 as llama.cpp's converter keeps
// them. F16 and BF16 are built in; other types need Spec.Quantize, so this
// package does not depend on the quantizers.
//
// The tokenizer is Spec.Tokenizer's tokenizer.* pairs copied as is, e.g.
// a real vocabulary read from one of llama.cpp's vocab-only files:
//
//	tok, err := testmodel.ReadTokenizer(".../models/ggml-vocab-qwen2.gguf")
//	err = testmodel.WriteGGUF(path, testmodel.Spec{
//		Arch: "qwen2", Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 128,
//		Tokenizer: tok, // VocabSize 0: the tokenizer's 151,936 tokens
//		MatrixType: model.Q8_0,
//		Quantize: func(t model.DType, v []float32) []byte { b, _ := model.Quantize(t, v); return b },
//	})
//
// Without one it writes ByteVocab(VocabSize): a SentencePiece-style
// byte-fallback vocabulary that llama.cpp accepts.
//
// It imports enginecore/model, enginecore/model/safetensors and wire/gguf;
// never enginecore/loader, which tests with it.
package testmodel
