package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/wire"
)

// recorder is a backend that keeps the Step it was given and fills logit
// row i with a peak at argmax[i] (and a lower one at runnerUp[i]).
type recorder struct {
	vocab    int
	step     Step
	argmax   []int32
	runnerUp []int32
}

func (r *recorder) Model() ModelInfo                    { return ModelInfo{VocabSize: r.vocab, EOSTokenIDs: []int32{2}} }
func (r *recorder) AllocateKV(int, int) error           { return nil }
func (r *recorder) KVBytesPerBlock(blockSize int) int64 { return 0 }
func (r *recorder) Close() error                        { return nil }

func (r *recorder) Forward(_ context.Context, st *Step, logits []float32) error {
	r.step = Step{TokenIDs: slices.Clone(st.TokenIDs), Positions: slices.Clone(st.Positions),
		SlotMapping: slices.Clone(st.SlotMapping), Seqs: slices.Clone(st.Seqs)}
	for i := range logits {
		logits[i] = 0
	}
	for row := range len(logits) / r.vocab {
		logits[row*r.vocab+int(r.argmax[row])] = 10
		logits[row*r.vocab+int(r.runnerUp[row])] = 5
	}
	return nil
}

func greedy() *wire.SamplingParams {
	p := wire.DefaultSamplingParams()
	p.Temperature = 0
	return &p
}

