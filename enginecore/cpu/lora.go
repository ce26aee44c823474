package cpu

import (
	"fmt"
	"slices"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// LoadLoRA loads the LoRA adapter at path (a GGUF file, or a PEFT
// directory) for this backend's model, refusing ranks above maxRank (0:
// any).
func (b *Backend) LoadLoRA(path string, maxRank int) (*lora.Adapter, error) {
	c := &b.cfg
	return lora.Load(path, lora.Base{Arch: c.Arch, NumLayers: c.NumLayers, MaxRank: maxRank, Shape: b.loraShape,
		PermuteQK: loader.PermutesQK(*c), Heads: c.NumHeads, KVHeads: c.NumKVHeads, HeadDim: c.HeadDim})
}

// loraShape is lora.Base.Shape: the [In, Out] of a matrix this backend
// adapts. The LM head is adapted as output.weight even when the model
// ties it to token_embd (a PEFT adapter's lm_head: its update goes to the
// logits, not to the embedding), and a mixture's experts are not adapted.
func (b *Backend) loraShape(name string) (in, out int, ok bool) {
	var t *model.Tensor
	switch name {
	case "token_embd.weight":
		t = b.w.TokenEmbed
	case "output.weight":
		t = b.w.Output
	default:
		l, kind, ok := lora.LayerTensor(name)
		if !ok || l >= len(b.w.Layers) {
			return 0, 0, false
		}
		w := &b.w.Layers[l]
		t = map[string]*model.Tensor{"attn_q": w.Wq, "attn_k": w.Wk, "attn_v": w.Wv, "attn_output": w.Wo,
			"ffn_gate": w.W1, "ffn_up": w.W3, "ffn_down": w.W2}[kind]
	}
	if t == nil || len(t.Shape) != 2 {
		return 0, 0, false
	}
	return t.Shape[0], t.Shape[1], true
}

// hasLoRA reports whether any Seq of step applies an adapter.
func hasLoRA(step *runner.Step) bool {
	for i := range step.Seqs {
		if len(step.Seqs[i].LoRA) > 0 {
			return true
		}
	}
	return false
}

// loraGroup is one adapter of a step and the token spans that apply it.
type loraGroup struct {
	a     *lora.Adapter
	spans []loraSpan
	n     int // tokens, Σ spans
}

// loraSpan is tokens [from, to) of Step.TokenIDs applying an adapter at
// the user's scale.
type loraSpan struct {
	from, to int
	scale    float32
}

// loraPacked is a pair's matrices packed for the kernels: A as R rows of
// In, B as Out rows of R.
type loraPacked struct{ a, b *kernels.Matrix }

// checkLoRA refuses adapters loaded for another model shape, groups the
// step's tokens by adapter (b.loraGroups), so each pair's matrices are
// read once per step however many requests apply it, and packs an
// adapter's pairs on its first step.
func (b *Backend) checkLoRA(step *runner.Step) error {
	b.loraGroups = b.loraGroups[:0]
	for i := range step.Seqs {
		s := &step.Seqs[i]
		for _, u := range s.LoRA {
			if u.Adapter == nil || len(u.Adapter.Layers) != b.cfg.NumLayers || u.Adapter.Arch != b.cfg.Arch {
				return fmt.Errorf("%w: seq %d: a LoRA adapter not loaded for this model", ErrInvalidStep, i)
			}
			if u.Scale == 0 {
				continue
			}
			g := slices.IndexFunc(b.loraGroups, func(g loraGroup) bool { return g.a == u.Adapter })
			if g < 0 {
				if err := packLoRA(u.Adapter); err != nil {
					return err
				}
				b.loraGroups = append(b.loraGroups, loraGroup{a: u.Adapter})
				g = len(b.loraGroups) - 1
			}
			gr := &b.loraGroups[g]
			if k := len(gr.spans) - 1; k >= 0 && gr.spans[k].to == s.Start && gr.spans[k].scale == u.Scale {
				gr.spans[k].to += s.Len // the next request's tokens, at the same scale: one span
			} else {
				gr.spans = append(gr.spans, loraSpan{s.Start, s.Start + s.Len, u.Scale})
			}
			gr.n += s.Len
		}
	}
	return nil
}

// packLoRA packs every pair of a (but the embedding's, looked up by
// row) for the kernels, once.
func packLoRA(a *lora.Adapter) error {
	pairs := []*lora.Pair{a.Output}
	for l := range a.Layers {
		pairs = append(pairs, a.Layers[l][:]...)
	}
	for _, p := range pairs {
		if p == nil || p.Packed != nil {
			continue
		}
		bt := make([]float32, p.Out*p.R) // B, [Out][R]
		for k := range p.R {
			for o := range p.Out {
				bt[o*p.R+k] = p.Bt[k*p.Out+o]
			}
		}
		var pk loraPacked
		for _, m := range []struct {
			dst     **kernels.Matrix
			in, out int
			v       []float32
		}{{&pk.a, p.In, p.R, p.A}, {&pk.b, p.R, p.Out, bt}} {
			t, err := model.NewTensor("lora", model.F32, []int{m.in, m.out}, m.v)
			if err == nil {
				*m.dst, err = kernels.Pack(t)
			}
			if err != nil {
				return fmt.Errorf("cpu: LoRA adapter %s: %w", a.Path, err)
			}
		}
		p.Packed = &pk
	}
	return nil
}

// loraOut is one matrix a LoRA step updates: its target and output
// ([T][Out]).
type loraOut struct {
	t   lora.Target
	out []float32
}

// loraLayer adds the step's adapters' updates of layer l's matrices outs
// (up to three with the same input x, [T][In]: Q, K, V or gate, up).
func (b *Backend) loraLayer(l int, x []float32, outs ...loraOut) {
	var pairs [3]*lora.Pair
	var dst [3][]float32
	for gi := range b.loraGroups {
		g := &b.loraGroups[gi]
		n := 0
		for _, o := range outs {
			if p := g.a.Layers[l][o.t]; p != nil {
				pairs[n], dst[n] = p, o.out
				n++
			}
		}
		if n > 0 {
			b.loraRows(g, pairs[:n], x, dst[:n])
		}
	}
}

// loraRows applies pairs ps (same In) of group g to its tokens t_i,
// pairs[j]'s update into outs[j]: the inputs gathered into xg ([n][In];
// x itself when the group is one span), ax_j = xg·A_jᵀ ([n][R_j]) for
// every pair in one parallel matmul, scaled per span, then d = ax_j·B_jᵀ
// ([n][Out_j]) and out_j[t_i] += d[i]. Rank-R work is about
// R·(In+Out)/(In·Out) of the base matmul's.
func (b *Backend) loraRows(g *loraGroup, ps []*lora.Pair, x []float32, outs [][]float32) {
	n, in := g.n, ps[0].In
	xg := x[g.spans[0].from*in : g.spans[0].to*in]
	if len(g.spans) > 1 {
		b.loraX = grown(b.loraX, n*in)
		xg = b.loraX[:n*in]
		i := 0
		for _, sp := range g.spans {
			copy(xg[i*in:], x[sp.from*in:sp.to*in])
			i += sp.to - sp.from
		}
	}
	var ops [3]matmulOp
	var ax [3][]float32
	need := 0
	for _, p := range ps {
		need += n * p.R
	}
	b.loraAX = grown(b.loraAX, need)
	off := 0
	for j, p := range ps {
		ax[j] = b.loraAX[off : off+n*p.R]
		off += n * p.R
		ops[j] = matmulOp{out: ax[j], m: p.Packed.(*loraPacked).a}
	}
	b.matmul(xg, n, ops[:len(ps)]...)
	for j, p := range ps {
		i := 0
		for _, sp := range g.spans {
			if sc := g.a.Scale(p, sp.scale); sc != 1 {
				scaleVec(ax[j][i*p.R:(i+sp.to-sp.from)*p.R], sc)
			}
			i += sp.to - sp.from
		}
		b.loraD = grown(b.loraD, n*p.Out)
		d := b.loraD[:n*p.Out]
		b.matmul(ax[j], n, matmulOp{out: d, m: p.Packed.(*loraPacked).b})
		i = 0
		for _, sp := range g.spans {
			rows := sp.to - sp.from
			add(outs[j][sp.from*p.Out:sp.to*p.Out], d[i*p.Out:(i+rows)*p.Out])
			i += rows
		}
	}
}

// grown is s with room for n values.
func grown(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s
}

// loraEmbed adds token t's embedding update to x ([Dim]): Σ_k
// s·A[id][k]·Bt[k] over the adapters of its Seq.
func (b *Backend) loraEmbed(step *runner.Step, t int, id int32, x []float32) {
	for _, u := range step.Seqs[b.tokSeq[t]].LoRA {
		p := u.Adapter.Embed
		if p == nil || u.Scale == 0 {
			continue
		}
		sc := u.Adapter.Scale(p, u.Scale)
		row := p.A[int(id)*p.R : (int(id)+1)*p.R]
		for k, a := range row {
			kernels.AddScaled(x, sc*a, p.Bt[k*p.Out:(k+1)*p.Out])
		}
	}
}

// loraLogits adds the LM head adapters' update to the logits rows
// ([rows][V]) from their inputs xl ([rows][Dim]), rows in LogitRows order.
func (b *Backend) loraLogits(step *runner.Step, xl, logits []float32) {
	r := 0
	for si := range step.Seqs {
		s := &step.Seqs[si]
		_, n := s.LogitRows()
		for _, u := range s.LoRA {
			if p := u.Adapter.Output; p != nil && u.Scale != 0 && n > 0 {
				g := loraGroup{a: u.Adapter, spans: []loraSpan{{r, r + n, u.Scale}}, n: n}
				b.loraRows(&g, []*lora.Pair{p}, xl, [][]float32{logits})
			}
		}
		r += n
	}
}
