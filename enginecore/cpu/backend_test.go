package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// maxDiff returns max |got[i] - want[i]|.
func maxDiff[T float32 | float64](got []float32, want []T) float64 {
	var d float64
	for i := range got {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
	}
	return d
}

// neoxTied is the dummy model with NEOX RoPE and tied embeddings, to cover
// the Qwen-style paths.
func neoxTied() (model.Config, *model.Weights) {
	cfg, w := dummy()
	cfg.RopeNeox, cfg.TiedEmbeddings = true, true
	tied := *w
	tied.Output = tied.TokenEmbed
	return cfg, &tied
}

// withConfig returns the dummy weights under an edited config.
func withConfig(edit func(*model.Config)) func() (model.Config, *model.Weights) {
	return func() (model.Config, *model.Weights) {
		cfg, w := dummy()
		edit(&cfg)
		return cfg, w
	}
}

// ropeFreqsModel is the dummy model with a rope_freqs tensor.
func ropeFreqsModel() (model.Config, *model.Weights) {
	cfg, w := dummy()
	c := *w
	for i := range cfg.HeadDim / 2 {
		c.RopeFreqs = append(c.RopeFreqs, 1+float32(i)/4)
	}
	return cfg, &c
}

// tinyConfig is a 2-layer model whose rows (256, 512) fit every type's
// block, with the dummy vocabulary.
func tinyConfig() model.Config {
	return model.Config{
		Name: "tiny", Arch: "llama", VocabSize: model.DummyVocabSize, Dim: 256, NumLayers: 2, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 64, FFNDim: 512, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 256,
		BOSTokenID: model.DummyBOS, EOSTokenIDs: []int32{model.DummyEOS},
	}
}

// randomModel draws a tiny model with the given types and config edits.
func randomModel(types model.RandomTypes, edit func(*model.Config)) func() (model.Config, *model.Weights) {
	return func() (model.Config, *model.Weights) {
		cfg := tinyConfig()
		edit(&cfg)
		w, err := model.Random(cfg, types, 11)
		if err != nil {
			panic(err)
		}
		return cfg, w
	}
}

func noEdit(*model.Config) {}

// gemma3 edits a config into Gemma 3's shape: scaled embeddings, QK
// norm, GELU, post-norms, another attention scale; with a window, layer
// 0 is local (window positions, RoPE base 100) and layer 1 global; with
// a softcap, logits are capped.
func gemma3(window int, softcap float64) func(*model.Config) {
	return func(c *model.Config) {
		c.Arch, c.EmbedScale, c.FFNAct, c.PostNorms, c.QKNorm, c.RopeNeox = "gemma3", 16, model.ActGELUTanh, true, true, true
		c.AttnScale, c.FinalSoftcap = 0.1, softcap
		if window > 0 {
			c.SlidingWindow, c.LocalRopeTheta = window, 100
			c.LocalLayers = []bool{true, false}
		}
	}
}

func smallK(c *model.Config) { c.NumLayers, c.FFNDim = 1, 256 }

// ernieMoE is a random ERNIE 4.5 MoE: layer 0 dense, layer 1 a mixture
// of 8 experts (2 per token) with an ungated shared expert and a
// selection bias large enough to change choices.
func ernieMoE(types model.RandomTypes) func() (model.Config, *model.Weights) {
	return func() (model.Config, *model.Weights) {
		cfg, w := randomModel(types, func(c *model.Config) {
			experts(8, 2, false)(c)
			c.Arch, c.SharedExpertFFNDim, c.MoELayers = "ernie4_5-moe", 96, []bool{false, true}
		})()
		w.Layers[1].ExpertBias = []float32{0.3, -0.2, 0, 0.1, -0.3, 0.2, 0, 0.05}
		return cfg, w
	}
}

