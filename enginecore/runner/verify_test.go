package runner

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/wire"
)

// decodeItem is one request's step: tokens[start:] fed, the last draft of
// them drafts.
func decodeItem(tokens []int32, numPrompt, start, draft int, p *wire.SamplingParams) batch.Item {
	table := make([]int32, 64)
	for i := range table {
		table[i] = int32(i)
	}
	return batch.Item{RequestID: "r", Tokens: tokens, NumPrompt: numPrompt, Start: start, Len: len(tokens) - start,
		BlockTable: table, Sample: true, Params: p, Draft: draft}
}

// TestVerifyIsDecoding: whatever the drafts (right, partly right, wrong,
// none), a request verified with drafts gets the tokens and logprobs it
// gets one token at a time, at temperature 1 with a seed, penalties and
// top-k: the runner samples each position with the request's RNG and its
// outputs so far, and stops at the first token that differs from the
// draft.
func TestVerifyIsDecoding(t *testing.T) {
	const numOut = 40
	prompt := []int32{3, 1, 4, 1, 5}
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 50 {
		seed := int64(trial)
		lp := 2
		p := wire.DefaultSamplingParams()
		p.Temperature, p.Seed, p.Logprobs = 1, &seed, &lp
		p.FrequencyPenalty, p.TopK = 0.3, 12

		be := &tokenLogits{vocab: 16}
		ref := New(be, 16)
		want := slices.Clone(prompt)
		var wantLP []*wire.Logprobs
		for start := 0; len(want)-len(prompt) < numOut; start = len(want) - 1 {
			b := &batch.Batch{Items: []batch.Item{decodeItem(want, len(prompt), start, 0, &p)}}
			res, err := ref.Execute(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, res.Sampled[0])
			wantLP = append(wantLP, res.Logprobs[0])
		}

		spec := New(be, 16)
		got := slices.Clone(prompt)
		var gotLP wire.Logprobs
		for start := 0; len(got)-len(prompt) < numOut; start = len(got) - 1 {
			n := len(got) - len(prompt)
			d := 0
			if start > 0 {
				d = min(rng.IntN(6), numOut-n-1)
			}
			draft := slices.Clone(want[len(got) : len(got)+d])
			if d > 0 && rng.IntN(2) == 0 { // a wrong token somewhere
				i := rng.IntN(d)
				draft[i] = (draft[i] + 1 + int32(rng.IntN(15))) % 16
			}
			tokens := append(slices.Clone(got), draft...)
			b := &batch.Batch{Items: []batch.Item{decodeItem(tokens, len(prompt), start, d, &p)}}
			res, err := spec.Execute(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			toks := res.NewTokens(b, 0)
			if len(toks) == 0 || len(toks) > d+1 || res.Sampled[0] != toks[len(toks)-1] {
				t.Fatalf("trial %d: draft %v gave %v (sampled %d)", trial, draft, toks, res.Sampled[0])
			}
			if !slices.Equal(toks[:len(toks)-1], draft[:len(toks)-1]) {
				t.Fatalf("trial %d: kept %v of draft %v", trial, toks[:len(toks)-1], draft)
			}
			if l := res.Logprobs[0]; len(l.Ranks) != len(toks) {
				t.Fatalf("trial %d: %d logprobs rows for %d tokens", trial, len(l.Ranks), len(toks))
			}
			got = append(got, toks...)
			gotLP.Append(res.Logprobs[0])
		}
		got = got[:len(want)] // the last step may run past numOut; compare what both have
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: with drafts %v\nwithout %v", trial, got[len(prompt):], want[len(prompt):])
		}
		var refLP wire.Logprobs
		for _, l := range wantLP {
			refLP.Append(l)
		}
		if diff := cmp.Diff(refLP, *gotLP.Head(numOut)); diff != "" {
			t.Fatalf("trial %d: logprobs differ (-without +with drafts):\n%s", trial, diff)
		}
	}
}

// TestVerifyRows: a drafted item asks the backend for a row at its last
// token and at each draft token, and nothing else changes for the others.
func TestVerifyRows(t *testing.T) {
	be := &tokenLogits{vocab: 16}
	r := New(be, 16)
	p := wire.DefaultSamplingParams()
	p.Temperature = 0
	plain := decodeItem([]int32{1, 2, 3}, 2, 2, 0, &p)
	plain.RequestID = "plain"
	b := &batch.Batch{Items: []batch.Item{decodeItem([]int32{1, 2, 3, 4, 5, 6}, 2, 2, 3, &p), plain}}
	if _, err := r.Execute(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var rows [][2]int
	for _, s := range be.seqs {
		first, n := s.LogitRows()
		rows = append(rows, [2]int{first, n})
	}
	if want := [][2]int{{0, 4}, {4, 1}}; !slices.Equal(rows, want) {
		t.Errorf("logits rows (first, n) %v, want %v", rows, want)
	}
}

// TestSynthRates: llama-server's benchmarking acceptance keeps every
// draft at rate 1 (even ones the model disagrees with, but never a stop
// token), none at rate 0, and a seeded request the same ones each time.
func TestSynthRates(t *testing.T) {
	p := wire.DefaultSamplingParams()
	p.Temperature, p.Seed = 0, ptrTo[int64](3)
	run := func(rates []float64, draft []int32, stop []int32) []int32 {
		r := New(&tokenLogits{vocab: 16}, 16)
		r.SetSynthRates(rates)
		it := decodeItem(append([]int32{1, 2, 3}, draft...), 2, 2, len(draft), &p)
		it.StopTokenIDs = stop
		res, err := r.Execute(context.Background(), &batch.Batch{Items: []batch.Item{it}})
		if err != nil {
			t.Fatal(err)
		}
		return res.NewTokens(&batch.Batch{Items: []batch.Item{it}}, 0)
	}
	draft := []int32{9, 9, 9}
	if got := run([]float64{1, 1, 1}, draft, nil); len(got) != 4 || !slices.Equal(got[:3], draft) {
		t.Errorf("rates 1: %v, want the whole draft and one more", got)
	}
	if got := run([]float64{1, 1, 1}, draft, []int32{9}); len(got) != 1 || got[0] == 9 {
		t.Errorf("rates 1, draft of stop tokens: %v, want only the model's token", got)
	}
	if got := run([]float64{0, 0, 0}, draft, nil); len(got) != 1 {
		t.Errorf("rates 0: %v, want only the model's token", got)
	}
	half := []float64{0.5, 0.25, 0.125}
	first := run(half, draft, nil)
	for range 5 {
		if got := run(half, draft, nil); !slices.Equal(got, first) {
			t.Fatalf("seeded: %v then %v", first, got)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
