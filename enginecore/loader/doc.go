// Package loader reads a model checkpoint — a GGUF file or a Hugging Face
// directory (config.json + safetensors) — into a [model.Config] and its
// tensors keyed by GGUF name, mmapped where possible. model.FromTensors
// turns the result into weights.
//
// Architectures (GGUF name; Hugging Face class):
//   - llama (Llama 2/3, SmolLM2, Mistral dense; LlamaForCausalLM,
//     MistralForCausalLM), and with expert_count Mixtral
//     (MixtralForCausalLM);
//   - qwen2 (Q/K/V biases, NEOX RoPE; Qwen2ForCausalLM) and qwen3 (Q/K
//     RMSNorm; Qwen3ForCausalLM);
//   - smollm3 (every fourth layer unrotated; SmolLM3ForCausalLM);
//   - granite (four multipliers; GraniteForCausalLM);
//   - phi3 (fused matrices split here, LongRoPE, partial RoPE; phi3.go,
//     Phi3ForCausalLM);
//   - gemma2 and gemma3 (scaled embeddings, GELU, post-norms,
//     sliding-window layers, soft-caps; kvReader.gemma, hfgemma.go,
//     Gemma2ForCausalLM, Gemma3ForCausalLM; every norm gain w of a
//     checkpoint becomes 1+w, as the converter stores it);
//   - ernie4_5 (Ernie4_5ForCausalLM, whose Q and K rows are not
//     permuted: it rotates adjacent pairs itself);
//   - olmo2 (no pre-norms, post-norms, whole-vector QK norm, OLMo 3's
//     window in GGUFs; olmo.go, Olmo2ForCausalLM);
//   - the mixtures of experts (moe.go: GGUF's stacked ffn_*_exps, a
//     checkpoint's one tensor per expert as blk.N.ffn_*.E.weight):
//     qwen2moe (a gated shared expert; Qwen2MoeForCausalLM), qwen3moe
//     (Qwen3MoeForCausalLM), granitemoe (Granite's scales, an optional
//     ungated shared expert; GraniteMoeForCausalLM and
//     GraniteMoeSharedForCausalLM, their fused input_linear split here),
//     ernie4_5-moe (dense first layers, a selection bias, an ungated
//     shared expert; Ernie4_5_MoeForCausalLM), olmoe (OLMo's QK norm;
//     OlmoeForCausalLM) and gpt-oss (GGUF only: attention sinks, biases
//     on the attention's output, the router and the experts, the clamped
//     SwiGLU, every other layer local; gptoss.go).
//
// Anything else — another architecture, an unknown tensor, a tensor type
// the kernels lack, partial RoPE outside phi3, RoPE scaling other than
// linear, llama3 and yarn — is refused at load with
// an error wrapping [ErrUnsupported] that names it; inconsistent files
// (missing tensors, shapes that contradict the hyper-parameters) wrap
// [ErrInvalid].
//
// Both paths yield the same tensors for the same weights, in llama.cpp's
// conventions:
//   - HF names map to GGUF names (model.layers.N.self_attn.q_proj.weight →
//     blk.N.attn_q.weight, lm_head.weight → output.weight, ...).
//   - Llama's Q/K rows are permuted as convert_hf_to_gguf.py does, so the
//     llama arch rotates adjacent pairs (Config.RopeNeox false); Qwen keeps
//     Hugging Face's half rotation (RopeNeox true) unpermuted.
//   - llama3 RoPE scaling is the rope_freqs.weight tensor ([HeadDim/2] F32
//     frequency divisors), which GGUF files carry and the HF path computes
//     from config.json; Config.RopeScaling is then left empty so nothing
//     scales twice. Linear scaling is in Config.RopeScaling.
//   - output.weight is absent when the embedding is tied.
//   - VocabSize is token_embd's row count; EOSTokenIDs merges eos, eot and
//     eom ids (GGUF) or config.json's and generation_config.json's
//     eos_token_id (HF). A missing BOS id reads as 0.
//
// Tensor data is not converted: F32, F16, BF16 and the quantized types stay
// as stored (only Llama's Q/K, which must be permuted, are copied).
//
// It imports enginecore/model, enginecore/model/safetensors and wire/gguf.
// testmodel writes random-weight models of every supported architecture.
//
// Usage:
//
//	m, err := loader.Load("models/SmolLM2-135M-Instruct.Q4_1.gguf")
//	if err != nil { ... }
//	defer m.Close()
//	w, err := model.FromTensors(m.Config, m.Tensors)
package loader
