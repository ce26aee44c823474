package cpu

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// loraShapes are the dummy model's adaptable matrices: every layer's
// seven, the LM head and the token embedding.
func loraShapes(t *testing.T, be *Backend) map[string][2]int {
	t.Helper()
	shapes := lora.LayerShapes(be.cfg)
	shapes["output.weight"], shapes["token_embd.weight"] = [2]int{be.cfg.Dim, be.cfg.VocabSize}, [2]int{be.cfg.Dim, be.cfg.VocabSize}
	for n, s := range shapes {
		if in, out, ok := be.loraShape(n); !ok || [2]int{in, out} != s {
			t.Fatalf("the dummy's adaptable %s: %d×%d, %v; want %v", n, in, out, ok, s)
		}
	}
	return shapes
}

// loadAdapter writes a random adapter of spec s and loads it on be.
func loadAdapter(tb testing.TB, be *Backend, s lora.Spec) *lora.Adapter {
	tb.Helper()
	var buf bytes.Buffer
	if err := lora.Random(&buf, s); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "adapter.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	a, err := be.LoadLoRA(path, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// merged returns w with every adapted matrix replaced by W + sc·B·A (and
// token_embd by E + sc·A·Bᵀ, a row per token), as float32 tensors.
func merged(t *testing.T, w *model.Weights, a *lora.Adapter, s float32) *model.Weights {
	t.Helper()
	m := *w
	m.Layers = append([]model.Layer(nil), w.Layers...)
	merge := func(base *model.Tensor, p *lora.Pair) *model.Tensor {
		v, err := base.Float32s() // [Out][In]
		if err != nil {
			t.Fatal(err)
		}
		sc := a.Scale(p, s)
		for o := range p.Out {
			for i := range p.In {
				var d float32
				for k := range p.R {
					d += p.Bt[k*p.Out+o] * p.A[k*p.In+i]
				}
				v[o*p.In+i] += sc * d
			}
		}
		nt, err := model.NewTensor(base.Name, model.F32, base.Shape, v)
		if err != nil {
			t.Fatal(err)
		}
		return nt
	}
	for l := range m.Layers {
		ml := &m.Layers[l]
		for tg, pp := range []**model.Tensor{&ml.Wq, &ml.Wk, &ml.Wv, &ml.Wo, &ml.W1, &ml.W3, &ml.W2} {
			if p := a.Layers[l][tg]; p != nil {
				*pp = merge(*pp, p)
			}
		}
	}
	if a.Output != nil {
		m.Output = merge(w.Output, a.Output)
	}
	if p := a.Embed; p != nil {
		v, _ := w.TokenEmbed.Float32s() // [Vocab][Dim]
		sc := a.Scale(p, s)
		for tok := range p.In {
			for d := range p.Out {
				var x float32
				for k := range p.R {
					x += p.A[tok*p.R+k] * p.Bt[k*p.Out+d]
				}
				v[tok*p.Out+d] += sc * x
			}
		}
		nt, err := model.NewTensor(w.TokenEmbed.Name, model.F32, w.TokenEmbed.Shape, v)
		if err != nil {
			t.Fatal(err)
		}
		m.TokenEmbed = nt
	}
	return &m
}

// TestLoRAMatchesMergedWeights: a request applying an adapter at scale s
// gets the logits of the model whose weights have s·B·A merged in, and a
// request beside it in the same step without the adapter gets the base
// model's, bit for bit.
func TestLoRAMatchesMergedWeights(t *testing.T) {
	cfg, w := dummy()
	base := newHarness(t, cfg, w, 2, 64, 16, 7)
	a := loadAdapter(t, base.be, lora.Spec{Arch: cfg.Arch, Alpha: 16, Rank: 8, Shapes: loraShapes(t, base.be), Std: 0.05, Seed: 11})
	const scale = 0.7
	ref := newHarness(t, cfg, merged(t, w, a, scale), 2, 64, 16, 7)
	plain := newHarness(t, cfg, w, 2, 64, 16, 7)

	toks := prompt(37, 3)
	var adapted, other, refSeq, plainSeq seqState
	maxDiff, changed := 0.0, 0.0
	for i, chunk := range [][]int32{toks[:20], toks[20:36], toks[36:]} { // two prefill chunks, then a decode step
		var step runner.Step
		base.add(&step, &adapted, chunk, true)
		base.add(&step, &other, chunk, true)
		step.Seqs[0].LoRA = []lora.Use{{Adapter: a, Scale: scale}}
		got := base.forward(&step)
		want := ref.feed(&refSeq, chunk)
		bare := plain.feed(&plainSeq, chunk)
		for j := range want {
			maxDiff = max(maxDiff, math.Abs(float64(got[0][j]-want[j])))
			changed = max(changed, math.Abs(float64(want[j]-bare[j])))
			if got[1][j] != bare[j] {
				t.Fatalf("step %d: the request without the adapter: logit %d = %v, the base model's %v", i, j, got[1][j], bare[j])
			}
		}
	}
	t.Logf("max |LoRA − merged| = %.2g; the adapter moves logits by up to %.2g", maxDiff, changed)
	if changed < 0.1 {
		t.Fatalf("the adapter changes the logits by %v only: the test would not see it missing", changed)
	}
	if maxDiff > 2e-3 {
		t.Errorf("LoRA logits differ from the merged model's by %v", maxDiff)
	}
}

func TestLoRARefusesAnotherModel(t *testing.T) {
	cfg, w := dummy()
	h := newHarness(t, cfg, w, 1, 8, 16, 0)
	var step runner.Step
	var s seqState
	h.add(&step, &s, []int32{1, 2}, true)
	step.Seqs[0].LoRA = []lora.Use{{Adapter: &lora.Adapter{Arch: "qwen2", Layers: make([][lora.NumTargets]*lora.Pair, cfg.NumLayers)}, Scale: 1}}
	if err := h.be.Forward(t.Context(), &step, make([]float32, cfg.VocabSize)); err == nil {
		t.Fatal("an adapter for another architecture was applied")
	}
}

// TestLoRATiedLMHead: on a model whose LM head is its token embedding,
// an adapter of output.weight changes the logits only: the same as a
// model whose head is the embedding plus the update, its embedding
// untouched.
func TestLoRATiedLMHead(t *testing.T) {
	cfg, w0 := dummy()
	w := *w0
	w.Output = w.TokenEmbed // tied
	h := newHarness(t, cfg, &w, 1, 16, 16, 0)
	a := loadAdapter(t, h.be, lora.Spec{Arch: cfg.Arch, Rank: 4, Shapes: map[string][2]int{"output.weight": {cfg.Dim, cfg.VocabSize}}, Std: 0.2, Seed: 3})
	ref := newHarness(t, cfg, merged(t, &w, a, 1), 1, 16, 16, 0) // merged unties: Output gets the update
	toks := prompt(9, 4)
	var s1, s2 seqState
	var step runner.Step
	h.add(&step, &s1, toks, true)
	step.Seqs[0].LoRA = []lora.Use{{Adapter: a, Scale: 1}}
	got, want := h.forward(&step)[0], ref.feed(&s2, toks)
	for j := range want {
		if d := math.Abs(float64(got[j] - want[j])); d > 1e-4 {
			t.Fatalf("logit %d: %v, merged head %v", j, got[j], want[j])
		}
	}
}
