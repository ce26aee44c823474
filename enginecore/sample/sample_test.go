package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func seed(v int64) *int64 { return &v }

// testLogits are a fixed 8-token row with a unique maximum at id 3.
func testLogits() []float32 { return []float32{0.5, -1, 2, 3, 1, 3 - 1e-3, -2, 0} }

func TestGreedy(t *testing.T) {
	tests := []struct {
		name   string
		logits []float32
		params Params
		want   int32
	}{
		{"argmax", testLogits(), Params{}, 3},
		{"tiny temperature", testLogits(), Params{Temperature: 1e-6}, 3},
		{"ties go to the lowest id", []float32{1, 4, 2, 4, 4}, Params{}, 1},
		{"top-k 1 at temperature 1", testLogits(), Params{Temperature: 1, TopK: 1}, 3},
		{"top-k 1 at temperature 5", testLogits(), Params{Temperature: 5, TopK: 1}, 3},
		{"tiny top-p", testLogits(), Params{Temperature: 1, TopP: 1e-9}, 3},
		{"min-p 1", testLogits(), Params{Temperature: 1, MinP: 1}, 3},
		{"min-p above 1", testLogits(), Params{Temperature: 1, MinP: 5}, 3},
		{"logit bias forces a token", testLogits(), Params{LogitBias: map[int32]float64{6: 100}}, 6},
		{"logit bias forces under sampling", testLogits(), Params{Temperature: 1, LogitBias: map[int32]float64{6: 100}}, 6},
		{"logit bias bans a token", testLogits(), Params{LogitBias: map[int32]float64{3: -100, 99: 5}}, 5},
		{"presence penalty moves off a used token", testLogits(), Params{PresencePenalty: 0.5}, 5},
		{"frequency penalty counts occurrences", []float32{0, 1.5, 1}, Params{FrequencyPenalty: 0.3}, 2},
		{"repetition penalty on a prompt token", testLogits(), Params{RepetitionPenalty: 1.2}, 5},
		{"repetition penalty pushes negatives down", []float32{-1, -5, -1.1}, Params{RepetitionPenalty: 1.2}, 2},
	}
	// The request used token 3 once and token 1 three times (output), and
	// token 0 in the prompt.
	prompt, output := []int32{0, 3}, []int32{3, 1, 1, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewSampler(seed(1)).Sample(tt.logits, &tt.params, prompt, output)
			if got != tt.want {
				t.Errorf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPenaltyValues(t *testing.T) {
	logits := []float32{2, -2, 2, -2, 1}
	p := Params{RepetitionPenalty: 2, FrequencyPenalty: 0.25, PresencePenalty: 0.5}
	// Prompt {0, 1, 0}, output {2, 3, 3}: repetition once per distinct
	// token, frequency per output occurrence, presence once per output token.
	NewSampler(seed(1)).Sample(logits, &p, []int32{0, 1, 0}, []int32{2, 3, 3})
	want := []float32{1, -4, 1 - 0.25 - 0.5, -4 - 0.5 - 0.5, 1}
	if diff := cmp.Diff(want, logits); diff != "" {
		t.Errorf("penalized logits (-want +got):\n%s", diff)
	}
}

// draws returns n samples of one seeded Sampler.
func draws(s *Sampler, p *Params, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = s.Sample(testLogits(), p, nil, nil)
	}
	return out
}

func TestSeeds(t *testing.T) {
	p := &Params{Temperature: 1}
	a := draws(NewSampler(seed(42)), p, 64)
	if diff := cmp.Diff(a, draws(NewSampler(seed(42)), p, 64)); diff != "" {
		t.Errorf("same seed, different draws (-first +second):\n%s", diff)
	}
	if cmp.Equal(a, draws(NewSampler(seed(43)), p, 64)) {
		t.Errorf("seeds 42 and 43 drew the same 64 tokens")
	}
	if cmp.Equal(draws(NewSampler(nil), p, 64), draws(NewSampler(nil), p, 64)) {
		t.Errorf("two unseeded samplers drew the same 64 tokens")
	}
}

// softmax returns the distribution of logits at temperature temp.
func softmax(logits []float32, temp float64) []float64 {
	p := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l) / temp)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// TestDistribution checks by a chi-square test that draws follow the
// filtered, renormalized softmax; zero-probability tokens must never come.
func TestDistribution(t *testing.T) {
	sm := softmax(testLogits(), 1)
	sm2 := softmax(testLogits(), 2)
	keep := func(p []float64, ids ...int) []float64 {
		out := make([]float64, len(p))
		var sum float64
		for _, id := range ids {
			out[id] = p[id]
			sum += p[id]
		}
		for i := range out {
			out[i] /= sum
		}
		return out
	}
	// Sorted by probability: 3, 5, 2, 4, 0, 7, 1, 6.
	// At T=1: p3 ≈ 0.387, p5 ≈ 0.386, p2 ≈ 0.142, p4 ≈ 0.052, …
	tests := []struct {
		name   string
		params Params
		want   []float64
	}{
		{"temperature 1", Params{Temperature: 1}, sm},
		{"temperature 2", Params{Temperature: 2}, sm2},
		{"top-k 3", Params{Temperature: 1, TopK: 3}, keep(sm, 3, 5, 2)},
		// 0.387+0.386 = 0.773 < 0.8, +0.142 ≥ 0.8: the minimal nucleus is {3,5,2}.
		{"top-p 0.8 minimal nucleus", Params{Temperature: 1, TopP: 0.8}, keep(sm, 3, 5, 2)},
		{"top-p 0.7", Params{Temperature: 1, TopP: 0.7}, keep(sm, 3, 5)},
		// p4/p3 = e^-2 ≈ 0.135, p2/p3 = e^-1 ≈ 0.37.
		{"min-p 0.2", Params{Temperature: 1, MinP: 0.2}, keep(sm, 3, 5, 2)},
		{"top-k 4 then top-p 0.9", Params{Temperature: 1, TopK: 4, TopP: 0.9}, keep(sm, 3, 5, 2)},
		{"top-k 4 then min-p 0.1", Params{Temperature: 1, TopK: 4, MinP: 0.1}, keep(sm, 3, 5, 2, 4)},
	}
	const n = 20000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var count [8]int
			for _, id := range draws(NewSampler(seed(7)), &tt.params, n) {
				count[id]++
			}
			var chi2 float64
			for id, p := range tt.want {
				if p == 0 {
					if count[id] > 0 {
						t.Errorf("token %d drawn %d times, want never", id, count[id])
					}
					continue
				}
				d := float64(count[id]) - n*p
				chi2 += d * d / (n * p)
			}
			// ≤ 7 degrees of freedom: P(χ² > 30) < 1e-4.
			if chi2 > 30 {
				t.Errorf("χ² = %.1f, counts %v, want proportions %.3f", chi2, count, tt.want)
			}
		})
	}
}