// experts edits a config into a mixture of e experts, k per token, 128
// wide: Mixtral's (renormalized) or, with shared, Qwen2-MoE's (not
// renormalized, a 192-wide shared expert).
func experts(e, k int, shared bool) func(*model.Config) {
	return func(c *model.Config) {
		c.Arch, c.NumExperts, c.NumExpertsUsed, c.ExpertFFNDim, c.ExpertWeightsNorm = "llama", e, k, 128, true
		if shared {
			c.Arch, c.ExpertWeightsNorm, c.SharedExpertFFNDim, c.SharedExpertGate, c.QKVBias, c.RopeNeox = "qwen2moe", false, 192, true, true, true
		}
	}
}

// TestMatchesReference compares prefill and decode logits with the float64
// oracle on the dequantized weights. Float models must agree to 1e-4;
// quantized ones differ by the 8-bit activation quantization of every
// matmul, bounded relative to the logits' RMS.
func TestMatchesReference(t *testing.T) {
	type build func() (model.Config, *model.Weights)
	f32 := model.RandomTypes{Matrix: model.F32, Embed: model.F32, Output: model.F32}
	typed := func(m, e, o model.DType) model.RandomTypes { return model.RandomTypes{Matrix: m, Embed: e, Output: o} }
	tests := []struct {
		name      string
		model     build
		promptLen int
		relTol    float64 // RMS error bound, of the reference logits' RMS (max: 5×); 0: absolute 1e-4
	}{
		{"dummy one token", dummy, 1, 0},
		{"dummy 7 tokens", dummy, 7, 0},
		{"dummy 33 tokens", dummy, 33, 0},
		{"neox tied 12 tokens", neoxTied, 12, 0},
		{"llama3 rope scaling", withConfig(func(c *model.Config) {
			c.RopeScaling = model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigContextLen: 16}
		}), 20, 0},
		{"linear rope scaling", withConfig(func(c *model.Config) {
			c.RopeScaling = model.RopeScaling{Type: "linear", Factor: 4}
		}), 20, 0},
		{"yarn rope scaling", withConfig(func(c *model.Config) {
			c.RopeScaling = model.RopeScaling{Type: "yarn", Factor: 4, OrigContextLen: 64}
		}), 20, 0},
		{"yarn, neox, betas 16 and 2", withConfig(func(c *model.Config) {
			c.RopeNeox, c.RopeScaling = true, model.RopeScaling{Type: "yarn", Factor: 8, OrigContextLen: 256, BetaFast: 16, BetaSlow: 2}
		}), 20, 0},
		{"rope_freqs tensor", ropeFreqsModel, 20, 0},
		{"rope attn_factor (phi3 LongRoPE)", func() (model.Config, *model.Weights) {
			cfg, w := ropeFreqsModel()
			cfg.RopeNeox, cfg.RopeAttnFactor = true, 1.19
			return cfg, w
		}, 20, 0},
		{"phi3 partial rope, 48 of 64 dims", randomModel(f32, func(c *model.Config) { c.Arch, c.RopeNeox, c.RopeDim = "phi3", true, 48 }), 12, 0},
		{"partial rope, adjacent pairs, 32 of 64 dims", randomModel(f32, func(c *model.Config) { c.RopeDim = 32 }), 12, 0},
		{"qwen2 qkv bias", randomModel(f32, func(c *model.Config) { c.QKVBias, c.RopeNeox = true, true }), 9, 0},
		{"qwen3 qk norm", randomModel(f32, func(c *model.Config) { c.QKNorm, c.RopeNeox = true, true }), 9, 0},
		{"gemma3 window 5", randomModel(f32, gemma3(5, 0)), 20, 0},
		{"gemma3 softcap", randomModel(f32, gemma3(0, 8)), 9, 0},
		{"granite scales", randomModel(f32, func(c *model.Config) {
			c.Arch, c.EmbedScale, c.AttnScale, c.ResidualScale, c.LogitScale = "granite", 12, 0.0078125, 0.22, 8
		}), 12, 0},
		{"smollm3 NoPE layer 1", randomModel(f32, func(c *model.Config) { c.Arch, c.NoRopeLayers = "smollm3", []bool{false, true} }), 12, 0},
		{"gemma2 attention softcap, window 5", randomModel(f32, func(c *model.Config) {
			gemma3(5, 8)(c)
			c.Arch, c.QKNorm, c.AttnSoftcap, c.LocalRopeTheta = "gemma2", false, 0.5, 0
		}), 20, 0},
		{"mixtral 8 experts, 2 per token", randomModel(f32, experts(8, 2, false)), 12, 0},
		{"qwen2moe 4 experts, 3 per token, shared expert", randomModel(f32, experts(4, 3, true)), 12, 0},
		{"ernie4_5-moe: a dense first layer, selection bias, ungated shared expert", ernieMoE(f32), 12, 0},
		{"olmo2: no pre-norms, post-norms, whole-vector QK norm", randomModel(f32, func(c *model.Config) {
			c.Arch, c.NoPreNorms, c.PostNorms, c.QKNorm, c.QKNormFull, c.RopeNeox = "olmo2", true, true, true, true, true
		}), 12, 0},
		{"olmoe: whole-vector QK norm, 8 experts", randomModel(f32, func(c *model.Config) {
			experts(8, 2, false)(c)
			c.Arch, c.ExpertWeightsNorm, c.QKNorm, c.QKNormFull, c.RopeNeox = "olmoe", false, true, true, true
		}), 12, 0},
		{"granitemoe, ungated shared expert, scales", randomModel(f32, func(c *model.Config) {
			experts(4, 2, false)(c)
			c.Arch, c.SharedExpertFFNDim = "granitemoe", 96
			c.EmbedScale, c.AttnScale, c.ResidualScale, c.LogitScale = 12, 0.0078125, 0.22, 8
		}), 12, 0},
		{"qwen3moe Q8_0 16 experts, 4 per token", randomModel(typed(model.Q8_0, model.Q8_0, model.Q8_0), func(c *model.Config) {
			experts(16, 4, false)(c)
			c.Arch, c.QKNorm, c.RopeNeox = "qwen3moe", true, true
		}), 9, 0.03},
		{"F16", randomModel(typed(model.F16, model.F16, model.BF16), noEdit), 9, 0},
		{"Q4_0", randomModel(typed(model.Q4_0, model.Q4_0, model.Q4_0), noEdit), 9, 0.03},
		{"Q4_1 tied Q8_0", randomModel(typed(model.Q4_1, model.Q8_0, 0), func(c *model.Config) { c.TiedEmbeddings = true }), 9, 0.03},
		{"Q8_0", randomModel(typed(model.Q8_0, model.Q8_0, model.Q8_0), noEdit), 9, 0.03},
		// K-quant models are smaller: their reference quantizers are slow
		// under -race.
		{"Q4_K", randomModel(typed(model.Q4_K, model.Q4_K, model.Q6_K), smallK), 9, 0.03},
		{"Q5_K", randomModel(typed(model.Q5_K, model.Q5_K, model.Q5_K), smallK), 9, 0.03},
		{"Q6_K qwen3", randomModel(typed(model.Q6_K, model.Q6_K, model.Q6_K), func(c *model.Config) {
			smallK(c)
			c.QKNorm, c.QKVBias, c.RopeNeox = true, true, true
		}), 9, 0.03},
	}
	const numDecode = 4
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := tt.model()
			h := newHarness(t, cfg, w, 2, 32, 4, uint64(i+1))
			ref := newRef(t, cfg, w)
			check := func(what string, got []float32, want []float64) {
				t.Helper()
				if tt.relTol == 0 {
					if d := maxDiff(got, want); d > 1e-4 {
						t.Fatalf("%s: max |Δlogit| = %g, want ≤ 1e-4", what, d)
					}
					return
				}
				var ss, se float64
				for i, v := range want {
					ss += v * v
					se += (float64(got[i]) - v) * (float64(got[i]) - v)
				}
				rms := math.Sqrt(ss / float64(len(want)))
				rmsErr := math.Sqrt(se/float64(len(want))) / rms
				if d := maxDiff(got, want) / rms; d > 5*tt.relTol || rmsErr > tt.relTol {
					t.Fatalf("%s: |Δlogit| max %.3g, RMS %.3g of the logits' RMS, want ≤ %.3g, %.3g", what, d, rmsErr, 5*tt.relTol, tt.relTol)
				}
			}
			toks := prompt(tt.promptLen, uint64(i))
			var want []float64
			for _, tok := range toks {
				want = ref.next(tok)
			}
			var s seqState
			got := h.feed(&s, toks)
			check("prefill", got, want)
			for j := range numDecode {
				next := argmax32(got)
				want, got = ref.next(next), h.feed(&s, []int32{next})
				check(fmt.Sprintf("decode %d", j), got, want)
			}
		})
	}
}

