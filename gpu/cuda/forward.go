//go:build cuda

package cuda

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Forward runs step: every token's K/V is written through SlotMapping,
// context is read through BlockTable, and V logits per Seq with Logits
// set go into consecutive rows of logits. It queues one kernel or GEMM
// after another on the device's stream and waits once, when copying the
// logits back. Errors wrap ErrInvalidStep, ErrNoKVCache, ErrClosed or
// ctx's error (checked between layers; the KV of a cancelled step is
// partly written and must not be trusted).
func (b *Backend) Forward(ctx context.Context, step *runner.Step, logits []float32) error {
	switch {
	case b.dev == nil:
		return ErrClosed
	case b.kv == 0:
		return ErrNoKVCache
	}
	numTok := len(step.TokenIDs)
	for i := range step.Seqs {
		if len(step.Seqs[i].LoRA) > 0 {
			return fmt.Errorf("%w: seq %d applies a LoRA adapter; the CUDA backend applies none", ErrInvalidStep, i)
		}
	}
	sh, err := b.check(step, len(logits))
	if err != nil || numTok == 0 {
		return err
	}
	numRows, maxCtx, maxBlocks := sh.NumRows, sh.MaxCtx, sh.MaxBlocks
	if err := b.grow(numTok, numRows); err != nil {
		return err
	}
	m, err := b.uploadMeta(step, numRows, maxBlocks)
	if err != nil {
		return err
	}
	o, c := b.ops, &b.cfg
	dim, f := c.Dim, c.FFNDim

	if err := o.dequantRows(b.x, false, b.embed, b.embedType, b.embedRowBytes, m.tokens, numTok, dim); err != nil {
		return err
	}
	if err := o.rmsNorm(b.xb, b.x, 0, b.layers[0].attnNorm, 0, numTok, dim, b.eps); err != nil {
		return err
	}
	a := &b.attn
	*a = attnArgs{
		out: b.att, partAcc: b.partAcc, partML: b.partML, qkv: b.qkv,
		tokSeq: m.tokSeq, positions: m.positions, blockTables: m.blockTables, maxBlocks: maxBlocks,
		numTok: numTok, rowStride: b.rowStride, numHeads: c.NumHeads, numKVHeads: c.NumKVHeads,
		headDim: c.HeadDim, blockSize: b.blockSize, scale: b.scale,
	}
	a.numParts, a.partLen = b.planAttention(numTok, maxCtx)

	for l := range c.NumLayers {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := &b.layers[l]
		a.kc, a.vc = b.layerKV(l)
		// Attention: QKV, bias, QK norm, RoPE, cache write, attention, Wo.
		err := b.dev.MatmulBT(b.qkv, true, b.xb, w.wqkv, numTok, dim, b.rowStride)
		if err == nil && w.bqkv != 0 {
			err = o.addBias(b.qkv, w.bqkv, numTok, b.rowStride)
		}
		if err == nil && w.qNorm != 0 {
			err = o.headNorm(b.qkv, w.qNorm, w.kNorm, numTok, b.rowStride, c.NumHeads, c.NumKVHeads, c.HeadDim, b.eps)
		}
		if err == nil {
			err = o.rope(b.qkv, m.positions, b.rope, numTok, b.rowStride, c.NumHeads, c.NumKVHeads, c.HeadDim, c.RopeNeox)
		}
		if err == nil {
			err = o.reshapeAndCache(a.kc, a.vc, b.qkv, m.slots, numTok, b.rowStride, b.qDim, b.kvDim)
		}
		if err == nil {
			err = o.attention(a)
		}
		if err == nil {
			err = b.dev.MatmulBT(b.delta, true, b.att, w.wo, numTok, b.qDim, dim)
		}
		// MLP: residual add + norm, gate and up, SwiGLU, down.
		if err == nil {
			err = o.rmsNorm(b.xb, b.x, b.delta, w.ffnNorm, 0, numTok, dim, b.eps)
		}
		if err == nil {
			err = b.dev.MatmulBT(b.gu, true, b.xb, w.wgu, numTok, dim, 2*f)
		}
		if err == nil {
			err = o.siluMul(b.h, b.gu, numTok, f)
		}
		if err == nil {
			err = b.dev.MatmulBT(b.delta, true, b.h, w.w2, numTok, f, dim)
		}
		// Residual add + the next norm: the next layer's, or the final one
		// on the rows that get logits.
		switch {
		case err != nil:
		case l+1 < c.NumLayers:
			err = o.rmsNorm(b.xb, b.x, b.delta, b.layers[l+1].attnNorm, 0, numTok, dim, b.eps)
		case sh.NumHidden > 0:
			// Hidden states (embeddings): every row normalized into xb,
			// the residual added once, then the logits rows from x as is.
			err = o.rmsNorm(b.xb, b.x, b.delta, b.outNorm, 0, numTok, dim, b.eps)
			if err == nil && numRows > 0 {
				err = o.rmsNorm(b.xl, b.x, 0, b.outNorm, m.rows, numRows, dim, b.eps)
			}
		case numRows > 0:
			err = o.rmsNorm(b.xl, b.x, b.delta, b.outNorm, m.rows, numRows, dim, b.eps)
		}
		if err != nil {
			return fmt.Errorf("cuda: layer %d: %w", l, err)
		}
	}
	if numRows > 0 {
		if err := b.dev.MatmulBT(b.logits, true, b.xl, b.output, numRows, dim, c.VocabSize); err != nil {
			return fmt.Errorf("cuda: LM head: %w", err)
		}
		if err := b.dev.CopyDtoH(f32Bytes(logits[:numRows*c.VocabSize]), b.logits); err != nil {
			return err
		}
	}
	if sh.NumHidden > 0 {
		return b.copyHidden(step, numTok)
	}
	if numRows == 0 {
		return b.dev.Sync()
	}
	return nil
}

