package cpu

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// refModel is the test oracle: a straightforward llama2.c-style forward of
// one sequence, one token at a time, with a contiguous KV cache and
// float64 arithmetic throughout, on the dequantized weights. It shares no
// code with the Backend (RoPE frequencies and their scaling included).
type refModel struct {
	cfg     model.Config
	embed   []float32 // [V][Dim]
	output  []float32 // [V][Dim]
	outNorm []float32
	layers  []refLayer
	freq    []float64     // [D/2]
	freqL   []float64     // [D/2] local layers' (LocalRopeTheta); nil: freq
	k       [][][]float64 // [L][pos][Hkv*D] keys after RoPE
	v       [][][]float64 // [L][pos][Hkv*D]
}

type refLayer struct {
	model.Layer    // norms, biases
	wq, wk, wv, wo []float32
	w1, w3, w2     []float32
	router         []float32     // [E][Dim]
	experts        [][3]float32s // [E] {gate, up, down}
	shared         [3]float32s
}

type float32s = []float32

func newRef(t testing.TB, cfg model.Config, w *model.Weights) *refModel {
	t.Helper()
	deq := func(x *model.Tensor) []float32 {
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := &refModel{
		cfg: cfg, embed: deq(w.TokenEmbed), output: deq(w.Output), outNorm: w.OutNorm,
		k: make([][][]float64, cfg.NumLayers), v: make([][][]float64, cfg.NumLayers),
	}
	deqMaybe := func(x *model.Tensor) []float32 {
		if x == nil {
			return nil
		}
		return deq(x)
	}
	for _, l := range w.Layers {
		rl := refLayer{Layer: l,
			wq: deq(l.Wq), wk: deq(l.Wk), wv: deq(l.Wv), wo: deq(l.Wo), w1: deqMaybe(l.W1), w3: deqMaybe(l.W3), w2: deqMaybe(l.W2),
			router: deqMaybe(l.Router)}
		for _, x := range append(l.Experts, l.Shared) {
			rl.experts = append(rl.experts, [3]float32s{deqMaybe(x.W1), deqMaybe(x.W3), deqMaybe(x.W2)})
		}
		rl.experts, rl.shared = rl.experts[:len(l.Experts)], rl.experts[len(l.Experts)]
		r.layers = append(r.layers, rl)
	}
	d := float64(cfg.RotaryDim())
	sc := cfg.RopeScaling
	for i := 0; i < cfg.RotaryDim()/2; i++ {
		f := 1 / math.Pow(cfg.RopeTheta, 2*float64(i)/d)
		switch {
		case sc.Type == "yarn":
			// transformers' _compute_yarn_parameters: the correction range
			// of dims rotating between beta_fast and beta_slow times over
			// the original context, a linear ramp across it.
			if w.RopeFreqs != nil {
				f /= float64(w.RopeFreqs[i])
			}
			corr := func(rot float64) float64 {
				return d * math.Log(float64(sc.OrigContextLen)/(rot*2*math.Pi)) / (2 * math.Log(cfg.RopeTheta))
			}
			low, high := math.Max(0, math.Floor(corr(32))), math.Min(d-1, math.Ceil(corr(1)))
			if sc.BetaFast != 0 {
				low = math.Max(0, math.Floor(corr(sc.BetaFast)))
			}
			if sc.BetaSlow != 0 {
				high = math.Min(d-1, math.Ceil(corr(sc.BetaSlow)))
			}
			extrapolate := 1 - math.Min(1, math.Max(0, (float64(i)-low)/math.Max(high-low, 0.001)))
			f = f/sc.Factor*(1-extrapolate) + f*extrapolate
		case w.RopeFreqs != nil:
			f /= float64(w.RopeFreqs[i])
		case sc.Type == "linear":
			f /= sc.Factor
		case sc.Type == "llama3":
			// Wavelengths above orig/low are slowed by Factor, below
			// orig/high kept, and interpolated in between.
			lambda := 2 * math.Pi / f
			ratio := float64(sc.OrigContextLen) / lambda // = orig·f/2π
			switch {
			case ratio < sc.LowFreqFactor:
				f /= sc.Factor
			case ratio <= sc.HighFreqFactor:
				a := (ratio - sc.LowFreqFactor) / (sc.HighFreqFactor - sc.LowFreqFactor)
				f = a*f + (1-a)*f/sc.Factor
			}
		}
		r.freq = append(r.freq, f)
		if cfg.LocalRopeTheta > 0 {
			r.freqL = append(r.freqL, 1/math.Pow(cfg.LocalRopeTheta, 2*float64(i)/d))
		}
	}
	return r
}

// refMatvec returns W[n][len(x)] · x.
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

// headwise applies f to each head of x in place.
func headwise(x []float64, d int, f func(head []float64) []float64) {
	for h := 0; h < len(x)/d; h++ {
		copy(x[h*d:(h+1)*d], f(x[h*d:(h+1)*d]))
	}
}

// rope rotates every head of x in place for position pos in layer l.
func (r *refModel) rope(x []float64, pos, l int) {
	d := r.cfg.HeadDim
	freq, m := r.freq, 1.0
	if r.cfg.RopeAttnFactor > 0 {
		m = r.cfg.RopeAttnFactor
	}
	if r.freqL != nil && r.local(l) {
		freq, m = r.freqL, 1 // unscaled
	} else if sc := r.cfg.RopeScaling; sc.Type == "yarn" {
		m *= 0.1*math.Log(sc.Factor) + 1 // transformers' default attention_factor
	}
	headwise(x, d, func(head []float64) []float64 {
		for i, f := range freq {
			theta := float64(pos) * f
			a, b := 2*i, 2*i+1
			if r.cfg.RopeNeox {
				a, b = i, i+len(freq) // the rotated dims' halves; dims past 2·len(freq) stay
			}
			x0, x1 := head[a], head[b]
			head[a] = m * (x0*math.Cos(theta) - x1*math.Sin(theta))
			head[b] = m * (x0*math.Sin(theta) + x1*math.Cos(theta))
		}
		return head
	})
}

// next feeds the token at the next position and returns its logits [V].
func (r *refModel) next(tok int32) []float64 {
	c := r.cfg
	pos := len(r.k[0])
	x := make([]float64, c.Dim)
	for i := range x {
		x[i] = float64(r.embed[int(tok)*c.Dim+i])
		if c.EmbedScale > 0 {
			x[i] *= c.EmbedScale
		}
	}
	scale := 1 / math.Sqrt(float64(c.HeadDim))
	if c.AttnScale > 0 {
		scale = c.AttnScale
	}
	hd := c.HeadDim
	bias := func(v []float64, b []float32) {
		for i := range b {
			v[i] += float64(b[i])
		}
	}
	for l, w := range r.layers {
		xb := r.preNorm(x, w.AttnNorm)
		q := refMatvec(w.wq, xb, c.NumHeads*hd)
		k := refMatvec(w.wk, xb, c.NumKVHeads*hd)
		v := refMatvec(w.wv, xb, c.NumKVHeads*hd)
		bias(q, w.BQ)
		bias(k, w.BK)
		bias(v, w.BV)
		switch {
		case c.QKNormFull:
			q, k = refRMSNorm(q, w.QNorm, c.NormEps), refRMSNorm(k, w.KNorm, c.NormEps)
		case c.QKNorm:
			headwise(q, hd, func(h []float64) []float64 { return refRMSNorm(h, w.QNorm, c.NormEps) })
			headwise(k, hd, func(h []float64) []float64 { return refRMSNorm(h, w.KNorm, c.NormEps) })
		}
		if c.NoRopeLayers == nil || !c.NoRopeLayers[l] {
			r.rope(q, pos, l)
			r.rope(k, pos, l)
		}
		r.k[l] = append(r.k[l], k)
		r.v[l] = append(r.v[l], v)
		att := make([]float64, c.NumHeads*hd)
		for h := range c.NumHeads {
			kvh := h / (c.NumHeads / c.NumKVHeads)
			first := 0 // the window's first position
			if r.local(l) {
				first = max(0, pos+1-c.SlidingWindow)
			}
			scores := make([]float64, pos+1)
			for p := first; p <= pos; p++ {
				var s float64
				for d := range hd {
					s += q[h*hd+d] * r.k[l][p][kvh*hd+d]
				}
				scores[p] = s * scale
				if cp := c.AttnSoftcap; cp > 0 {
					scores[p] = cp * math.Tanh(scores[p]/cp)
				}
			}
			maxS := math.Inf(-1)
			for _, s := range scores[first:] {
				maxS = math.Max(maxS, s)
			}
			var sum float64
			for p := range scores {
				if p < first {
					scores[p] = 0
					continue
				}
				scores[p] = math.Exp(scores[p] - maxS)
				sum += scores[p]
			}
			for p, s := range scores {
				for d := range hd {
					att[h*hd+d] += s / sum * r.v[l][p][kvh*hd+d]
				}
			}
		}
		o := refMatvec(w.wo, att, c.Dim)
		if c.PostNorms {
			o = refRMSNorm(o, w.PostAttnNorm, c.NormEps)
		}
		if c.ResidualScale > 0 {
			for i := range o {
				o[i] *= c.ResidualScale
			}
		}
		for i := range x {
			x[i] += o[i]
		}
		xb = r.preNorm(x, w.FFNNorm)
		var down []float64
		if c.Sparse(l) {
			down = r.moe(&w, xb)
		} else {
			down = r.mlp([3]float32s{w.w1, w.w3, w.w2}, xb, c.FFNDim)
		}
		if c.PostNorms {
			down = refRMSNorm(down, w.PostFFNNorm, c.NormEps)
		}
		if c.ResidualScale > 0 {
			for i := range down {
				down[i] *= c.ResidualScale
			}
		}
		for i := range x {
			x[i] += down[i]
		}
	}
	logits := refMatvec(r.output, refRMSNorm(x, r.outNorm, c.NormEps), c.VocabSize)
	if c.LogitScale > 0 {
		for i := range logits {
			logits[i] /= c.LogitScale
		}
	}
	if cp := c.FinalSoftcap; cp > 0 {
		for i, v := range logits {
			logits[i] = cp * math.Tanh(v/cp)
		}
	}
	return logits
}

// preNorm is a sublayer's input: x RMS-normalized with gain g, or x
// without pre-norms.
func (r *refModel) preNorm(x []float64, g []float32) []float64 {
	if r.cfg.NoPreNorms {
		return slices.Clone(x)
	}
	return refRMSNorm(x, g, r.cfg.NormEps)
}

// mlp is the gated MLP of weights {gate, up, down}, f wide, on xb.
func (r *refModel) mlp(w [3]float32s, xb []float64, f int) []float64 {
	gate := refMatvec(w[0], xb, f)
	up := refMatvec(w[1], xb, f)
	for i, g := range gate {
		if r.cfg.FFNAct == model.ActGELUTanh {
			gate[i] = 0.5 * g * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(g+0.044715*g*g*g))) * up[i]
		} else {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
	}
	return refMatvec(w[2], gate, r.cfg.Dim)
}