func TestChunkedPrefill(t *testing.T) {
	cfg, w := dummy()
	toks := prompt(37, 9)
	oneShot := newHarness(t, cfg, w, 2, 16, 4, 0)
	want := oneShot.feed(&seqState{}, toks)
	tests := []struct {
		name   string
		chunks []int
	}{
		{"one per step", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"uneven", []int{5, 1, 16, 15}},
		{"block aligned", []int{8, 8, 8, 13}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg, w, 2, 16, 4, uint64(i+3))
			var s seqState
			var got []float32
			rest := toks
			for _, n := range tt.chunks {
				got, rest = h.feed(&s, rest[:n]), rest[n:]
			}
			if d := maxDiff(got, want); d > 1e-5 {
				t.Errorf("chunked vs one-shot: max |Δlogit| = %g", d)
			}
		})
	}
}

// TestBatchedMatchesAlone runs several sequences together in mixed steps
// (prefills of different lengths, then decodes alongside a new prefill),
// with interleaved shuffled block tables, and compares every logits row
// with the same sequence run alone: on the dummy model, and on a
// mixture of experts, whose experts see other rows when batched.
func TestBatchedMatchesAlone(t *testing.T) {
	f32 := model.RandomTypes{Matrix: model.F32, Embed: model.F32, Output: model.F32}
	for _, tt := range []struct {
		name  string
		model func() (model.Config, *model.Weights)
	}{
		{"dummy", dummy},
		{"qwen2moe", randomModel(f32, experts(4, 2, true))},
		{"Q8_0 mixtral", randomModel(model.RandomTypes{Matrix: model.Q8_0, Embed: model.Q8_0, Output: model.Q8_0}, experts(8, 2, false))},
	} {
		t.Run(tt.name, func(t *testing.T) { batchedMatchesAlone(t, tt.model) })
	}
}

