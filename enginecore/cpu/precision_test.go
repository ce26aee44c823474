package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

func TestParsePrecision(t *testing.T) {
	for i, name := range Precisions {
		p, err := ParsePrecision(name)
		if err != nil || int(p) != i || p.String() != name {
			t.Errorf("ParsePrecision(%q) = %v, %v", name, p, err)
		}
	}
	if Precision(0) != PrecisionPrompt || Precisions[0] != "prompt" {
		t.Errorf("default precision is %v, want prompt", Precision(0))
	}
	for _, bad := range []string{"", "Fast", "int8", "exact"} {
		if _, err := ParsePrecision(bad); err == nil {
			t.Errorf("ParsePrecision(%q) accepted", bad)
		}
	}
	p := PrecisionHigh
	if err := p.Set("fast"); err != nil || p != PrecisionFast {
		t.Errorf("Set(fast): %v, %v", p, err)
	}
	if err := p.Set("int8"); err == nil || p != PrecisionFast {
		t.Errorf("Set(int8): %v, %v; want an error and no change", p, err)
	}
}

// rmsErr is the RMS of got − want relative to the RMS of want.
func rmsErr(got []float32, want []float64) float64 {
	var ss, se float64
	for i, v := range want {
		ss += v * v
		se += (float64(got[i]) - v) * (float64(got[i]) - v)
	}
	return math.Sqrt(se / ss)
}

// TestPrecisionHighMatchesReference: with every token precise, quantized
// models' logits come within a few 1e-4 of the float64 oracle, many times
// closer than at int8 (TestMatchesReference allows 0.03 there).
func TestPrecisionHighMatchesReference(t *testing.T) {
	typed := func(m, e, o model.DType) model.RandomTypes { return model.RandomTypes{Matrix: m, Embed: e, Output: o} }
	for i, tt := range []struct {
		name  string
		model func() (model.Config, *model.Weights)
	}{
		{"Q4_1 tied Q8_0", randomModel(typed(model.Q4_1, model.Q8_0, 0), func(c *model.Config) { c.TiedEmbeddings = true })},
		{"Q4_K", randomModel(typed(model.Q4_K, model.Q4_K, model.Q6_K), smallK)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := tt.model()
			toks := prompt(9, uint64(i))
			ref := newRef(t, cfg, w)
			var want []float64
			for _, tok := range toks {
				want = ref.next(tok)
			}
			errs := map[Precision]float64{}
			for _, p := range []Precision{PrecisionFast, PrecisionHigh} {
				h := newHarness(t, cfg, w, 2, 32, 4, uint64(i+1))
				h.be.SetPrecision(p)
				var s seqState
				errs[p] = rmsErr(h.feed(&s, toks), want)
			}
			t.Logf("RMS error of the logits: int8 %.2g, precise %.2g", errs[PrecisionFast], errs[PrecisionHigh])
			if errs[PrecisionHigh] > 1e-3 || errs[PrecisionHigh]*10 > errs[PrecisionFast] {
				t.Fatalf("precise RMS error %.3g (int8 %.3g), want ≤ 1e-3 and 10× smaller", errs[PrecisionHigh], errs[PrecisionFast])
			}
		})
	}
}

// TestPrecisionPrompt: the default precision computes the prompt like
// PrecisionHigh and generated tokens like PrecisionFast, token by token,
// whatever else is in the batch.
func TestPrecisionPrompt(t *testing.T) {
	cfg, w := randomModel(model.RandomTypes{Matrix: model.Q4_1, Embed: model.Q8_0}, func(c *model.Config) { c.TiedEmbeddings = true })()
	toks := prompt(11, 3)
	run := func(p Precision, promptLen int) (prefill, decode []float32) {
		h := newHarness(t, cfg, w, 2, 32, 4, 9)
		h.be.SetPrecision(p)
		var s seqState
		var step runner.Step
		h.add(&step, &s, toks, true)
		step.Seqs[0].PromptLen = promptLen
		prefill = h.forward(&step)[0]
		step = runner.Step{}
		h.add(&step, &s, []int32{argmax32(prefill)}, true)
		step.Seqs[0].PromptLen = promptLen
		return prefill, h.forward(&step)[0]
	}
	highPre, _ := run(PrecisionHigh, 0)
	fastPre, _ := run(PrecisionFast, len(toks))
	promptPre, _ := run(PrecisionPrompt, len(toks))
	unknownPre, _ := run(PrecisionPrompt, 0)
	if !slices.Equal(promptPre, highPre) {
		t.Error("prompt tokens under PrecisionPrompt differ from PrecisionHigh")
	}
	if !slices.Equal(unknownPre, fastPre) {
		t.Error("with PromptLen 0 (unknown) PrecisionPrompt differs from PrecisionFast")
	}
	if slices.Equal(promptPre, fastPre) {
		t.Error("PrecisionPrompt computes the prompt exactly like PrecisionFast")
	}

	// markPrecise flags positions below each Seq's PromptLen only, for the
	// layers and for the LM head's rows.
	h := newHarness(t, cfg, w, 1, 32, 4, 0)
	var step runner.Step
	var a, b seqState
	h.add(&step, &a, prompt(5, 1), true) // prompt tokens 0..2, then 2 generated
	h.add(&step, &b, prompt(3, 2), true) // all prompt
	step.Seqs[0].PromptLen, step.Seqs[1].PromptLen = 3, 10
	h.be.grow(len(step.TokenIDs))
	if _, err := h.be.check(&step, 2*cfg.VocabSize); err != nil {
		t.Fatal(err)
	}
	h.be.markPrecise(&step)
	want := []bool{true, true, true, false, false, true, true, true}
	if fmt.Sprint(h.be.precise) != fmt.Sprint(want) || fmt.Sprint(h.be.rowPrecise) != "[false true]" {
		t.Errorf("precise tokens %v, rows %v; want %v, [false true]", h.be.precise, h.be.rowPrecise, want)
	}
}
