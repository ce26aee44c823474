package cpu

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

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

var loraLayerName = regexp.MustCompile(`^blk\.(\d+)\.([a-z_]+)\.weight$`)

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
		m := loraLayerName.FindStringSubmatch(name)
		if m == nil {
			return 0, 0, false
		}
		l, err := strconv.Atoi(m[1])
		if err != nil || l >= len(b.w.Layers) {
			return 0, 0, false
		}
		w := &b.w.Layers[l]
		t = map[string]*model.Tensor{"attn_q": w.Wq, "attn_k": w.Wk, "attn_v": w.Wv, "attn_output": w.Wo,
			"ffn_gate": w.W1, "ffn_up": w.W3, "ffn_down": w.W2}[m[2]]
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
			gr.spans = append(gr.spans, loraSpan{s.Start, s.Start + s.Len, u.Scale})
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

// loraLayer adds the step's adapters' update of layer l's matrix t to out
// ([T][Out]) from its input x ([T][In]).
func (b *Backend) loraLayer(step *runner.Step, l int, t lora.Target, x, out []float32) {
	for gi := range b.loraGroups {
		g := &b.loraGroups[gi]
		if p := g.a.Layers[l][t]; p != nil {
			b.loraRows(g, p, x, out)
		}
	}
}

// loraRows applies pair p to group g's tokens t_i: their inputs gathered
// into xg ([n][In]), ax = xg·Aᵀ ([n][R]) scaled per span, d = ax·Bᵀ
// ([n][Out]), out[t_i] += d[i]: two matmuls of the kernels over all the
// group's tokens, in parallel. Rank-R work is about R·(In+Out)/(In·Out)
// of the base matmul's.
func (b *Backend) loraRows(g *loraGroup, p *lora.Pair, x, out []float32) {
	pk := p.Packed.(*loraPacked)
	n := g.n
	b.loraX = grown(b.loraX, n*p.In)
	b.loraAX = grown(b.loraAX, n*p.R)
	b.loraD = grown(b.loraD, n*p.Out)
	xg, ax, d := b.loraX[:n*p.In], b.loraAX[:n*p.R], b.loraD[:n*p.Out]
	i := 0
	for _, sp := range g.spans {
		copy(xg[i*p.In:], x[sp.from*p.In:sp.to*p.In])
		i += sp.to - sp.from
	}
	b.matmul(xg, n, matmulOp{out: ax, m: pk.a})
	i = 0
	for _, sp := range g.spans {
		if sc := g.a.Scale(p, sp.scale); sc != 1 {
			scaleVec(ax[i*p.R:(i+sp.to-sp.from)*p.R], sc)
		}
		i += sp.to - sp.from
	}
	b.matmul(ax, n, matmulOp{out: d, m: pk.b})
	i = 0
	for _, sp := range g.spans {
		rows := sp.to - sp.from
		add(out[sp.from*p.Out:sp.to*p.Out], d[i*p.Out:(i+rows)*p.Out])
		i += rows
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
				b.loraRows(&g, p, xl, logits)
			}
		}
		r += n
	}
}