// copyHidden copies the final norm's rows (xb, bf16) back and writes the
// Seqs' hidden rows into step.Hidden as float32 (exact: bf16 is
// float32's top half).
func (b *Backend) copyHidden(step *runner.Step, numTok int) error {
	dim := b.cfg.Dim
	if n := numTok * dim * 2; len(b.hostXB) < n {
		b.hostXB = make([]byte, n)
	}
	xb := b.hostXB[:numTok*dim*2]
	if err := b.dev.CopyDtoH(xb, b.xb); err != nil {
		return fmt.Errorf("cuda: hidden states: %w", err)
	}
	h := 0
	for _, s := range step.Seqs {
		first, n := s.HiddenRowsOf()
		for t := first; t < first+n; t++ {
			row := xb[t*dim*2 : (t+1)*dim*2]
			for d := range dim {
				step.Hidden[h*dim+d] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[2*d:])) << 16)
			}
			h++
		}
	}
	return nil
}

// planAttention picks the split-K partitions for numTok tokens attending
// to at most maxCtx positions: one partition when the grid already has
// about two blocks per multiprocessor; otherwise enough to reach that,
// each at least one tile long, within the capParts workspace.
func (b *Backend) planAttention(numTok, maxCtx int) (numParts, partLen int) {
	tiles := ceilDiv(maxCtx, attnTile)
	blocks := numTok * b.cfg.NumKVHeads
	target := 2 * b.dev.NumSMs()
	if blocks >= target || tiles < 2 {
		return 1, tiles * attnTile
	}
	p := min(ceilDiv(target, blocks), tiles, b.capParts/(numTok*b.cfg.NumHeads))
	if p < 2 {
		return 1, tiles * attnTile
	}
	partLen = ceilDiv(tiles, p) * attnTile
	return ceilDiv(maxCtx, partLen), partLen
}

// stepMeta are the device addresses of one step's metadata.
type stepMeta struct {
	tokens, positions, slots, tokSeq uintptr // [T] int32 each
	rows                             uintptr // [R] int32: token index of each logits row
	blockTables                      uintptr // [S][maxBlocks] int32
}

// uploadMeta packs the step's metadata into hostMeta and copies it to the
// device in one transfer.
func (b *Backend) uploadMeta(step *runner.Step, numRows, maxBlocks int) (stepMeta, error) {
	numTok, numSeqs := len(step.TokenIDs), len(step.Seqs)
	n := 4*numTok + numRows + numSeqs*maxBlocks
	if err := b.growMeta(n); err != nil {
		return stepMeta{}, err
	}
	h := b.hostMeta[:n]
	copy(h, step.TokenIDs)
	copy(h[numTok:], step.Positions)
	copy(h[2*numTok:], step.SlotMapping)
	seqOf, rows := h[3*numTok:4*numTok], h[4*numTok:4*numTok+numRows]
	tables := h[4*numTok+numRows:]
	r := 0
	for si, s := range step.Seqs {
		for t := s.Start; t < s.Start+s.Len; t++ {
			seqOf[t] = int32(si)
		}
		first, numLogits := s.LogitRows()
		for t := first; t < first+numLogits; t++ {
			rows[r] = int32(t)
			r++
		}
		row := tables[si*maxBlocks : (si+1)*maxBlocks]
		clear(row[copy(row, s.BlockTable[:min(len(s.BlockTable), maxBlocks)]):])
	}
	if err := b.dev.CopyHtoD(b.meta, i32Bytes(h)); err != nil {
		return stepMeta{}, err
	}
	at := func(i int) uintptr { return b.meta + uintptr(4*i) }
	return stepMeta{
		tokens: at(0), positions: at(numTok), slots: at(2 * numTok), tokSeq: at(3 * numTok),
		rows: at(4 * numTok), blockTables: at(4*numTok + numRows),
	}, nil
}

// growMeta makes the metadata buffers hold n int32s.
func (b *Backend) growMeta(n int) error {
	if n <= b.capMeta {
		return nil
	}
	c := max(n, 2*b.capMeta)
	b.release(b.meta)
	b.capMeta = 0
	p, err := b.malloc(int64(c) * 4)
	if err != nil {
		return fmt.Errorf("cuda: step metadata: %w", err)
	}
	b.meta, b.capMeta = p, c
	b.hostMeta = make([]int32, c)
	return nil
}

// check validates step (runner.Step.Validate) and returns its shape: the
// logits and hidden rows, the longest attention span (positions) and the
// longest block table needed.
func (b *Backend) check(step *runner.Step, numLogits int) (runner.Shape, error) {
	sh, err := step.Validate(runner.Limits{VocabSize: b.cfg.VocabSize, NumBlocks: b.numBlocks, BlockSize: b.blockSize,
		MaxContext: b.ropeLen, Dim: b.cfg.Dim}, numLogits)
	if err != nil {
		return sh, fmt.Errorf("cuda: %w", err)
	}
	return sh, nil
}