// moe is the mixture of experts on xb, written from transformers'
// MixtralSparseMoeBlock and Qwen2MoeSparseMoeBlock: softmax over the
// router's logits, the top K by probability plus ExpertBias (weighted by
// the probabilities alone, renormalized when ExpertWeightsNorm), each
// expert's output weighted, plus the shared expert's, gated by a sigmoid
// (Qwen2-MoE) or not (GraniteMoeShared).
func (r *refModel) moe(w *refLayer, xb []float64) []float64 {
	c := r.cfg
	p := refMatvec(w.router, xb, c.NumExperts)
	maxP := math.Inf(-1)
	for _, v := range p {
		maxP = math.Max(maxP, v)
	}
	var sum float64
	for i, v := range p {
		p[i] = math.Exp(v - maxP)
		sum += p[i]
	}
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
		p[i] /= sum
	}
	sel := slices.Clone(p) // what chooses: the probabilities plus the selection bias
	for i, b := range w.ExpertBias {
		sel[i] += float64(b)
	}
	sort.SliceStable(idx, func(a, b int) bool { return sel[idx[a]] > sel[idx[b]] })
	top := idx[:c.NumExpertsUsed]
	var topSum float64
	for _, e := range top {
		topSum += p[e]
	}
	out := make([]float64, c.Dim)
	for _, e := range top {
		wt := p[e]
		if c.ExpertWeightsNorm {
			wt /= topSum
		}
		for i, v := range r.mlp(w.experts[e], xb, c.ExpertFFNDim) {
			out[i] += wt * v
		}
	}
	if c.SharedExpertFFNDim > 0 {
		g := 1.0
		if c.SharedExpertGate {
			var z float64
			for i, v := range xb {
				z += v * float64(w.SharedGate[i])
			}
			g = 1 / (1 + math.Exp(-z))
		}
		for i, v := range r.mlp(w.shared, xb, c.SharedExpertFFNDim) {
			out[i] += g * v
		}
	}
	return out
}

// local reports whether layer l attends over a sliding window.
func (r *refModel) local(l int) bool {
	return r.cfg.SlidingWindow > 0 && r.cfg.LocalLayers[l]
}