// TestExecuteLaysOutTheStep: tokens back to back, positions from each
// request's Start, slots through its block table (block*B + offset), one
// Seq per item, logits only for the items that sample, and each sampled
// row going to its own item.
func TestExecuteLaysOutTheStep(t *testing.T) {
	be := &recorder{vocab: 32, argmax: []int32{7, 9}, runnerUp: []int32{8, 8}}
	r := New(be, 4)
	b := &batch.Batch{Items: []batch.Item{
		// a: a 6-token prompt, its last 3 tokens this step (a chunk reaching the end: samples).
		{RequestID: "a", Tokens: []int32{10, 11, 12, 13, 14, 15}, NumPrompt: 6, Start: 3, Len: 3, BlockTable: []int32{5, 2}, Sample: true, Params: greedy()},
		// b: the first chunk of a long prompt: no logits.
		{RequestID: "b", Tokens: []int32{20, 21, 22, 23, 24}, NumPrompt: 5, Start: 0, Len: 2, BlockTable: []int32{0}, Params: greedy()},
		// c: decoding its 9th token, one position.
		{RequestID: "c", Tokens: []int32{1, 2, 3, 4, 5, 6, 7, 8, 30}, NumPrompt: 8, Start: 8, Len: 1, BlockTable: []int32{3, 1, 4}, Sample: true, Params: greedy()},
	}}
	res, err := r.Execute(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	st := be.step
	if want := []int32{13, 14, 15, 20, 21, 30}; !slices.Equal(st.TokenIDs, want) {
		t.Errorf("TokenIDs %v, want %v", st.TokenIDs, want)
	}
	if want := []int32{3, 4, 5, 0, 1, 8}; !slices.Equal(st.Positions, want) {
		t.Errorf("Positions %v, want %v", st.Positions, want)
	}
	// a: positions 3 (block 5, offset 3), 4 and 5 (block 2, offsets 0 and 1);
	// b: block 0; c: position 8 is block table[2] = 4, offset 0.
	if want := []int32{5*4 + 3, 2*4 + 0, 2*4 + 1, 0, 1, 4*4 + 0}; !slices.Equal(st.SlotMapping, want) {
		t.Errorf("SlotMapping %v, want %v", st.SlotMapping, want)
	}
	wantSeqs := []Seq{
		{Start: 0, Len: 3, ContextLen: 6, BlockTable: []int32{5, 2}, Logits: true, PromptLen: 6},
		{Start: 3, Len: 2, ContextLen: 2, BlockTable: []int32{0}, PromptLen: 5},
		{Start: 5, Len: 1, ContextLen: 9, BlockTable: []int32{3, 1, 4}, Logits: true, PromptLen: 8},
	}
	for i, s := range st.Seqs {
		w := wantSeqs[i]
		if s.Start != w.Start || s.Len != w.Len || s.ContextLen != w.ContextLen || s.Logits != w.Logits ||
			s.PromptLen != w.PromptLen || !slices.Equal(s.BlockTable, w.BlockTable) {
			t.Errorf("Seq %d = %+v, want %+v", i, s, w)
		}
	}
	// Row 0 is a's, row 1 is c's; b samples nothing.
	if want := []int32{7, 0, 9}; !slices.Equal(res.Sampled, want) {
		t.Errorf("Sampled %v, want %v", res.Sampled, want)
	}
}

// TestExecuteRejectsPositionsBeyondTheBlockTable: a position past the
// request's blocks is an error, not a write into another request's block.
func TestExecuteRejectsPositionsBeyondTheBlockTable(t *testing.T) {
	r := New(&recorder{vocab: 8}, 4)
	b := &batch.Batch{Items: []batch.Item{{RequestID: "a", Tokens: []int32{1, 2, 3, 4, 5}, NumPrompt: 5, Len: 5, BlockTable: []int32{0}, Params: greedy()}}}
	if _, err := r.Execute(context.Background(), b); err == nil {
		t.Fatal("5 tokens in one 4-token block: no error")
	}
}

// TestStopMasking: below min_tokens the stop tokens cannot be sampled (the
// runner-up is), and ids outside the vocabulary (negative ones included)
// are ignored, not indexed.
func TestStopMasking(t *testing.T) {
	tests := []struct {
		name  string
		mask  bool
		stops []int32
		want  int32
	}{
		{"no mask: the argmax", false, []int32{2}, 2},
		{"masked: the runner-up", true, []int32{2}, 6},
		{"masked, ids out of range ignored", true, []int32{-1, 2, 99, -7}, 6},
		{"masked, only out-of-range ids", true, []int32{-1, 64}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := &recorder{vocab: 16, argmax: []int32{2}, runnerUp: []int32{6}}
			r := New(be, 4)
			b := &batch.Batch{Items: []batch.Item{{RequestID: "a", Tokens: []int32{1, 3}, NumPrompt: 1, Start: 1, Len: 1,
				BlockTable: []int32{0}, Sample: true, Params: greedy(), MaskStop: tt.mask, StopTokenIDs: tt.stops}}}
			res, err := r.Execute(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			if res.Sampled[0] != tt.want {
				t.Errorf("sampled %d, want %d", res.Sampled[0], tt.want)
			}
		})
	}
}

// TestLogprobsAreOfTheRawDistribution: logprobs describe the model's
// logits, before the stop mask (vLLM's default), with the sampled token
// first.
func TestLogprobsAreOfTheRawDistribution(t *testing.T) {
	be := &recorder{vocab: 16, argmax: []int32{2}, runnerUp: []int32{6}}
	r := New(be, 4)
	p := greedy()
	k := 1
	p.Logprobs = &k
	b := &batch.Batch{Items: []batch.Item{{RequestID: "a", Tokens: []int32{1, 3}, NumPrompt: 1, Start: 1, Len: 1,
		BlockTable: []int32{0}, Sample: true, Params: p, MaskStop: true, StopTokenIDs: []int32{2}}}}
	res, err := r.Execute(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	lp := res.Logprobs[0]
	if res.Sampled[0] != 6 || lp.TokenIDs[0][0] != 6 || lp.TokenIDs[0][1] != 2 {
		t.Fatalf("sampled %d, logprob tokens %v: want 6 sampled and the masked 2 as the raw top alternative", res.Sampled[0], lp.TokenIDs)
	}
	if lp.Logprobs[0][1] <= lp.Logprobs[0][0] {
		t.Errorf("logprobs %v: the raw argmax 2 should be more likely than the sampled 6", lp.Logprobs[0])
	}
}