func batchedMatchesAlone(t *testing.T, build func() (model.Config, *model.Weights)) {
	cfg, w := build()
	prompts := [][]int32{prompt(3, 1), prompt(9, 2), prompt(17, 3), prompt(1, 4)}
	late := prompt(6, 5) // joins at the decode step

	// Alone: each sequence in its own backend with contiguous blocks.
	alone := func(p []int32, decode int32) (prefill, dec []float32) {
		h := newHarness(t, cfg, w, 1, 16, 4, 0)
		var s seqState
		return h.feed(&s, p), h.feed(&s, []int32{decode})
	}

	h := newHarness(t, cfg, w, 2, 64, 4, 99)
	seqs := make([]seqState, len(prompts))
	var step runner.Step
	for i, p := range prompts {
		h.add(&step, &seqs[i], p, true)
	}
	prefill := h.forward(&step)
	step = runner.Step{}
	for i := range prompts {
		h.add(&step, &seqs[i], []int32{argmax32(prefill[i])}, true)
	}
	var lateSeq seqState
	h.add(&step, &lateSeq, late, true)
	decode := h.forward(&step)

	for i, p := range prompts {
		wantPrefill, wantDecode := alone(p, argmax32(prefill[i]))
		if d := maxDiff(prefill[i], wantPrefill); d > 1e-5 {
			t.Errorf("seq %d prefill: batched vs alone max |Δlogit| = %g", i, d)
		}
		if d := maxDiff(decode[i], wantDecode); d > 1e-5 {
			t.Errorf("seq %d decode: batched vs alone max |Δlogit| = %g", i, d)
		}
	}
	wantLate, _ := alone(late, 0)
	if d := maxDiff(decode[len(prompts)], wantLate); d > 1e-5 {
		t.Errorf("late prefill: batched vs alone max |Δlogit| = %g", d)
	}
}

