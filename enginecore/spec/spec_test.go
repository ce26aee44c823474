package spec

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestNgramPropose(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tokens   []int32
		min, max int
		k        int
		want     []int32
	}{
		{"no repeat", []int32{1, 2, 3, 4, 5}, 1, 3, 4, nil},
		{"unigram", []int32{7, 8, 9, 7}, 1, 3, 2, []int32{8, 9}},
		{"longest wins", []int32{1, 2, 9, 3, 2, 5, 6, 1, 2}, 1, 3, 2, []int32{9, 3}},
		{"earliest of equal", []int32{4, 1, 5, 4, 1, 6, 4, 1}, 2, 2, 1, []int32{5}},
		{"below min", []int32{1, 2, 3, 9, 2, 3}, 3, 4, 2, nil},
		{"k caps", []int32{1, 2, 3, 4, 5, 6, 1, 2}, 2, 2, 3, []int32{3, 4, 5}},
		{"runs to the end", []int32{1, 2, 3, 1, 2}, 2, 2, 10, []int32{3, 1, 2}},
		{"overlapping run", []int32{5, 5, 5, 5}, 1, 2, 3, []int32{5, 5}},
		{"max caps the match", []int32{1, 2, 3, 4, 8, 2, 3, 4, 9, 1, 2, 3, 4}, 1, 3, 1, []int32{8}},
		{"k zero", []int32{1, 1, 1}, 1, 1, 0, nil},
		{"too short", []int32{1}, 1, 1, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Ngram{Min: tc.min, Max: tc.max}.Propose(tc.tokens, tc.k)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Propose(%v) = %v, want %v", tc.tokens, got, tc.want)
			}
			if want := bruteNgram(tc.tokens, tc.min, tc.max, tc.k); !slices.Equal(got, want) {
				t.Errorf("brute force says %v", want)
			}
		})
	}
}

// bruteNgram is Ngram's rule read literally: over every earlier end
// position e of the reversed tokens (e ≥ 1), the longest L ≤ Max with
// rev[0:L] == rev[e-L+1:e+1] and e-L+1 ≥ 1; the longest overall, ties to
// the largest e; at least Min.
func bruteNgram(tokens []int32, lo, hi, k int) []int32 {
	n := len(tokens)
	if k <= 0 || n < lo+1 {
		return nil
	}
	rev := slices.Clone(tokens)
	slices.Reverse(rev)
	best, at := 0, 0
	for e := 1; e < n; e++ {
		for l := min(hi, e); l >= 1; l-- {
			if slices.Equal(rev[:l], rev[e-l+1:e+1]) {
				if l >= best {
					best, at = l, e
				}
				break
			}
		}
	}
	if best < lo {
		return nil
	}
	start := n - 1 - at + best
	return tokens[start:min(start+k, n)]
}

// TestNgramMatchesBruteForce checks the KMP scan against the literal rule
// on random token strings of a small alphabet (many repeats).
func TestNgramMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := 1 + rng.IntN(40)
		tokens := make([]int32, n)
		alpha := 1 + rng.IntN(4)
		for i := range tokens {
			tokens[i] = int32(rng.IntN(alpha))
		}
		lo := 1 + rng.IntN(4)
		hi := lo + rng.IntN(5)
		k := rng.IntN(8)
		got := Ngram{Min: lo, Max: hi}.Propose(tokens, k)
		if want := bruteNgram(tokens, lo, hi, k); !slices.Equal(got, want) {
			t.Fatalf("Ngram{%d,%d}.Propose(%v, %d) = %v, want %v", lo, hi, tokens, k, got, want)
		}
	}
}

func TestSimplePropose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens []int32
		n, k   int
		want   []int32
	}{
		{"latest occurrence", []int32{1, 2, 7, 1, 2, 8, 1, 2}, 2, 1, []int32{8}},
		{"exact size only", []int32{3, 2, 7, 1, 2}, 2, 1, nil},
		{"m caps", []int32{1, 2, 3, 4, 5, 1}, 1, 3, []int32{2, 3, 4}},
		{"to the end", []int32{1, 2, 1}, 1, 5, []int32{2, 1}},
		{"too short", []int32{1, 1}, 2, 3, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Simple{N: tc.n}).Propose(tc.tokens, tc.k); !slices.Equal(got, tc.want) {
				t.Errorf("Propose(%v) = %v, want %v", tc.tokens, got, tc.want)
			}
		})
	}
}

