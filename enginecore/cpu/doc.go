// Package cpu is the pure-Go runner.Backend: a decoder-only forward pass
// (Llama's, with the options model.Config adds for Qwen, Gemma, SmolLM3,
// Granite, Phi-3 and OLMo: QK norm per head or whole, GeGLU, post-norms,
// no pre-norms, sliding-window layers, soft-caps, NoPE layers, partial
// RoPE, residual and logit scales; and mixtures of experts, moe.go) over
// a paged KV cache, multi-threaded across matrix rows and attention
// tiles.
//
// One Forward runs every token of a Step (prefill chunks and decode tokens
// of many sequences mixed) through the layers together: the projections
// and the MLP are batched matmuls over all T tokens; attention is per
// sequence, each token at position p attending to positions 0..p of its
// own sequence, read from the paged cache through the sequence's block
// table after this step's K/V were written through SlotMapping. Chunked
// prefill and decode are therefore one code path. Attention is
// flash-attention style (attention.go): tiles of up to 16 tokens × the
// query heads of one KV head walk the blocks once with an online softmax,
// so no score row longer than a block exists and each block's K/V is read
// once per tile.
//
// Dimension glossary: T tokens in the step, S sequences, L layers,
// V vocab, H query heads, Hkv KV heads, D head dim, B block size, F FFN
// width.
//
// KV cache layout: one []float32 pool, split per layer into K then V,
// each numBlocks blocks of B token slots (slot s = block·B + offset).
// Within a block, V is [B][Hkv][D] (a token's values are contiguous, for
// the weighted sum) and K is [Hkv][D][B] (transposed, so that one query's
// scores for 16 positions of a block come out of one register):
//
//	pool = [L] × { K [numBlocks][Hkv][D][B], V [numBlocks][B][Hkv][D] } float32
//
// Weights are packed at New into the kernels' 16-row layouts (package
// enginecore/cpu/kernels); quantized matmuls quantize their input to 8-bit
// blocks once and multiply integers, like llama.cpp. Tokens marked precise
// (SetPrecision; by default the prompt's, from runner.Seq.PromptLen) also
// get a residual 8-bit row, about 15 bits in all (see Precision).
//
// New starts threads-1 worker goroutines (the caller's goroutine is the
// first thread); Close stops them.
//
// It imports enginecore/model (weights), enginecore/runner (the interface
// it implements) and its own kernels package, nothing else from this
// repository; no cgo. Build with GOEXPERIMENT=simd for the AVX-512 and
// AVX2 kernels (pure Go otherwise).
//
// Usage:
//
//	cfg, w := model.Dummy(0)
//	be, err := cpu.New(cfg, w, runtime.GOMAXPROCS(0))
//	defer be.Close()
//	err = be.AllocateKV(numBlocks, 16)
//	err = be.Forward(ctx, &step, logits)
package cpu