// run feeds the same mixed workload to a backend with the given threads
// and returns every logits row.
func runWorkload(t *testing.T, threads int) [][]float32 {
	cfg, w := dummy()
	h := newHarness(t, cfg, w, threads, 64, 4, 7)
	seqs := make([]seqState, 3)
	var out [][]float32
	for round := range 4 {
		var step runner.Step
		for i := range seqs {
			h.add(&step, &seqs[i], prompt(1+5*i*(1-min(round, 1)), uint64(10*round+i)), i != 1)
		}
		out = append(out, h.forward(&step)...)
	}
	return out
}

func TestThreadsIdentical(t *testing.T) {
	want := runWorkload(t, 1)
	for _, threads := range []int{2, 3} {
		if diff := cmp.Diff(want, runWorkload(t, threads)); diff != "" {
			t.Errorf("threads=%d differs from threads=1 (-1 +%d):\n%s", threads, threads, diff)
		}
	}
}

// TestForwardAllocatesNothing: a decode step rerun in place allocates
// nothing, with int8 activations and with precise (residual) rows.
func TestForwardAllocatesNothing(t *testing.T) {
	q41 := randomModel(model.RandomTypes{Matrix: model.Q4_1, Embed: model.Q8_0}, func(c *model.Config) { c.TiedEmbeddings = true })
	for _, tt := range []struct {
		name      string
		model     func() (model.Config, *model.Weights)
		precision Precision
	}{
		{"dummy", dummy, PrecisionPrompt},
		{"Q4_1 precise", q41, PrecisionHigh},
		{"Q4_1 qwen2moe", randomModel(model.RandomTypes{Matrix: model.Q4_1, Embed: model.Q8_0, Output: model.Q8_0}, experts(4, 2, true)), PrecisionHigh},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := tt.model()
			h := newHarness(t, cfg, w, 2, 64, 4, 5)
			h.be.SetPrecision(tt.precision)
			seqs := make([]seqState, 3)
			var warm runner.Step
			for i := range seqs {
				h.add(&warm, &seqs[i], prompt(20, uint64(i)), true)
			}
			h.forward(&warm)
			// A decode step over the three sequences, rerun in place (the
			// same slot is rewritten each time).
			var step runner.Step
			for i := range seqs {
				h.add(&step, &seqs[i], []int32{int32(i)}, true)
			}
			logits := make([]float32, len(seqs)*cfg.VocabSize)
			ctx := context.Background()
			allocs := testing.AllocsPerRun(5, func() {
				if err := h.be.Forward(ctx, &step, logits); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("Forward allocates %v times per step, want 0", allocs)
			}
		})
	}
}

func TestForwardErrors(t *testing.T) {
	cfg, w := dummy()
	// good is a valid 2-token step of one sequence in block 3 (B = 4).
	good := func() *runner.Step {
		return &runner.Step{
			TokenIDs: []int32{1, 2}, Positions: []int32{0, 1}, SlotMapping: []int32{12, 13},
			Seqs: []runner.Seq{{Start: 0, Len: 2, ContextLen: 2, BlockTable: []int32{3}, Logits: true}},
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		edit   func(*runner.Step)
		ctx    context.Context
		logits int
		want   error
	}{
		{"valid", func(*runner.Step) {}, context.Background(), cfg.VocabSize, nil},
		{"token outside vocab", func(s *runner.Step) { s.TokenIDs[1] = 320 }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"slot disagrees with block table", func(s *runner.Step) { s.SlotMapping[1] = 5 }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"position beyond context", func(s *runner.Step) { s.Seqs[0].ContextLen = 1 }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"block outside pool", func(s *runner.Step) { s.Seqs[0].BlockTable[0] = 8 }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"seqs leave tokens out", func(s *runner.Step) { s.Seqs[0].Len = 1 }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"missing positions", func(s *runner.Step) { s.Positions = s.Positions[:1] }, context.Background(), cfg.VocabSize, ErrInvalidStep},
		{"logits too short", func(*runner.Step) {}, context.Background(), cfg.VocabSize - 1, ErrInvalidStep},
		{"cancelled", func(*runner.Step) {}, cancelled, cfg.VocabSize, context.Canceled},
	}
	be, err := New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if err := be.Forward(context.Background(), good(), make([]float32, cfg.VocabSize)); !errors.Is(err, ErrNoKVCache) {
		t.Errorf("Forward before AllocateKV = %v, want %v", err, ErrNoKVCache)
	}
	if err := be.AllocateKV(8, 4); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := good()
			tt.edit(step)
			err := be.Forward(tt.ctx, step, make([]float32, tt.logits))
			if !errors.Is(err, tt.want) {
				t.Errorf("Forward = %v, want %v", err, tt.want)
			}
		})
	}
	be.Close()
	if err := be.Forward(context.Background(), good(), make([]float32, cfg.VocabSize)); !errors.Is(err, ErrClosed) {
		t.Errorf("Forward after Close = %v, want %v", err, ErrClosed)
	}
}

