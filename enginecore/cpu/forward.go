package cpu

import (
	"context"
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Forward runs step: writes every token's K/V through SlotMapping, reads
// context through BlockTable, and writes V logits per token of each Seq's
// LogitRows into consecutive rows of logits (and Dim hidden-state values
// per token of its HiddenRowsOf into step.Hidden). Errors wrap ErrInvalidStep,
// ErrNoKVCache, ErrClosed or ctx's error (checked between layers; the KV
// of a cancelled step is partly written and must not be trusted).
func (b *Backend) Forward(ctx context.Context, step *runner.Step, logits []float32) error {
	switch {
	case b.pool == nil:
		return ErrClosed
	case b.kv == nil && b.kv16 == nil:
		return ErrNoKVCache
	}
	numTok := len(step.TokenIDs)
	b.grow(numTok)
	numRows, err := b.check(step, len(logits))
	if err != nil || numTok == 0 {
		return err
	}
	b.lora = hasLoRA(step)
	if b.lora {
		if err := b.checkLoRA(step); err != nil {
			return err
		}
	}
	b.markPrecise(step)
	b.attn.tiles = b.planTiles(step)
	b.pool.begin()
	defer b.pool.end()

	c := &b.cfg
	dim, half := c.Dim, len(b.freq)
	mscale := c.RopeMScale() // RoPE's attention factor: cosines and sines scaled by it (not the local layers': unscaled)
	for t, id := range step.TokenIDs {
		x := b.x[t*dim : (t+1)*dim]
		if err := b.w.TokenEmbed.DequantizeRow(int(id), x); err != nil {
			return fmt.Errorf("cpu: embedding of token %d: %w", id, err)
		}
		if b.lora {
			b.loraEmbed(step, t, id, x)
		}
		if c.EmbedScale > 0 {
			scaleVec(x, float32(c.EmbedScale))
		}
		pos := float64(step.Positions[t])
		for i, f := range b.freq {
			s, co := math.Sincos(pos * f)
			b.cos[t*half+i], b.sin[t*half+i] = float32(co*mscale), float32(s*mscale)
		}
		for i, f := range b.freqL {
			s, co := math.Sincos(pos * f)
			b.cosL[t*half+i], b.sinL[t*half+i] = float32(co), float32(s)
		}
	}
	for l := range c.NumLayers {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.layer(l, step)
	}

	// Final norm: hidden-state rows (embeddings), then the LM head's
	// input, only on the rows asked for.
	h := 0
	for _, s := range step.Seqs {
		first, n := s.HiddenRowsOf()
		for t := first; t < first+n; t++ {
			rmsnorm(step.Hidden[h*dim:(h+1)*dim], b.x[t*dim:(t+1)*dim], b.w.OutNorm, b.eps)
			h++
		}
	}
	r := 0
	for _, s := range step.Seqs {
		first, n := s.LogitRows()
		for t := first; t < first+n; t++ {
			rmsnorm(b.xl[r*dim:(r+1)*dim], b.x[t*dim:(t+1)*dim], b.w.OutNorm, b.eps)
			r++
		}
	}
	if numRows > 0 {
		b.precise = b.rowPrecise
		b.matmul(b.xl[:numRows*dim], numRows, matmulOp{out: logits, m: b.output})
		if b.lora {
			b.loraLogits(step, b.xl[:numRows*dim], logits[:numRows*c.VocabSize])
		}
		if c.LogitScale > 0 {
			scaleVec(logits[:numRows*c.VocabSize], float32(1/c.LogitScale))
		}
		if c.FinalSoftcap > 0 {
			kernels.Softcap(logits[:numRows*c.VocabSize], float32(c.FinalSoftcap))
		}
	}
	return nil
}

// layer runs transformer block l over all tokens of step.
func (b *Backend) layer(l int, step *runner.Step) {
	c := &b.cfg
	m := &b.layers[l]
	numTok, dim, f := len(step.TokenIDs), c.Dim, c.FFNDim

	// Attention: norm, Q/K/V (+ bias, + QK norm), RoPE, K/V into the
	// cache, attention, Wo.
	b.perToken(stageAttnNorm, l, step)
	q, k, v := b.q[:numTok*b.qDim], b.k[:numTok*b.kvDim], b.v[:numTok*b.kvDim]
	b.matmul(b.xb[:numTok*dim], numTok, matmulOp{out: q, m: m.wq}, matmulOp{out: k, m: m.wk}, matmulOp{out: v, m: m.wv})
	if b.lora {
		b.loraLayer(l, b.xb, loraOut{lora.Q, q}, loraOut{lora.K, k}, loraOut{lora.V, v})
	}
	b.perToken(stageRoPEKV, l, step)
	b.attn.layer, b.attn.step = l, step
	b.pool.run(&b.attn, b.attnWork(step))
	if b.attn.split {
		b.attn.mergeParts()
	}
	b.attn.step = nil
	b.matmul(b.att[:numTok*b.qDim], numTok, matmulOp{out: b.xb2, m: m.wo})
	if b.lora {
		b.loraLayer(l, b.att, loraOut{lora.O, b.xb2})
	}

	// MLP: (post-norm,) residual, norm, gate and up, SwiGLU or GeGLU,
	// down, (post-norm,) residual; or the mixture of experts.
	b.perToken(stageFFNNorm, l, step)
	if m.router != nil {
		b.moeLayer(l, numTok)
		b.perToken(stageAdd, l, step)
		return
	}
	b.matmul(b.xb[:numTok*dim], numTok, matmulOp{out: b.hb, m: m.w1}, matmulOp{out: b.hb2, m: m.w3})
	if b.lora {
		b.loraLayer(l, b.xb, loraOut{lora.Gate, b.hb}, loraOut{lora.Up, b.hb2})
	}
	b.perToken(stageGate, l, step)
	b.matmul(b.hb[:numTok*f], numTok, matmulOp{out: b.xb2, m: m.w2})
	if b.lora {
		b.loraLayer(l, b.hb, loraOut{lora.Down, b.xb2})
	}
	b.perToken(stageAdd, l, step)
}

// writeKV stores k and v ([Hkv][D] each) of KV slot s in layer l's
// cache: K laid out [numBlocks][Hkv][D][B], V [numBlocks][B][Hkv][D] (see
// the package doc), as float32 or float16.
func (b *Backend) writeKV(l, s int, k, v []float32) {
	bs := b.blockSize
	base := (s / bs) * b.kvDim * bs
	off := s % bs
	if b.kv16 != nil {
		kc, vc := b.layerKV16(l)
		for i, x := range k { // i = h·D + d
			kc[base+i*bs+off] = model.F32ToF16(x)
		}
		for i, x := range v {
			vc[s*b.kvDim+i] = model.F32ToF16(x)
		}
		return
	}
	kc, vc := b.layerKV(l)
	for i, x := range k {
		kc[base+i*bs+off] = x
	}
	copy(vc[s*b.kvDim:(s+1)*b.kvDim], v)
}
