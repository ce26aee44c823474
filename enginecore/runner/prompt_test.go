package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/sample"
	"github.com/tandem-llm/tandem/wire"
)

// tokenLogits is a backend whose logits row for a token depends only on
// that token (rowOf), so a row can be checked without a model.
type tokenLogits struct {
	vocab int
	seqs  []Seq // of the last Forward
}

func (b *tokenLogits) rowOf(tok int32) []float32 {
	row := make([]float32, b.vocab)
	for v := range row {
		row[v] = float32((int(tok)*7+v*3)%11) / 2
	}
	return row
}

func (b *tokenLogits) Model() ModelInfo          { return ModelInfo{VocabSize: b.vocab} }
func (b *tokenLogits) AllocateKV(int, int) error { return nil }
func (b *tokenLogits) KVBytesPerBlock(int) int64 { return 0 }
func (b *tokenLogits) Close() error              { return nil }

func (b *tokenLogits) Forward(_ context.Context, st *Step, logits []float32) error {
	b.seqs = slices.Clone(st.Seqs)
	row := 0
	for _, s := range st.Seqs {
		first, n := s.LogitRows()
		for t := first; t < first+n; t++ {
			copy(logits[row*b.vocab:], b.rowOf(st.TokenIDs[t]))
			row++
		}
	}
	return nil
}

// wantPrompt is what the prompt logprobs of prompt must be: row p-1 from
// the logits after token p-1, of token p.
func wantPrompt(b *tokenLogits, prompt []int32, k int) *wire.Logprobs {
	lp := &wire.Logprobs{}
	for p := 1; p < len(prompt); p++ {
		ids, lps, rank := sample.TopLogprobs(b.rowOf(prompt[p-1]), prompt[p], k)
		lp.TokenIDs, lp.Logprobs, lp.Ranks = append(lp.TokenIDs, ids), append(lp.Logprobs, lps), append(lp.Ranks, rank)
	}
	return lp
}

// TestPromptLogprobs: a prompt computed in one step, in chunks, or with a
// chunk computed again (a preemption) gives the same rows, one per prompt
// position after the first, sent once with the first sampled token.
func TestPromptLogprobs(t *testing.T) {
	prompt := []int32{3, 9, 1, 4, 1, 5, 9, 2, 6}
	k := 3
	tests := []struct {
		name   string
		chunks [][2]int // [start, len] of each step
	}{
		{"one step", [][2]int{{0, 9}}},
		{"chunks", [][2]int{{0, 4}, {4, 3}, {7, 2}}},
		{"the last position alone", [][2]int{{0, 8}, {8, 1}}},
		{"a chunk again after a preemption", [][2]int{{0, 5}, {0, 6}, {6, 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := &tokenLogits{vocab: 16}
			r := New(be, 16)
			p := greedy()
			p.PromptLogprobs = &k
			var got *wire.Logprobs
			for i, c := range tt.chunks {
				it := batch.Item{RequestID: "a", Tokens: prompt, NumPrompt: len(prompt), Start: c[0], Len: c[1],
					BlockTable: []int32{0}, Sample: c[0]+c[1] == len(prompt), Params: p}
				res, err := r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{it}})
				if err != nil {
					t.Fatal(err)
				}
				if all := c[0] < len(prompt)-1; be.seqs[0].AllLogits != all {
					t.Errorf("step %d: AllLogits %v, want %v", i, be.seqs[0].AllLogits, all)
				}
				if res.PromptLogprobs != nil && res.PromptLogprobs[0] != nil {
					if got != nil {
						t.Fatalf("step %d: prompt logprobs sent twice", i)
					}
					got = res.PromptLogprobs[0]
				}
			}
			if diff := cmp.Diff(wantPrompt(be, prompt, k), got); diff != "" {
				t.Errorf("prompt logprobs (-want +got):\n%s", diff)
			}
			// Decoding on: no more prompt rows, no logits for them.
			it := batch.Item{RequestID: "a", Tokens: append(slices.Clone(prompt), 7), NumPrompt: len(prompt), Start: len(prompt), Len: 1,
				BlockTable: []int32{0}, Sample: true, Params: p}
			res, err := r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{it}})
			if err != nil {
				t.Fatal(err)
			}
			if res.PromptLogprobs != nil || be.seqs[0].AllLogits {
				t.Errorf("decode step: prompt logprobs %v, AllLogits %v; want neither", res.PromptLogprobs, be.seqs[0].AllLogits)
			}
		})
	}
}

