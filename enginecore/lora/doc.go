// Package lora reads LoRA adapters and holds them as plain float32
// matrices for a backend to apply: for a base matrix W [Out][In] and an
// adapter's pair A [R][In], B [Out][R] of rank R, a request with scale s
// computes y = W·x + s·(α/R)·B·(A·x) (s alone when the file gives no α),
// as llama.cpp's build_lora_mm does; several adapters add up.
//
// The file format is llama.cpp's GGUF LoRA (convert_lora_to_gguf.py,
// llama_adapter_lora_init): general.type "adapter", adapter.type "lora",
// adapter.lora.alpha, general.architecture equal to the base model's, and
// for each adapted base tensor NAME (blk.N.attn_q.weight, …,
// output.weight, token_embd.weight) the tensors NAME.lora_a (ggml shape
// [In, R]) and NAME.lora_b ([R, Out]); token_embd's pair is flipped
// (lora_a [R, Vocab], a row per token; lora_b [R, Dim]). Norm tensors are
// ignored, as llama.cpp ignores them.
//
// Parse is pure (a parsed file in, an Adapter or an error out); Load
// opens the file. Errors wrap ErrFormat (not a LoRA adapter) or
// ErrMismatch (an adapter for another model).
package lora
