package beam_test

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"math"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tandem-llm/tandem/frontend/beam"
)

// toyModel is a deterministic next-token distribution over vocab, a softmax
// of logits hashed from the whole sequence.
type toyModel struct {
	vocab []int32
}

func (m toyModel) dist(seq []int32) []beam.Candidate {
	logits := make([]float64, len(m.vocab))
	for i, tok := range m.vocab {
		h := fnv.New64a()
		for _, t := range append(slices.Clone(seq), tok) {
			h.Write([]byte{byte(t), byte(t >> 8), byte(t >> 16), byte(t >> 24)})
		}
		logits[i] = float64(h.Sum64()%1000) / 150 // spread over ~6.7 nats
	}
	maxL := slices.Max(logits)
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(l - maxL)
	}
	out := make([]beam.Candidate, len(m.vocab))
	for i, tok := range m.vocab {
		out[i] = beam.Candidate{Token: tok, Logprob: logits[i] - maxL - math.Log(sum)}
	}
	slices.SortStableFunc(out, func(a, b beam.Candidate) int { return cmp.Compare(b.Logprob, a.Logprob) })
	return out
}

func (m toyModel) expand(calls *int) beam.Expander {
	return func(ctx context.Context, seqs [][]int32) ([][]beam.Candidate, error) {
		*calls += len(seqs)
		out := make([][]beam.Candidate, len(seqs))
		for i, s := range seqs {
			out[i] = m.dist(s)
		}
		return out, nil
	}
}

// scored is a finished sequence of an exhaustive search.
type scored struct {
	Tokens  []int32
	Score   float64
	Stopped bool
}

// exhaustive scores every sequence the search could return: every path that
// ends in EOS within maxTokens, and every path of maxTokens tokens.
func exhaustive(m toyModel, prompt []int32, p beam.Params) []scored {
	var out []scored
	score := func(n int, cum float64) float64 { return cum / math.Pow(float64(len(prompt)+n), p.LengthPenalty) }
	var walk func(gen []int32, cum float64)
	walk = func(gen []int32, cum float64) {
		if len(gen) == p.MaxTokens {
			out = append(out, scored{Tokens: gen, Score: score(len(gen), cum)})
			return
		}
		for _, c := range m.dist(append(slices.Clone(prompt), gen...)) {
			if !p.IgnoreEOS && slices.Contains(p.EOS, c.Token) {
				out = append(out, scored{Tokens: gen, Score: score(len(gen), cum+c.Logprob), Stopped: true})
				continue
			}
			walk(append(slices.Clone(gen), c.Token), cum+c.Logprob)
		}
	}
	walk(nil, 0)
	slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(b.Score, a.Score) })
	return out
}

func TestSearchMatchesExhaustive(t *testing.T) {
	const eos = 9
	tests := []struct {
		name  string
		vocab []int32
		p     beam.Params
	}{
		// Width ≥ vocab on two steps, and width ≥ the live beams of every
		// step but the last on three: beam search is exact on these.
		{"4 tokens, 2 steps", []int32{1, 2, 3, eos}, beam.Params{Width: 4, MaxTokens: 2, LengthPenalty: 1, EOS: []int32{eos}}},
		{"length penalty 0", []int32{1, 2, 3, eos}, beam.Params{Width: 4, MaxTokens: 2, LengthPenalty: 0, EOS: []int32{eos}}},
		{"length penalty 2", []int32{1, 2, 3, eos}, beam.Params{Width: 4, MaxTokens: 2, LengthPenalty: 2, EOS: []int32{eos}}},
		{"ignore eos", []int32{1, 2, 3, eos}, beam.Params{Width: 4, MaxTokens: 2, LengthPenalty: 1, EOS: []int32{eos}, IgnoreEOS: true}},
		{"3 tokens, 3 steps", []int32{1, 2, eos}, beam.Params{Width: 4, MaxTokens: 3, LengthPenalty: 1, EOS: []int32{eos}}},
		{"3 tokens, 3 steps, penalty 0.5", []int32{5, 6, eos}, beam.Params{Width: 4, MaxTokens: 3, LengthPenalty: 0.5, EOS: []int32{eos}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := toyModel{vocab: tc.vocab}
			prompt := []int32{7, 8}
			calls := 0
			got, err := beam.Search(context.Background(), prompt, tc.p, m.expand(&calls))
			if err != nil {
				t.Fatal(err)
			}
			want := exhaustive(m, prompt, tc.p)[:tc.p.Width]
			gotScored := make([]scored, len(got))
			for i, b := range got {
				gotScored[i] = scored{Tokens: b.Tokens, Score: b.Score, Stopped: b.Stopped}
				if sum := floatsSum(b.Logprobs); !b.Stopped && math.Abs(sum-b.CumLogprob) > 1e-9 {
					t.Errorf("beam %d: logprobs sum %g != cumulative %g", i, sum, b.CumLogprob)
				}
			}
			if diff := gocmp.Diff(want, gotScored, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("beams differ from the exhaustive top %d (-want +got):\n%s", tc.p.Width, diff)
			}
		})
	}
}

func floatsSum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func TestSearchSubRequestCount(t *testing.T) {
	// With EOS ignored, step 1 expands the prompt alone and every later step
	// expands Width beams: 1 + (MaxTokens-1)·Width sub-requests.
	m := toyModel{vocab: []int32{1, 2, 3, 4, 5, 6, 7, 8}}
	calls := 0
	p := beam.Params{Width: 4, MaxTokens: 5, LengthPenalty: 1, IgnoreEOS: true}
	got, err := beam.Search(context.Background(), []int32{1}, p, m.expand(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1+4*4 || len(got) != 4 {
		t.Fatalf("%d sub-requests and %d beams, want 17 and 4", calls, len(got))
	}
	for i, b := range got {
		if len(b.Tokens) != 5 || b.Stopped || len(b.Steps) != 5 {
			t.Fatalf("beam %d: %+v", i, b)
		}
		if i > 0 && b.Score > got[i-1].Score {
			t.Fatalf("beams not sorted by score: %g after %g", b.Score, got[i-1].Score)
		}
	}
}

func TestSearchErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		p      beam.Params
		expand beam.Expander
		want   error
	}{
		{"expander error", beam.Params{Width: 2, MaxTokens: 2}, func(context.Context, [][]int32) ([][]beam.Candidate, error) { return nil, boom }, boom},
		{"wrong count", beam.Params{Width: 2, MaxTokens: 2}, func(context.Context, [][]int32) ([][]beam.Candidate, error) { return nil, nil }, beam.ErrCandidates},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := beam.Search(context.Background(), []int32{1}, tc.p, tc.expand); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := beam.Search(context.Background(), []int32{1}, beam.Params{}, nil); err == nil {
		t.Fatal("zero width accepted")
	}
}

func TestTop(t *testing.T) {
	got := beam.Top([]int32{5, 3, 5, 7}, []float64{-1, -0.5, -1, -2}, 2)
	want := []beam.Candidate{{Token: 3, Logprob: -0.5}, {Token: 5, Logprob: -1}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