// TestPromptLogprobsEdges: a one-token prompt has no position with a
// logprob (an empty, non-nil result); -1 is the whole vocabulary, sorted.
func TestPromptLogprobsEdges(t *testing.T) {
	be := &tokenLogits{vocab: 16}
	r := New(be, 16)
	zero, all := 0, -1
	p := greedy()
	p.PromptLogprobs = &zero
	res, err := r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{
		{RequestID: "one", Tokens: []int32{5}, NumPrompt: 1, Len: 1, BlockTable: []int32{0}, Sample: true, Params: p},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.PromptLogprobs[0]; got == nil || len(got.Ranks) != 0 {
		t.Errorf("one-token prompt: %+v, want empty and non-nil", got)
	}
	q := greedy()
	q.PromptLogprobs = &all
	prompt := []int32{4, 8, 15}
	res, err = r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{
		{RequestID: "all", Tokens: prompt, NumPrompt: 3, Len: 3, BlockTable: []int32{0}, Sample: true, Params: q},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.PromptLogprobs[0]
	if diff := cmp.Diff(wantPrompt(be, prompt, 16), got); diff != "" {
		t.Errorf("prompt_logprobs -1 (-want +got):\n%s", diff)
	}
	for i, row := range got.Logprobs {
		if len(row) != 17 || !slices.IsSortedFunc(row[1:], func(a, b float64) int { return -cmpFloat(a, b) }) {
			t.Errorf("row %d: %d entries, sorted %v; want 17, sorted descending", i, len(row), row)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestAllowedAndLogprobTokenIDs: allowed_token_ids restricts what is
// sampled (not the logprobs, which stay raw); logprob_token_ids reports
// exactly those ids after the sampled token; logprobs -1 the whole
// vocabulary.
func TestAllowedAndLogprobTokenIDs(t *testing.T) {
	be := &tokenLogits{vocab: 40}
	raw := be.rowOf(3)
	best := int32(0)
	for v, l := range raw {
		if l > raw[best] {
			best = int32(v)
		}
	}
	allowed := []int32{33, 1}
	wantTok := int32(33)
	if raw[1] > raw[33] {
		wantTok = 1
	}
	all := -1
	tests := []struct {
		name    string
		mod     func(p *wire.SamplingParams)
		want    int32
		wantIDs []int32 // logprob row token ids; nil: no logprobs
		wantLen int     // or only the row's length
	}{
		{"plain greedy", func(p *wire.SamplingParams) {}, best, nil, 0},
		{"allowed_token_ids", func(p *wire.SamplingParams) { p.AllowedTokenIDs = allowed }, wantTok, nil, 0},
		{"logprob_token_ids", func(p *wire.SamplingParams) { p.LogprobTokenIDs = []int32{7, 39, 7} }, best, []int32{best, 7, 39, 7}, 0},
		{"allowed with logprob_token_ids", func(p *wire.SamplingParams) {
			p.AllowedTokenIDs, p.LogprobTokenIDs = allowed, []int32{best}
		}, wantTok, []int32{wantTok, best}, 0},
		{"logprobs -1", func(p *wire.SamplingParams) { p.Logprobs = &all }, best, nil, 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(be, 16)
			p := greedy()
			tt.mod(p)
			res, err := r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{
				{RequestID: "a", Tokens: []int32{3}, NumPrompt: 1, Len: 1, BlockTable: []int32{0}, Sample: true, Params: p},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sampled[0] != tt.want {
				t.Errorf("sampled %d, want %d", res.Sampled[0], tt.want)
			}
			switch {
			case tt.wantIDs != nil:
				lp := res.Logprobs[0]
				if !slices.Equal(lp.TokenIDs[0], tt.wantIDs) {
					t.Errorf("logprob ids %v, want %v", lp.TokenIDs[0], tt.wantIDs)
				}
				ids, lps, _ := sample.TopLogprobs(raw, tt.wantIDs[0], 0)
				if lp.Logprobs[0][0] != lps[0] || ids[0] != tt.wantIDs[0] {
					t.Errorf("sampled token's logprob %g, want the raw %g", lp.Logprobs[0][0], lps[0])
				}
			case tt.wantLen > 0:
				if n := len(res.Logprobs[0].TokenIDs[0]); n != tt.wantLen {
					t.Errorf("%d logprobs, want %d", n, tt.wantLen)
				}
			case res.Logprobs != nil:
				t.Errorf("logprobs %v, want none", res.Logprobs)
			}
		})
	}
}
