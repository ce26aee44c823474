package runner

import (
	"math"
	"slices"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/wire"
)

// pooling is one embedding request's pooled hidden states in the making.
type pooling struct {
	sum  []float64 // [Dim] Σ of the rows pooled so far (MEAN), or the first (CLS)
	all  []float32 // [rows][Dim] every row so far (NONE)
	rows int       // prompt positions 0..rows-1 are pooled
}

// hiddenRows is which hidden-state rows it's chunk needs: the last
// token's when the chunk ends the prompt (LAST), every token's (MEAN),
// the first chunk's (CLS, which keeps row 0).
func hiddenRows(it *batch.Item) HiddenRows {
	if it.Pooling == nil {
		return HiddenNone
	}
	switch it.Pooling.PoolingType {
	case wire.PoolingMean, wire.PoolingNone:
		return HiddenAll
	case wire.PoolingCLS:
		if it.Start == 0 {
			return HiddenAll
		}
		return HiddenNone
	}
	if it.Sample {
		return HiddenLast
	}
	return HiddenNone
}

// pool takes it's hidden rows ([n][Dim]) from the last Forward into its
// pooling, and returns the embedding when the chunk ends the prompt (nil
// before). Rows of positions pooled before (a chunk computed again after
// a preemption) are skipped.
func (r *Runner) pool(it *batch.Item, rows []float32) []float32 {
	dim, typ := r.dim, it.Pooling.PoolingType
	switch typ {
	case wire.PoolingMean, wire.PoolingCLS, wire.PoolingNone:
	case wire.PoolingRank: // the head over the last prompt token's row
		if !it.Sample || r.classifier == nil {
			return nil
		}
		return r.classifier.Apply(rows[:dim])
	default: // LAST: the one row of the chunk that ends the prompt
		if !it.Sample {
			return nil
		}
		return finishPooled(slices.Clone(rows[:dim]), it.Pooling)
	}
	p := r.pools[it.RequestID]
	if p == nil {
		p = &pooling{sum: make([]float64, dim)}
		r.pools[it.RequestID] = p
	}
	for j := range len(rows) / dim {
		if it.Start+j != p.rows {
			continue
		}
		row := rows[j*dim : (j+1)*dim]
		switch {
		case typ == wire.PoolingNone:
			p.all = append(p.all, row...)
		case typ == wire.PoolingMean || p.rows == 0: // CLS: the first row only
			for d, x := range row {
				p.sum[d] += float64(x)
			}
		}
		p.rows++
	}
	if !it.Sample {
		return nil
	}
	if typ == wire.PoolingNone {
		var out []float32
		for j := range p.rows {
			out = append(out, finishPooled(slices.Clone(p.all[j*dim:(j+1)*dim]), it.Pooling)...)
		}
		return out
	}
	n := 1.0 // CLS
	if typ == wire.PoolingMean {
		n = float64(max(p.rows, 1))
	}
	out := make([]float32, dim)
	for d, s := range p.sum {
		out[d] = float32(s / n)
	}
	return finishPooled(out, it.Pooling)
}

// finishPooled keeps v's first Dimensions values (Matryoshka) and
// L2-normalizes them with Normalize.
func finishPooled(v []float32, p *wire.PoolingParams) []float32 {
	if p.Dimensions > 0 && p.Dimensions < len(v) {
		v = v[:p.Dimensions]
	}
	if p.Normalize {
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		if n := math.Sqrt(ss); n > 0 {
			inv := 1 / math.Max(n, 1e-12)
			for i, x := range v {
				v[i] = float32(float64(x) * inv)
			}
		}
	}
	return v
}

// samplePooled pools item i's hidden rows of the last Forward, setting
// res.Pooled[i] when its chunk ends the prompt.
func (r *Runner) samplePooled(res *batch.Result, b *batch.Batch, i int) {
	it := &b.Items[i]
	end := len(r.hidden) / max(r.dim, 1)
	if i+1 < len(r.hiddenRow) {
		end = r.hiddenRow[i+1]
	}
	v := r.pool(it, r.hidden[r.hiddenRow[i]*r.dim:end*r.dim])
	if v == nil {
		return
	}
	if res.Pooled == nil {
		res.Pooled = make([][]float32, len(b.Items))
	}
	res.Pooled[i] = v
}