// TestProposeDoesNotAlias checks a draft cannot be grown into the
// request's own tokens.
func TestProposeDoesNotAlias(t *testing.T) {
	tokens := make([]int32, 6, 64)
	copy(tokens, []int32{1, 2, 3, 9, 1, 2})
	for _, p := range []Proposer{Ngram{Min: 1, Max: 2}, Simple{N: 2}} {
		d := p.Propose(tokens, 1)
		if len(d) != 1 || d[0] != 3 {
			t.Fatalf("%T: draft %v, want [3]", p, d)
		}
		_ = append(d, 42)
		if tokens[:7][6] == 42 || tokens[3] != 9 {
			t.Fatalf("%T: appending to a draft wrote into the tokens", p)
		}
	}
}

func TestParseVLLM(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Config
		wantErr string
	}{
		{`{"method":"ngram","num_speculative_tokens":4}`, Config{Method: MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 5, PromptLookupMax: 5}, ""},
		{`{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":7}`, Config{Method: MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 7, PromptLookupMax: 7}, ""},
		{`{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":2}`, Config{Method: MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 2, PromptLookupMax: 2}, ""},
		{`{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":2,"prompt_lookup_max":4}`, Config{Method: MethodNgram, NumSpeculativeTokens: 3, PromptLookupMin: 2, PromptLookupMax: 4}, ""},
		{`{"model":"[ngram]","num_speculative_tokens":2}`, Config{Method: MethodNgram, NumSpeculativeTokens: 2, PromptLookupMin: 5, PromptLookupMax: 5}, ""},
		{`{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":5,"prompt_lookup_max":4}`, Config{}, "must be <="},
		{`{"method":"ngram"}`, Config{}, "num_speculative_tokens is required"},
		{`{"method":"ngram","num_speculative_tokens":0}`, Config{}, "want 1..256"},
		{`{"method":"eagle","model":"x","num_speculative_tokens":2}`, Config{}, `method "eagle" is not built`},
		{`{"model":"draft.gguf","num_speculative_tokens":2}`, Config{Method: MethodDraftModel, NumSpeculativeTokens: 2, Model: "draft.gguf"}, ""},
		{`{"method":"draft_model","model":"d.gguf","num_speculative_tokens":3}`, Config{Method: MethodDraftModel, NumSpeculativeTokens: 3, Model: "d.gguf"}, ""},
		{`{"method":"draft_model","num_speculative_tokens":3}`, Config{}, `needs "model"`},
		{`{}`, Config{}, "method\" is required"},
		{`{"method":`, Config{}, "speculative-config"},
	} {
		got, err := ParseVLLM(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseVLLM(%s): error %v, want one saying %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseVLLM(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	if _, err := SimpleConfig(12, 48); err != nil {
		t.Errorf("SimpleConfig(12, 48): %v", err)
	}
	if _, err := SimpleConfig(0, 48); err == nil {
		t.Error("SimpleConfig(0, 48): no error")
	}
}

func FuzzNgram(f *testing.F) {
	f.Add([]byte{1, 2, 1, 2, 1}, uint8(1), uint8(3), uint8(4))
	f.Fuzz(func(t *testing.T, b []byte, lo, span, k uint8) {
		if len(b) > 200 {
			b = b[:200]
		}
		tokens := make([]int32, len(b))
		for i, c := range b {
			tokens[i] = int32(c % 5)
		}
		l, h := 1+int(lo%6), 1+int(lo%6)+int(span%6)
		got := Ngram{Min: l, Max: h}.Propose(tokens, int(k%16))
		if want := bruteNgram(tokens, l, h, int(k%16)); !slices.Equal(got, want) {
			t.Fatalf("Ngram{%d,%d}.Propose(%v) = %v, want %v", l, h, tokens, got, want)
		}
	})
}

func TestValidateSynthRates(t *testing.T) {
	base := Config{Method: MethodDraftModel, NumSpeculativeTokens: 3, Model: "d"}
	for _, tc := range []struct {
		rates []float64
		ok    bool
	}{
		{nil, true},
		{[]float64{1, 0.5, 0.5}, true},
		{[]float64{0, 0, 0}, true},
		{[]float64{0.5, 0.6, 0.1}, false}, // increasing
		{[]float64{1, 1}, false},          // one short
		{[]float64{1.5, 1, 1}, false},     // above 1
		{[]float64{-0.1, -0.2, -0.3}, false},
	} {
		c := base
		c.SynthRates = tc.rates
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("rates %v: error %v, want ok=%v", tc.rates, err, tc.ok)
		}
	}
}
