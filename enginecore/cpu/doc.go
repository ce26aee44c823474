// Package cpu is the pure-Go runner.Backend: a Llama-family forward pass
// over a paged KV cache, multi-threaded across matrix rows and attention
// heads.
//
// One Forward runs every token of a Step (prefill chunks and decode tokens
// of many sequences mixed) through the layers together: the projections
// and the MLP are batched matmuls over all T tokens; attention is per
// sequence, each token at position p attending to positions 0..p of its
// own sequence, read from the paged cache through the sequence's block
// table after this step's K/V were written through SlotMapping. Chunked
// prefill and decode are therefore one code path.
//
// Dimension glossary: T tokens in the step, S sequences, L layers,
// V vocab, H query heads, Hkv KV heads, D head dim, B block size, F FFN
// width.
//
// KV cache layout: one []float32 pool, split per layer into K then V, each
// [numBlocks][B][Hkv][D]; so KV slot s = block*B + offset holds K (or V)
// of all KV heads at [s*Hkv*D, (s+1)*Hkv*D) of its layer's K (or V) part:
//
//	pool = [L][2 (K,V)][numBlocks][B][Hkv][D] float32
//
// New starts threads-1 worker goroutines (the caller's goroutine is the
// first thread); Close stops them.
//
// It imports enginecore/model (weights) and enginecore/runner (the
// interface it implements), nothing else from this repository; no cgo.
//
// Usage:
//
//	cfg, w := model.Dummy(0)
//	be, err := cpu.New(cfg, w, runtime.GOMAXPROCS(0))
//	defer be.Close()
//	err = be.AllocateKV(numBlocks, 16)
//	err = be.Forward(ctx, &step, logits)
package cpu
