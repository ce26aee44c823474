package cpu

import (
	"math"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Attention in flash-attention style: no row of scores longer than one
// KV block is ever held. The work is cut into tiles of up to tileTokens
// consecutive tokens of one sequence and the query heads sharing one KV
// head; a tile walks its sequence's blocks once, and each block's K
// ([D][B], 4 KiB at D = 64, B = 16) and V rows stay in L1 while every
// row of the tile (token × head) takes its scores and values through the
// multi-row kernels, so K/V are read from memory once per tile instead of
// once per (token, head).
//
// Each row keeps a running max m, denominator l and unnormalized output
// (online softmax), rescaled when m grows. A row's arithmetic depends
// only on its query, its context length and the block size, never on the
// batch, the tiling or the thread count (kernels.BlockScores and
// BlockAccum compute each row alike whatever shares the call).

const tileTokens = 16 // tokens of one sequence per tile

// attnTile is the attention of tokens [t0, t1) of Step.Seqs[seq] for
// query heads [h0, h1) (all of one KV head's group, or one head) over KV
// blocks [b0, b1). part < 0: the tile covers all its blocks and writes
// b.att; else it is one span of a split tile and leaves its unnormalized
// (m, l, acc) in parts slot part, for mergeParts.
type attnTile struct {
	seq, t0, t1, h0, h1 int32
	b0, b1              int32
	part                int32
}

// spanBlocks is the blocks of one online-softmax span. Every row starts
// afresh at each span boundary and the spans are merged in order, on one
// worker or after several, so a row's bits never depend on the split.
const spanBlocks = 16

// attnJob is causal attention of one layer over a step's tiles; worker
// w takes tiles w, w+numWorkers, ….
type attnJob struct {
	b     *Backend
	layer int
	step  *runner.Step
	tiles []attnTile
	split bool      // tiles are spans of split tiles; mergeParts finishes them
	parts []float32 // per split item: m [R], l [R][B], acc [R][D]
}

// planTiles cuts step into tiles. With fewer tiles than two per worker
// (decode of few sequences), each head gets its own tile so that the
// workers stay busy; the bits are the same either way.
func (b *Backend) planTiles(step *runner.Step) []attnTile {
	c := &b.cfg
	group := c.NumHeads / c.NumKVHeads
	tiles := b.attn.tiles[:0]
	long := false
	for si, s := range step.Seqs {
		for t0 := s.Start; t0 < s.Start+s.Len; t0 += tileTokens {
			t1 := min(t0+tileTokens, s.Start+s.Len)
			maxN := 0
			for t := t0; t < t1; t++ {
				maxN = max(maxN, int(step.Positions[t])+1)
			}
			nb := int32((maxN + b.blockSize - 1) / b.blockSize)
			long = long || nb > spanBlocks
			for h := 0; h < c.NumHeads; h += group {
				tiles = append(tiles, attnTile{int32(si), int32(t0), int32(t1), int32(h), int32(h + group), 0, nb, -1})
			}
		}
	}
	b.attn.split = false
	switch {
	case len(tiles) >= 2*b.pool.numWorkers:
	case long:
		// Few tiles over long contexts (decode at depth): one item per
		// span, whole KV groups kept, merged after (flash-decoding).
		n, part := len(tiles), int32(0)
		for i := range n {
			tl := tiles[i]
			for s0 := tl.b0; s0 < tl.b1; s0 += spanBlocks {
				tiles = append(tiles, attnTile{tl.seq, tl.t0, tl.t1, tl.h0, tl.h1, s0, min(s0+spanBlocks, tl.b1), part})
				part++
			}
		}
		tiles = append(tiles[:0], tiles[n:]...)
		b.attn.split = true
		rows := tileTokens * group
		if need := int(part) * rows * (c.HeadDim + kernels.BlockB + 1); len(b.attn.parts) < need {
			b.attn.parts = make([]float32, max(need, 2*len(b.attn.parts)))
		}
	case group > 1:
		// One head per tile, a group's heads next to each other: the
		// workers then read the same KV blocks at about the same time,
		// and the second read hits the shared cache.
		n := len(tiles)
		for i := range n {
			tl := tiles[i]
			for h := tl.h0; h < tl.h1; h++ {
				tiles = append(tiles, attnTile{tl.seq, tl.t0, tl.t1, h, h + 1, tl.b0, tl.b1, -1})
			}
		}
		tiles = append(tiles[:0], tiles[n:]...)
	}
	b.attn.tiles = tiles
	return tiles
}

func (j *attnJob) run(w, numWorkers int) {
	st := &j.b.attnScratch[w]
	for i := w; i < len(j.tiles); i += numWorkers {
		j.tile(st, j.tiles[i])
	}
}

// attnState is one worker's scratch for a tile of up to R rows.
type attnState struct {
	q      []float32   // [R][D] the rows' queries, packed
	acc    []float32   // [R][D] unnormalized outputs
	scores []float32   // [R][B] one block's scores, then weights
	m      []float32   // [R] running max
	l      []float32   // [R][B] running denominator, lane by lane (kernels.BlockSoftmax)
	rowN   []int32     // [R] positions each row attends to
	rowOut [][]float32 // [R] where each row's output goes in b.att
	sink   []float32   // [R] each row's head's sink logit (Config.AttnSinks); nil without sinks
	pm     []float32   // [R] the spans so far, merged (fold): reference
	pl     []float32   // [R][B] denominator
	pacc   []float32   // [R][D] unnormalized output
	kbuf   []float32   // [D][B] a float16 cache's keys of one block and KV head
	vbuf   []float32   // [B][D] and its values
}

// tile computes one tile's rows: over its spans, folded in order, into
// b.att; or, for a split tile's span, into its parts slot.
func (j *attnJob) tile(st *attnState, tl attnTile) {
	hd := j.b.cfg.HeadDim
	rows, maxN := j.loadRows(st, tl)
	sinks := j.b.cfg.AttnSinks
	if tl.part >= 0 {
		j.span(st, tl, rows, maxN, int(tl.b0), int(tl.b1))
		m, l, acc := j.part(tl.part, rows)
		copy(m, st.m[:rows])
		copy(l, st.l[:rows*kernels.BlockB])
		copy(acc, st.acc[:rows*hd])
		return
	}
	for s0 := int(tl.b0); s0 < int(tl.b1); s0 += spanBlocks {
		j.span(st, tl, rows, maxN, s0, min(s0+spanBlocks, int(tl.b1)))
		st.fold(rows, hd, s0 == int(tl.b0), st.m, st.l, st.acc)
	}
	st.finish(rows, hd, sinks)
}

// mergeParts finishes split tiles: each tile's spans (consecutive in
// j.tiles, the first at block 0) folded in order, as tile does on one
// worker.
func (j *attnJob) mergeParts() {
	st := &j.b.attnScratch[0]
	hd := j.b.cfg.HeadDim
	for i := 0; i < len(j.tiles); {
		rows, _ := j.loadRows(st, j.tiles[i])
		for first := true; first || i < len(j.tiles) && j.tiles[i].b0 != 0; first = false {
			m, l, acc := j.part(j.tiles[i].part, rows)
			st.fold(rows, hd, first, m, l, acc)
			i++
		}
		st.finish(rows, hd, j.b.cfg.AttnSinks)
	}
}

// part is parts slot p: m [rows], l [rows][B], acc [rows][D].
func (j *attnJob) part(p int32, rows int) (m, l, acc []float32) {
	hd, bb := j.b.cfg.HeadDim, kernels.BlockB
	c := &j.b.cfg
	size := tileTokens * (c.NumHeads / c.NumKVHeads) * (hd + bb + 1)
	slot := j.parts[int(p)*size:]
	return slot[:rows], slot[rows : rows+rows*bb], slot[rows+rows*bb : rows+rows*bb+rows*hd]
}

// loadRows fills st's per-row query, context length and output slices
// for tl's rows (token-major, then head) and returns their count and
// longest context.
func (j *attnJob) loadRows(st *attnState, tl attnTile) (rows, maxN int) {
	b, step := j.b, j.step
	hd := b.cfg.HeadDim
	nh := int(tl.h1 - tl.h0)
	rows = int(tl.t1-tl.t0) * nh
	for r := range rows {
		t, h := int(tl.t0)+r/nh, int(tl.h0)+r%nh
		n := int(step.Positions[t]) + 1 // attend to positions 0..p
		st.rowN[r] = int32(n)
		copy(st.q[r*hd:(r+1)*hd], b.q[t*b.qDim+h*hd:t*b.qDim+(h+1)*hd])
		st.rowOut[r] = b.att[t*b.qDim+h*hd : t*b.qDim+(h+1)*hd]
		if sinks := b.w.Layers[j.layer].Sinks; sinks != nil {
			st.sink[r] = sinks[h]
		}
		maxN = max(maxN, n)
	}
	return rows, maxN
}

// span runs the rows of tl over blocks [b0, b1) from a fresh state into
// st.m, st.l, st.acc.
func (j *attnJob) span(st *attnState, tl attnTile, rows, maxN, b0, b1 int) {
	b := j.b
	c := &b.cfg
	hd, bs := c.HeadDim, b.blockSize
	kvh := int(tl.h0) / (c.NumHeads / c.NumKVHeads)
	scale := b.scale
	table := j.step.Seqs[tl.seq].BlockTable
	q, acc, l := st.q[:rows*hd], st.acc[:rows*hd], st.l[:rows*kernels.BlockB]
	for r := range rows {
		st.m[r] = float32(math.Inf(-1))
	}
	clear(acc)
	clear(l)
	win := 0 // positions a row attends to, its own included; 0: all before it
	if c.Local(j.layer) {
		win = c.SlidingWindow
		b0 = max(b0, st.windowStart(rows, win)/bs)
	}
	if bs != kernels.BlockB {
		j.spanAnyBlock(st, rows, maxN, b0, b1, table, kvh, scale, win)
		return
	}
	sc := st.scores[:rows*bs]
	if b.kv16 != nil && kernels.HalfDirect(hd) { // float16 blocks read in place
		kc, vc := b.layerKV16(j.layer)
		for blk := b0; blk < b1; blk++ {
			pos := blk * bs
			np := min(bs, maxN-pos)
			kOff, vOff := b.blockOffsets(int(table[blk]), kvh)
			kernels.BlockScoresHalf(sc, q, kc[kOff:], scale)
			j.capScores(sc)
			st.maskWindow(sc, rows, pos, win)
			kernels.BlockSoftmax(sc, st.rowN[:rows], pos, st.m[:rows], l, acc, hd)
			kernels.BlockAccumHalf(acc, hd, sc, np, vc[vOff:], b.kvDim)
		}
		return
	}
	for blk := b0; blk < b1; blk++ {
		pos := blk * bs
		np := min(bs, maxN-pos)
		k, v, stride := j.block(st, int(table[blk]), kvh, np)
		kernels.BlockScores(sc, q, k, scale)
		j.capScores(sc)
		st.maskWindow(sc, rows, pos, win)
		kernels.BlockSoftmax(sc, st.rowN[:rows], pos, st.m[:rows], l, acc, hd)
		kernels.BlockAccum(acc, hd, sc, np, v, stride)
	}
}

// capScores soft-caps scores, c·tanh(s/c), when the model does (Gemma
// 2's attn_logit_softcapping); before the window's mask, whose scores
// it must not cap.
func (j *attnJob) capScores(sc []float32) {
	if c := j.b.cfg.AttnSoftcap; c > 0 {
		kernels.Softcap(sc, float32(c))
	}
}

// maskedScore stands for a score outside a row's sliding window. Finite,
// so that a row whose first attended block is all masked gets a finite
// running max (not −Inf − −Inf = NaN); its weights there are then
// rescaled by exp(maskedScore − m) = 0 at the row's first real score,
// and outside the first block they are exp(maskedScore − m) = 0 (or the
// AVX2 exp's floor, 1.2e-38) from the start. Every row attends at least
// to its own position, so its real scores always come.
const maskedScore = -1e30

// windowStart is the first position any of the rows' windows of win
// positions reaches.
func (st *attnState) windowStart(rows, win int) int {
	lo := math.MaxInt
	for r := range rows {
		lo = min(lo, max(0, int(st.rowN[r])-win))
	}
	return lo
}

// maskWindow sets the scores sc ([rows][B], block at pos) of positions
// before each row's window of win positions to maskedScore; win 0 masks
// nothing.
func (st *attnState) maskWindow(sc []float32, rows, pos, win int) {
	if win == 0 {
		return
	}
	bb := kernels.BlockB
	for r := range rows {
		if lo := int(st.rowN[r]) - win; lo > pos {
			row := sc[r*bb : (r+1)*bb]
			for i := range min(lo-pos, bb) {
				row[i] = maskedScore
			}
		}
	}
}

// blockOffsets is where KV head kvh's keys ([D][B]) and first value row
// (then every kvDim) of cache block blk start in a layer's K and V.
func (b *Backend) blockOffsets(blk, kvh int) (kOff, vOff int) {
	hd, bs := b.cfg.HeadDim, b.blockSize
	return (blk*b.cfg.NumKVHeads + kvh) * hd * bs, blk*bs*b.kvDim + kvh*hd
}

// fold merges one span's unnormalized (m, l, acc) into the running
// (pm, pl, pacc): copied when first, else both scaled to the larger
// reference and added.
func (st *attnState) fold(rows, hd int, first bool, m, l, acc []float32) {
	bb := kernels.BlockB
	if first {
		copy(st.pm[:rows], m[:rows])
		copy(st.pl[:rows*bb], l[:rows*bb])
		copy(st.pacc[:rows*hd], acc[:rows*hd])
		return
	}
	for r := range rows {
		if math.IsInf(float64(m[r]), -1) {
			continue // the row ends before this span
		}
		ref := max(st.pm[r], m[r])
		fo := float32(math.Exp(float64(st.pm[r] - ref)))
		fa := float32(math.Exp(float64(m[r] - ref)))
		po, a := st.pacc[r*hd:(r+1)*hd], acc[r*hd:(r+1)*hd]
		for i := range po {
			po[i] = po[i]*fo + a[i]*fa
		}
		pl, sl := st.pl[r*bb:(r+1)*bb], l[r*bb:(r+1)*bb]
		for i := range pl {
			pl[i] = pl[i]*fo + sl[i]*fa
		}
		st.pm[r] = ref
	}
}

// finish writes the rows' normalized outputs: pacc / Σ pl; with sinks,
// the denominator adds e^(sink − pm) (ggml's soft_max with sinks), the
// sum rescaled to the sink's reference when the sink is the larger.
func (st *attnState) finish(rows, hd int, sinks bool) {
	bb := kernels.BlockB
	for r := range rows {
		var sum float32
		for _, v := range st.pl[r*bb : (r+1)*bb] {
			sum += v
		}
		scale := 1 / sum
		if s, ref := st.sink[r], st.pm[r]; sinks && s > ref {
			f := float32(math.Exp(float64(ref - s)))
			scale = f / (sum*f + 1)
		} else if sinks {
			scale = 1 / (sum + float32(math.Exp(float64(s-ref))))
		}
		out := st.rowOut[r]
		copy(out, st.pacc[r*hd:(r+1)*hd])
		kernels.Scale(out, scale)
	}
}

// softmaxStep is kernels.BlockSoftmax of row r for any block size: s
// (the block's attended scores) become weights against the row's running
// max, its output so far rescaled when the max grows; the denominator
// lives in the row's first lane of l.
func (st *attnState) softmaxStep(r int, s []float32, out []float32) {
	bm := s[0]
	for _, v := range s[1:] {
		bm = max(bm, v)
	}
	l := &st.l[r*kernels.BlockB] // one lane holds the whole sum here
	if bm > st.m[r] {
		if *l != 0 {
			f := float32(math.Exp(float64(st.m[r] - bm)))
			*l *= f
			kernels.Scale(out, f)
		}
		st.m[r] = bm
	}
	*l += kernels.ExpShift(s, st.m[r])
}

// spanAnyBlock is span's block walk for block sizes other than
// kernels.BlockB: one row and block at a time.
// Rows skip the positions before their window of win (0: none).
func (j *attnJob) spanAnyBlock(st *attnState, rows, maxN, b0, b1 int, table []int32, kvh int, scale float32, win int) {
	hd, bs := j.b.cfg.HeadDim, j.b.blockSize
	for blk := b0; blk < b1; blk++ {
		pos := blk * bs
		k, v, stride := j.block(st, int(table[blk]), kvh, min(bs, maxN-pos))
		for r := range rows {
			n := int(st.rowN[r])
			off := 0 // the row's first position in the block
			if win > 0 {
				off = max(0, n-win-pos)
			}
			if pos+off >= n || off >= bs {
				continue
			}
			s := st.scores[:min(bs, n-pos)]
			kernels.DotCols(s, st.q[r*hd:(r+1)*hd], k, bs, scale)
			j.capScores(s)
			s = s[off:]
			out := st.acc[r*hd : (r+1)*hd]
			st.softmaxStep(r, s, out)
			kernels.AddRows(out, s, v[off*stride:], stride)
		}
	}
}

// block returns KV head kvh's keys ([D][B]) and first n value rows
// (stride floats apart) of cache block blk in this layer: slices of a
// float32 cache, or a float16 cache's converted into the worker's scratch
// (where the kernels cannot read it in place).
func (j *attnJob) block(st *attnState, blk, kvh, n int) (k, v []float32, stride int) {
	b := j.b
	hd := b.cfg.HeadDim
	kOff, vOff := b.blockOffsets(blk, kvh)
	if b.kv16 == nil {
		kc, vc := b.layerKV(j.layer)
		return kc[kOff:], vc[vOff:], b.kvDim
	}
	kc, vc := b.layerKV16(j.layer)
	kernels.HalfToFloat(st.kbuf, kc[kOff:])
	for p := range n {
		kernels.HalfToFloat(st.vbuf[p*hd:(p+1)*hd], vc[vOff+p*b.kvDim:])
	}
	return st.kbuf, st.vbuf, hd
}

// newAttnScratch sizes one attnState per worker.
func (b *Backend) newAttnScratch() {
	c := &b.cfg
	rows := tileTokens * (c.NumHeads / c.NumKVHeads)
	b.attnScratch = make([]attnState, b.pool.numWorkers)
	for w := range b.attnScratch {
		b.attnScratch[w] = attnState{
			q:      make([]float32, rows*c.HeadDim),
			acc:    make([]float32, rows*c.HeadDim),
			scores: make([]float32, rows*max(b.blockSize, kernels.BlockB)),
			m:      make([]float32, rows),
			l:      make([]float32, rows*kernels.BlockB),
			rowN:   make([]int32, rows),
			rowOut: make([][]float32, rows),
			sink:   make([]float32, rows),
			pm:     make([]float32, rows),
			pl:     make([]float32, rows*kernels.BlockB),
			pacc:   make([]float32, rows*c.HeadDim),
		}
		if b.kvDtype == KVFloat16 {
			b.attnScratch[w].kbuf = make([]float32, c.HeadDim*b.blockSize)
			b.attnScratch[w].vbuf = make([]float32, b.blockSize*c.HeadDim)
		}
	}
}

// attnWork is the multiply-adds of a step's attention: per token and
// head, 2·D per attended position.
func (b *Backend) attnWork(step *runner.Step) int {
	n := 0
	for _, p := range step.Positions {
		n += int(p) + 1
	}
	return n * b.cfg.NumHeads * b.cfg.HeadDim * 2
}
