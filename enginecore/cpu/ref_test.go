package cpu

import (
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// refModel is the test oracle: a straightforward llama2.c-style forward of
// one sequence, one token at a time, with a contiguous KV cache and
// float64 arithmetic throughout. It shares no code with the Backend.
type refModel struct {
	cfg model.Config
	w   *model.Weights
	k   [][][]float64 // [L][pos][Hkv*D] keys after RoPE
	v   [][][]float64 // [L][pos][Hkv*D]
}

func newRef(cfg model.Config, w *model.Weights) *refModel {
	return &refModel{cfg: cfg, w: w, k: make([][][]float64, cfg.NumLayers), v: make([][][]float64, cfg.NumLayers)}
}

// matvec returns W[n][len(x)] · x.
func refMatvec(w []float32, x []float64, n int) []float64 {
	out := make([]float64, n)
	for j := range n {
		row := w[j*len(x) : (j+1)*len(x)]
		for i, xi := range x {
			out[j] += float64(row[i]) * xi
		}
	}
	return out
}

func refRMSNorm(x []float64, g []float32, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * s * float64(g[i])
	}
	return out
}

// refRope rotates every head of x in place for position pos.
func (r *refModel) rope(x []float64, pos int) {
	d := r.cfg.HeadDim
	for h := 0; h < len(x)/d; h++ {
		head := x[h*d : (h+1)*d]
		for i := 0; i < d/2; i++ {
			theta := float64(pos) * math.Pow(r.cfg.RopeTheta, -2*float64(i)/float64(d))
			a, b := 2*i, 2*i+1
			if r.cfg.RopeNeox {
				a, b = i, i+d/2
			}
			x0, x1 := head[a], head[b]
			head[a] = x0*math.Cos(theta) - x1*math.Sin(theta)
			head[b] = x0*math.Sin(theta) + x1*math.Cos(theta)
		}
	}
}

// next feeds the token at the next position and returns its logits [V].
func (r *refModel) next(tok int32) []float64 {
	c := r.cfg
	pos := len(r.k[0])
	x := make([]float64, c.Dim)
	for i := range x {
		x[i] = float64(r.w.TokenEmbed[int(tok)*c.Dim+i])
	}
	hd := c.HeadDim
	for l, w := range r.w.Layers {
		xb := refRMSNorm(x, w.AttnNorm, c.NormEps)
		q := refMatvec(w.Wq, xb, c.NumHeads*hd)
		k := refMatvec(w.Wk, xb, c.NumKVHeads*hd)
		v := refMatvec(w.Wv, xb, c.NumKVHeads*hd)
		r.rope(q, pos)
		r.rope(k, pos)
		r.k[l] = append(r.k[l], k)
		r.v[l] = append(r.v[l], v)
		att := make([]float64, c.NumHeads*hd)
		for h := range c.NumHeads {
			kvh := h / (c.NumHeads / c.NumKVHeads)
			scores := make([]float64, pos+1)
			for p := range scores {
				var s float64
				for d := range hd {
					s += q[h*hd+d] * r.k[l][p][kvh*hd+d]
				}
				scores[p] = s / math.Sqrt(float64(hd))
			}
			maxS := math.Inf(-1)
			for _, s := range scores {
				maxS = math.Max(maxS, s)
			}
			var sum float64
			for p := range scores {
				scores[p] = math.Exp(scores[p] - maxS)
				sum += scores[p]
			}
			for p, s := range scores {
				for d := range hd {
					att[h*hd+d] += s / sum * r.v[l][p][kvh*hd+d]
				}
			}
		}
		o := refMatvec(w.Wo, att, c.Dim)
		for i := range x {
			x[i] += o[i]
		}
		xb = refRMSNorm(x, w.FFNNorm, c.NormEps)
		gate := refMatvec(w.W1, xb, c.FFNDim)
		up := refMatvec(w.W3, xb, c.FFNDim)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		down := refMatvec(w.W2, gate, c.Dim)
		for i := range x {
			x[i] += down[i]
		}
	}
	return refMatvec(r.w.Output, refRMSNorm(x, r.w.OutNorm, c.NormEps), c.VocabSize)
}
