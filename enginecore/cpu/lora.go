package cpu

import (
	"fmt"
	"regexp"
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
// adapts. A tied LM head is token_embd (llama.cpp adapts it under that
// name only), and a mixture's experts are not adapted.
func (b *Backend) loraShape(name string) (in, out int, ok bool) {
	var t *model.Tensor
	switch name {
	case "token_embd.weight":
		t = b.w.TokenEmbed
	case "output.weight":
		if b.w.Output != b.w.TokenEmbed {
			t = b.w.Output
		}
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

// checkLoRA refuses adapters loaded for another model shape.
func (b *Backend) checkLoRA(step *runner.Step) error {
	for i := range step.Seqs {
		for _, u := range step.Seqs[i].LoRA {
			if u.Adapter == nil || len(u.Adapter.Layers) != b.cfg.NumLayers || u.Adapter.Arch != b.cfg.Arch {
				return fmt.Errorf("%w: seq %d: a LoRA adapter not loaded for this model", ErrInvalidStep, i)
			}
		}
	}
	return nil
}

// loraLayer adds every Seq's adapters' update of layer l's matrix t to
// out ([T][p.Out]) from its input x ([T][p.In]): out += s·Bᵀ(A·x) per
// token. Single-threaded: rank-R work is about R·(In+Out)/(In·Out) of the
// matmul's.
func (b *Backend) loraLayer(step *runner.Step, l int, t lora.Target, x, out []float32) {
	for si := range step.Seqs {
		s := &step.Seqs[si]
		for _, u := range s.LoRA {
			if p := u.Adapter.Layers[l][t]; p != nil && u.Scale != 0 {
				loraRows(p, u.Adapter.Scale(p, u.Scale), x, out, s.Start, s.Start+s.Len)
			}
		}
	}
}

// loraRows does out[t] += sc·Bᵀ(A·x[t]) for tokens t in [from, to).
func loraRows(p *lora.Pair, sc float32, x, out []float32, from, to int) {
	for t := from; t < to; t++ {
		xr, or := x[t*p.In:(t+1)*p.In], out[t*p.Out:(t+1)*p.Out]
		for k := range p.R {
			ax := kernels.Dot(p.A[k*p.In:(k+1)*p.In], xr)
			kernels.AddScaled(or, sc*ax, p.Bt[k*p.Out:(k+1)*p.Out])
		}
	}
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
			if p := u.Adapter.Output; p != nil && u.Scale != 0 {
				loraRows(p, u.Adapter.Scale(p, u.Scale), xl, logits, r, r+n)
			}
		}
		r += n
	}
}
