package cpu

import (
	"math"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// moeScratch is a mixture of experts' scratch, sized for capTok tokens
// (grow); routes are rebuilt by every layer.
type moeScratch struct {
	logits  []float32 // [T][E] router logits, then probabilities
	x       []float32 // [T][Dim] the rows routed to one expert, gathered
	y       []float32 // [T][Dim] an expert's output rows
	precise []bool    // [T] the gathered rows' precision flags
	routes  routes
}

// routes are a layer's routing decisions: the tokens each expert takes,
// in token order, and the weight of its output in each.
type routes struct {
	rows    [][]int32   // [E][≤T] token indices
	weights [][]float32 // [E][≤T] routing weights
	top     []int       // [K] scratch
	sel     []float32   // [E] scratch: probabilities plus the selection bias
}

// growMoE sizes the mixture-of-experts scratch for n tokens.
func (b *Backend) growMoE(n int) {
	c, s := &b.cfg, &b.moe
	s.logits = make([]float32, n*c.NumExperts)
	s.x = make([]float32, n*c.Dim)
	s.y = make([]float32, n*c.Dim)
	s.precise = make([]bool, n)
	if s.routes.rows == nil {
		s.routes = routes{rows: make([][]int32, c.NumExperts), weights: make([][]float32, c.NumExperts),
			top: make([]int, c.NumExpertsUsed), sel: make([]float32, c.NumExperts)}
	}
}

// route turns the router's logits of numTok tokens ([numTok][E], made
// probabilities in place) into r, as llama.cpp's build_moe_ffn does with
// softmax gating: each token takes the K experts of highest probability
// (plus bias, [E], when not nil: ERNIE's selection bias, which chooses
// but does not weigh; the lower index first on a tie), weighted by their
// probabilities, divided by their sum (at least 2⁻¹⁴) when
// ExpertWeightsNorm. A pure function of its inputs.
func (r *routes) route(c *model.Config, logits []float32, numTok int, bias []float32) {
	e := c.NumExperts
	for i := range r.rows {
		r.rows[i], r.weights[i] = r.rows[i][:0], r.weights[i][:0]
	}
	for t := range numTok {
		p := logits[t*e : (t+1)*e]
		softmax(p)
		sel := p
		if bias != nil {
			sel = r.sel[:e]
			for i, v := range p {
				sel[i] = v + bias[i]
			}
		}
		top := topK(sel, r.top)
		sum := float32(0)
		for _, i := range top {
			sum += p[i]
		}
		sum = max(sum, 6.103515625e-5) // ggml's clamp: the smallest normal float16
		for _, i := range top {
			w := p[i]
			if c.ExpertWeightsNorm {
				w /= sum
			}
			r.rows[i] = append(r.rows[i], int32(t))
			r.weights[i] = append(r.weights[i], w)
		}
	}
}

// softmax makes x ([n]) its softmax in place, summing in float64 as ggml
// does.
func softmax(x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		x[i] = float32(math.Exp(float64(v - m)))
		sum += float64(x[i])
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// topK fills top with the indices of the len(top) largest elements of p,
// largest first, the lower index first among equals, and returns it.
func topK(p []float32, top []int) []int {
	for k := range top {
		best := -1
		for i, v := range p {
			if best >= 0 && v <= p[best] || taken(top[:k], i) {
				continue
			}
			best = i
		}
		top[k] = best
	}
	return top
}

func taken(idx []int, i int) bool {
	for _, j := range idx {
		if j == i {
			return true
		}
	}
	return false
}

// moeLayer runs layer l's mixture of experts on the normalized rows
// b.xb ([numTok][Dim]) into b.xb2 ([numTok][Dim]): the router, then each
// expert over the rows routed to it, gathered (so an expert's weights
// are read once per step however many tokens take it), its output added
// to those rows' sums weighted; then the shared expert over every row,
// gated by σ(x·SharedGate) or not. A row's sum adds its experts in index order,
// so it does not depend on the other rows of the step.
func (b *Backend) moeLayer(l, numTok int) {
	c, s, m := &b.cfg, &b.moe, &b.layers[l]
	dim := c.Dim
	xb, out := b.xb[:numTok*dim], b.xb2[:numTok*dim]
	b.matmul(xb, numTok, matmulOp{out: s.logits[:numTok*c.NumExperts], m: m.router})
	if rb := b.w.Layers[l].RouterBias; rb != nil {
		for t := range numTok {
			add(s.logits[t*c.NumExperts:(t+1)*c.NumExperts], rb)
		}
	}
	s.routes.route(c, s.logits, numTok, b.w.Layers[l].ExpertBias)
	clear(out)
	precise := b.precise
	for x := range m.experts {
		rows := s.routes.rows[x]
		n := len(rows)
		if n == 0 {
			continue
		}
		for i, t := range rows {
			copy(s.x[i*dim:(i+1)*dim], xb[int(t)*dim:])
			s.precise[i] = precise[t]
		}
		b.precise = s.precise[:n]
		b.expert(m.experts[x], &b.w.Layers[l].Experts[x], s.x[:n*dim], n, c.ExpertFFNDim)
		for i, t := range rows {
			axpy(out[int(t)*dim:(int(t)+1)*dim], s.routes.weights[x][i], s.y[i*dim:(i+1)*dim])
		}
	}
	b.precise = precise
	if m.shared.w1 == nil {
		return
	}
	b.expert(m.shared, &b.w.Layers[l].Shared, xb, numTok, c.SharedExpertFFNDim)
	g := b.w.Layers[l].SharedGate
	for t := range numTok {
		gate := float32(1)
		if g != nil {
			z := float64(kernels.Dot(xb[t*dim:(t+1)*dim], g))
			gate = float32(1 / (1 + math.Exp(-z)))
		}
		axpy(out[t*dim:(t+1)*dim], gate, s.y[t*dim:(t+1)*dim])
	}
}

// expert runs one expert, f wide, on n rows of in ([n][Dim]) into
// b.moe.y ([n][Dim]): gate and up, the activation, down, each matrix's
// bias (src's, gpt-oss) added to its output rows.
func (b *Backend) expert(x expert, src *model.Expert, in []float32, n, f int) {
	dim := b.cfg.Dim
	hb, hb2, y := b.hb[:n*f], b.hb2[:n*f], b.moe.y[:n*dim]
	b.matmul(in, n, matmulOp{out: hb, m: x.w1}, matmulOp{out: hb2, m: x.w3})
	addRows(hb, src.B1, n)
	addRows(hb2, src.B3, n)
	gateMul(b.cfg.FFNAct, hb, hb2)
	b.matmul(hb, n, matmulOp{out: y, m: x.w2})
	addRows(y, src.B2, n)
}

// addRows adds bias ([k], nil: none) to each of the n rows of x ([n][k]).
func addRows(x, bias []float32, n int) {
	if bias == nil {
		return
	}
	k := len(bias)
	for r := range n {
		add(x[r*k:(r+1)*k], bias)
	}
}

// tasks lists x's matrices to pack from src.
func (x *expert) tasks(src model.Expert) []packTask {
	return []packTask{{&x.w1, src.W1}, {&x.w3, src.W3}, {&x.w2, src.W2}}
}

// axpy does y += a·x; both [n].
func axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}
