package cpu

import (
	"context"
	"math"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Forward runs step: writes every token's K/V through SlotMapping, reads
// context through BlockTable, and writes V logits per Seq with Logits set
// into consecutive rows of logits. Errors wrap ErrInvalidStep,
// ErrNoKVCache, ErrClosed or ctx's error (checked between layers; the KV
// of a cancelled step is partly written and must not be trusted).
func (b *Backend) Forward(ctx context.Context, step *runner.Step, logits []float32) error {
	switch {
	case b.pool == nil:
		return ErrClosed
	case b.kv == nil:
		return ErrNoKVCache
	}
	numTok := len(step.TokenIDs)
	b.grow(numTok, 0)
	numRows, maxCtx, err := b.check(step, len(logits))
	if err != nil || numTok == 0 {
		return err
	}
	b.grow(numTok, maxCtx)

	c := &b.cfg
	dim, half := c.Dim, len(b.freq)
	for t, id := range step.TokenIDs {
		copy(b.x[t*dim:(t+1)*dim], b.w.TokenEmbed[int(id)*dim:(int(id)+1)*dim])
		pos := float64(step.Positions[t])
		for i, f := range b.freq {
			s, co := math.Sincos(pos * f)
			b.cos[t*half+i], b.sin[t*half+i] = float32(co), float32(s)
		}
	}
	for l := range c.NumLayers {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.layer(l, step)
	}

	// Final norm and LM head, only on the rows asked for.
	r := 0
	for _, s := range step.Seqs {
		if s.Logits {
			t := s.Start + s.Len - 1
			rmsnorm(b.xl[r*dim:(r+1)*dim], b.x[t*dim:(t+1)*dim], b.w.OutNorm, b.eps)
			r++
		}
	}
	if numRows > 0 {
		b.matmul(matmulOp{out: logits, x: b.xl, w: b.w.Output, numTok: numRows, in: dim, n: c.VocabSize})
	}
	return nil
}

// layer runs transformer block l over all tokens of step.
func (b *Backend) layer(l int, step *runner.Step) {
	c := &b.cfg
	w := &b.w.Layers[l]
	numTok, dim, f := len(step.TokenIDs), c.Dim, c.FFNDim
	half := len(b.freq)

	// Attention: norm, Q/K/V, RoPE, K/V into the cache, attention, Wo.
	for t := range numTok {
		rmsnorm(b.xb[t*dim:(t+1)*dim], b.x[t*dim:(t+1)*dim], w.AttnNorm, b.eps)
	}
	b.matmul(
		matmulOp{out: b.q, x: b.xb, w: w.Wq, numTok: numTok, in: dim, n: b.qDim},
		matmulOp{out: b.k, x: b.xb, w: w.Wk, numTok: numTok, in: dim, n: b.kvDim},
		matmulOp{out: b.v, x: b.xb, w: w.Wv, numTok: numTok, in: dim, n: b.kvDim},
	)
	kc, vc := b.layerKV(l)
	for t := range numTok {
		cs, sn := b.cos[t*half:(t+1)*half], b.sin[t*half:(t+1)*half]
		rope(b.q[t*b.qDim:(t+1)*b.qDim], c.NumHeads, c.HeadDim, cs, sn, c.RopeNeox)
		k := b.k[t*b.kvDim : (t+1)*b.kvDim]
		rope(k, c.NumKVHeads, c.HeadDim, cs, sn, c.RopeNeox)
		slot := int(step.SlotMapping[t])
		copy(kc[slot*b.kvDim:(slot+1)*b.kvDim], k)
		copy(vc[slot*b.kvDim:(slot+1)*b.kvDim], b.v[t*b.kvDim:(t+1)*b.kvDim])
	}
	b.attn.layer, b.attn.step = l, step
	b.pool.do(&b.attn)
	b.attn.step = nil
	b.matmul(matmulOp{out: b.xb2, x: b.att, w: w.Wo, numTok: numTok, in: b.qDim, n: dim})
	add(b.x[:numTok*dim], b.xb2)

	// MLP: norm, gate and up, SwiGLU, down.
	for t := range numTok {
		rmsnorm(b.xb[t*dim:(t+1)*dim], b.x[t*dim:(t+1)*dim], w.FFNNorm, b.eps)
	}
	b.matmul(
		matmulOp{out: b.hb, x: b.xb, w: w.W1, numTok: numTok, in: dim, n: f},
		matmulOp{out: b.hb2, x: b.xb, w: w.W3, numTok: numTok, in: dim, n: f},
	)
	swiglu(b.hb[:numTok*f], b.hb2)
	b.matmul(matmulOp{out: b.xb2, x: b.hb, w: w.W2, numTok: numTok, in: f, n: dim})
	add(b.x[:numTok*dim], b.xb2)
}

// matmul runs up to three matmuls in one parallel dispatch.
func (b *Backend) matmul(ops ...matmulOp) {
	b.mm.numOp = copy(b.mm.ops[:], ops)
	b.pool.do(&b.mm)
	b.mm.ops = [3]matmulOp{} // drop references to caller slices
}

// attnJob is causal attention of every (token, head) of a step for one
// layer; worker w takes pairs w, w+numWorkers, … so long and short spans
// spread evenly.
type attnJob struct {
	b     *Backend
	layer int
	step  *runner.Step
}

func (j *attnJob) run(w, numWorkers int) {
	b, step := j.b, j.step
	c := &b.cfg
	numHeads, hd, bs := c.NumHeads, c.HeadDim, b.blockSize
	group := numHeads / c.NumKVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	kc, vc := b.layerKV(j.layer)
	scores := b.scores[w*b.capCtx : (w+1)*b.capCtx]
	for i := w; i < len(step.TokenIDs)*numHeads; i += numWorkers {
		t, h := i/numHeads, i%numHeads
		table := step.Seqs[b.tokSeq[t]].BlockTable
		n := int(step.Positions[t]) + 1 // attend to positions 0..p
		q := b.q[t*b.qDim+h*hd : t*b.qDim+(h+1)*hd]
		kvOff := (h / group) * hd

		maxS := float32(math.Inf(-1))
		for pos := 0; pos < n; pos += bs {
			base := int(table[pos/bs]) * bs
			for p := pos; p < min(n, pos+bs); p++ {
				off := (base+p-pos)*b.kvDim + kvOff
				s := dot(q, kc[off:off+hd]) * scale
				scores[p] = s
				maxS = max(maxS, s)
			}
		}
		var sum float32
		for p := range n {
			e := float32(math.Exp(float64(scores[p] - maxS)))
			scores[p] = e
			sum += e
		}
		out := b.att[t*b.qDim+h*hd : t*b.qDim+(h+1)*hd]
		clear(out)
		inv := 1 / sum
		for pos := 0; pos < n; pos += bs {
			base := int(table[pos/bs]) * bs
			for p := pos; p < min(n, pos+bs); p++ {
				off := (base+p-pos)*b.kvDim + kvOff
				a := scores[p] * inv
				v := vc[off : off+hd]
				for d := range out {
					out[d] += a * v[d]
				}
			}
		}
	}
}