func TestModelInfo(t *testing.T) {
	cfg, w := dummy()
	cfg.MaxContextLen = 512
	be, err := New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	want := runner.ModelInfo{
		Name: "dummy", Arch: "llama", VocabSize: 320, MaxContextLen: 512,
		EOSTokenIDs: []int32{257, 259}, BOSTokenID: 256, NumLayers: 4, NumKVHeads: 2, HeadDim: 32, Dim: 128,
	}
	if diff := cmp.Diff(want, be.Model()); diff != "" {
		t.Errorf("Model() (-want +got):\n%s", diff)
	}
	// 2 (K,V) · 4 layers · 16 tokens · 2 KV heads · 32 dims · 4 bytes.
	if got := be.KVBytesPerBlock(16); got != 32768 {
		t.Errorf("KVBytesPerBlock(16) = %d, want 32768", got)
	}
	if _, err := New(cfg, &model.Weights{}, 1); !errors.Is(err, model.ErrShape) {
		t.Errorf("New with empty weights = %v, want %v", err, model.ErrShape)
	}
}

// TestDummyGreedyVaries checks that greedy decoding of the dummy model
// neither sticks to one token nor falls into a short cycle.
func TestDummyGreedyVaries(t *testing.T) {
	cfg, w := dummy()
	for i, p := range [][]int32{[]int32(string("Hello, world")), prompt(20, 77)} {
		h := newHarness(t, cfg, w, 2, 64, 16, 0)
		var s seqState
		logits := h.feed(&s, p)
		var out []int32
		for range 48 {
			tok := argmax32(logits)
			out = append(out, tok)
			logits = h.feed(&s, []int32{tok})
		}
		distinct := map[int32]bool{}
		for _, tok := range out {
			distinct[tok] = true
		}
		if len(distinct) < 12 {
			t.Errorf("prompt %d: %d distinct tokens in %v", i, len(distinct), out)
		}
		tail := out[24:]
	period:
		for per := 1; per <= 8; per++ {
			for j := per; j < len(tail); j++ {
				if tail[j] != tail[j-per] {
					continue period
				}
			}
			t.Errorf("prompt %d: greedy output cycles with period %d: %v", i, per, out)
		}
	}
}

func TestNewRejectsRopeScaling(t *testing.T) {
	tests := []struct {
		name string
		s    model.RopeScaling
	}{
		{"unknown type", model.RopeScaling{Type: "dynamic", Factor: 4}},
		{"yarn without its original context", model.RopeScaling{Type: "yarn", Factor: 4}},
		{"linear without factor", model.RopeScaling{Type: "linear"}},
		{"llama3 high ≤ low", model.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 4, HighFreqFactor: 1, OrigContextLen: 8192}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := dummy()
			cfg.RopeScaling = tt.s
			if be, err := New(cfg, w, 1); !errors.Is(err, ErrUnsupported) {
				if be != nil {
					be.Close()
				}
				t.Errorf("New = %v, want %v", err, ErrUnsupported)
			}
		})
	}
}