func TestTopLogprobs(t *testing.T) {
	logits := []float32{1, 3, 2, 3, -1}
	lse := math.Log(math.E + 2*math.Exp(3) + math.Exp(2) + math.Exp(-1))
	lp := func(l float64) float64 { return l - lse }
	tests := []struct {
		name     string
		tok      int32
		k        int
		wantIDs  []int32
		wantLPs  []float64
		wantRank int32
	}{
		{"k=0", 2, 0, []int32{2}, []float64{lp(2)}, 3},
		{"ties by id", 4, 2, []int32{4, 1, 3}, []float64{lp(-1), lp(3), lp(3)}, 5},
		{"best token", 1, 3, []int32{1, 1, 3, 2}, []float64{lp(3), lp(3), lp(3), lp(2)}, 1},
		{"k beyond V", 0, 9, []int32{0, 1, 3, 2, 0, 4}, []float64{lp(1), lp(3), lp(3), lp(2), lp(1), lp(-1)}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, lps, rank := TopLogprobs(logits, tt.tok, tt.k)
			if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })
			if diff := cmp.Diff(tt.wantLPs, lps, approx); diff != "" {
				t.Errorf("logprobs (-want +got):\n%s", diff)
			}
			if rank != tt.wantRank {
				t.Errorf("rank = %d, want %d", rank, tt.wantRank)
			}
		})
	}
}

// TestLargeVocabTopK checks the bucketed candidate search against a plain
// sort on a vocabulary with many near-ties.
func TestLargeVocabTopK(t *testing.T) {
	const numVocab = 5000
	logits := make([]float32, numVocab)
	for i := range logits {
		logits[i] = float32(i%97) / 10
	}
	// Greedy-equivalent filters must still return the max: top-k 1, and a
	// nucleus so small only the first (lowest-id) maximum remains.
	for _, p := range []Params{{Temperature: 1, TopK: 1}, {Temperature: 1, TopP: 1e-12}} {
		got := NewSampler(seed(3)).Sample(append([]float32(nil), logits...), &p, nil, nil)
		if got != 96 {
			t.Errorf("%+v: Sample = %d, want 96", p, got)
		}
	}
	// Top-k 60 must only draw tokens whose logit is among the 60 best
	// (ties broken by id): the 51 tokens with i%97 == 96 and 9 with 95.
	s := NewSampler(seed(4))
	for range 500 {
		id := s.Sample(append([]float32(nil), logits...), &Params{Temperature: 1, TopK: 60}, nil, nil)
		if r := id % 97; r < 95 || (r == 95 && id > 95+8*97) {
			t.Fatalf("top-k 60 drew %d (logit %.1f)", id, logits[id])
		}
	}
}

func BenchmarkSample(b *testing.B) {
	const numVocab = 151936
	raw := make([]float32, numVocab)
	for i := range raw {
		raw[i] = float32(math.Sin(float64(i))) * 8
	}
	logits := make([]float32, numVocab)
	out := []int32{1, 2, 3, 4, 5}
	for _, tt := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"temperature", Params{Temperature: 0.8}},
		{"top-p", Params{Temperature: 0.8, TopP: 0.95}},
		{"top-k-penalties", Params{Temperature: 0.8, TopK: 40, RepetitionPenalty: 1.1, PresencePenalty: 0.5}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s := NewSampler(seed(1))
			for b.Loop() {
				copy(logits, raw)
				s.Sample(logits, &tt.p, out, out)
			}
		})
	}
}

// TestTopBySortIsTopByInsertion: the sorting path for large k picks the
// same tokens in the same order (ties: lower id first) and the same rank
// as the insertion path.
func TestTopBySortIsTopByInsertion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 300)
	for i := range logits {
		logits[i] = float32(rng.IntN(40)) / 4 // many ties
	}
	for _, k := range []int{0, 1, 65, 299, 300} {
		for _, tok := range []int32{0, 17, 299} {
			a, ra := topBySort(logits, tok, k, []int32{tok})
			b, rb := topByInsertion(logits, tok, k, []int32{tok})
			if !slices.Equal(a, b) || ra != rb {
				t.Fatalf("k %d tok %d: sort %v rank %d, insertion %v rank %d", k, tok, a, ra, b, rb)
			}
		}
	}
}
