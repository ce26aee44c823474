package cpu

import (
	"context"
	"errors"
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

func TestMatchesReference(t *testing.T) {
	type build func() (model.Config, *model.Weights)
	tests := []struct {
		name      string
		model     build
		promptLen int
	}{
		{"dummy one token", dummy, 1},
		{"dummy 7 tokens", dummy, 7},
		{"dummy 33 tokens", dummy, 33},
		{"neox tied 12 tokens", neoxTied, 12},
	}
	const tol, numDecode = 1e-4, 4
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := tt.model()
			h := newHarness(t, cfg, w, 2, 32, 4, uint64(i+1))
			ref := newRef(cfg, w)
			toks := prompt(tt.promptLen, uint64(i))
			var want []float64
			for _, tok := range toks {
				want = ref.next(tok)
			}
			var s seqState
			got := h.feed(&s, toks)
			if d := maxDiff(got, want); d > tol {
				t.Fatalf("prefill: max |Δlogit| = %g, want ≤ %g", d, tol)
			}
			for j := range numDecode {
				next := argmax32(got)
				want, got = ref.next(next), h.feed(&s, []int32{next})
				if d := maxDiff(got, want); d > tol {
					t.Fatalf("decode %d: max |Δlogit| = %g, want ≤ %g", j, d, tol)
				}
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
// with the same sequence run alone.
func TestBatchedMatchesAlone(t *testing.T) {
	cfg, w := dummy()
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

func TestForwardAllocatesNothing(t *testing.T) {
	cfg, w := dummy()
	h := newHarness(t, cfg, w, 2, 64, 4, 5)
	seqs := make([]seqState, 3)
	var warm runner.Step
	for i := range seqs {
		h.add(&warm, &seqs[i], prompt(20, uint64(i)), true)
	}
	h.forward(&warm)
	// A decode step over the three sequences, rerun in place (the same slot
	// is rewritten each time).
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
		EOSTokenIDs: []int32{257, 259}, BOSTokenID: 256, NumLayers: 4, NumKVHeads: 2, HeadDim: 32,
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
