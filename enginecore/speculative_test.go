package enginecore

import (
	"context"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/wire"
)

// specEngine is the dummy model on the CPU backend, with sc's
// speculative decoding (nil: none).
func specEngine(t *testing.T, sc *spec.Config) *Engine {
	t.Helper()
	cfg, w := model.Dummy(256)
	be, err := cpu.New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	e, err := NewEngine(Config{MaxModelLen: 256, BlockSize: 4, NumBlocks: 512, MaxNumSeqs: 8, MaxNumBatchedTokens: 512,
		EnablePrefixCaching: true, Speculative: sc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
	if err != nil {
		t.Fatal(err)
	}
	e.Handle(time.Unix(1000, 0), "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
	return e
}

// runAll adds reqs to e at once and steps until every one finishes,
// returning each one's tokens and logprobs rows.
func runAll(t *testing.T, e *Engine, reqs []*wire.EngineCoreRequest) (map[string][]int32, map[string]*wire.Logprobs) {
	t.Helper()
	now := time.Unix(1000, 0)
	toks, lps := map[string][]int32{}, map[string]*wire.Logprobs{}
	done := 0
	collect := func(outs []Out) {
		for _, o := range outs {
			b, ok := o.Payload.(*wire.EngineCoreOutputs)
			if !ok {
				continue
			}
			for _, out := range b.Outputs {
				toks[out.RequestID] = append(toks[out.RequestID], out.NewTokenIDs...)
				if l := out.NewLogprobs; l != nil {
					if lps[out.RequestID] == nil {
						lps[out.RequestID] = &wire.Logprobs{}
					}
					acc := lps[out.RequestID]
					acc.TokenIDs, acc.Logprobs, acc.Ranks = append(acc.TokenIDs, l.TokenIDs...), append(acc.Logprobs, l.Logprobs...), append(acc.Ranks, l.Ranks...)
				}
				if out.Finished() {
					done++
				}
			}
		}
	}
	for _, r := range reqs {
		collect(e.Handle(now, "fe", r))
	}
	for i := 0; done < len(reqs); i++ {
		if i > 2000 {
			t.Fatal("still working after 2000 steps")
		}
		outs, err := e.Step(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		collect(outs)
	}
	return toks, lps
}

// TestSpeculativeIsDecoding runs the same requests (greedy, seeded at
// temperature 1 with penalties and logprobs, a stop token, min_tokens)
// side by side on the dummy model with and without n-gram speculation:
// every request gets the same tokens and logprobs, and drafts were
// verified, some kept.
func TestSpeculativeIsDecoding(t *testing.T) {
	phrase := []int32{'t', 'h', 'e', ' ', 'c', 'a', 't', ' ', 's', 'a', 't', ' '}
	var prompt []int32
	for range 4 {
		prompt = append(prompt, phrase...)
	}
	reqs := func() []*wire.EngineCoreRequest {
		var out []*wire.EngineCoreRequest
		for i, mk := range []func(p *wire.SamplingParams){
			func(p *wire.SamplingParams) { p.Temperature = 0 },
			func(p *wire.SamplingParams) { p.Temperature, p.Seed, p.Logprobs = 1, ptrTo[int64](5), ptrTo(3) },
			func(p *wire.SamplingParams) {
				p.Temperature, p.Seed, p.FrequencyPenalty, p.TopK = 0.8, ptrTo[int64](9), 0.5, 20
			},
			func(p *wire.SamplingParams) { p.Temperature, p.MinTokens, p.Logprobs = 0, 20, ptrTo(1) },
			func(p *wire.SamplingParams) { p.Temperature, p.Seed, p.StopTokenIDs = 1, ptrTo[int64](3), []int32{'a'} },
		} {
			p := wire.DefaultSamplingParams()
			p.MaxTokens, p.IgnoreEOS = 60, true
			mk(&p)
			out = append(out, &wire.EngineCoreRequest{RequestID: string(rune('a' + i)), PromptTokenIDs: slices.Clone(prompt[i:]), SamplingParams: p})
		}
		return out
	}
	plainToks, plainLPs := runAll(t, specEngine(t, nil), reqs())
	for _, sc := range []spec.Config{
		{Method: spec.MethodNgram, NumSpeculativeTokens: 5, PromptLookupMin: 1, PromptLookupMax: 4},
		{Method: spec.MethodNgramSimple, NumSpeculativeTokens: 8, PromptLookupMin: 2, PromptLookupMax: 2},
	} {
		e := specEngine(t, &sc)
		toks, lps := runAll(t, e, reqs())
		for id, want := range plainToks {
			if !slices.Equal(toks[id], want) {
				t.Errorf("%s: request %s with drafts %v\nwithout %v", sc.Method, id, toks[id], want)
			}
			if w, g := plainLPs[id], lps[id]; !closeLogprobs(w, g) {
				t.Errorf("%s: request %s: logprobs differ with drafts", sc.Method, id)
			}
		}
		st := e.Load().SpecDecoding
		if st == nil || st.NumDrafts == 0 || st.NumAcceptedTokens == 0 || st.NumAcceptedTokens > st.NumDraftTokens {
			t.Errorf("%s: speculative stats %+v: want drafts, some tokens kept", sc.Method, st)
		}
		t.Logf("%s: %+v", sc.Method, *st)
	}
}

// closeLogprobs: the same rows, logprobs within 1e-4 (a verification step
// computes several positions in one pass, whose sums may round apart).
func closeLogprobs(a, b *wire.Logprobs) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Ranks) != len(b.Ranks) || !slices.EqualFunc(a.TokenIDs, b.TokenIDs, slices.Equal[[]int32]) {
		return false
	}
	for i := range a.Logprobs {
		for j := range a.Logprobs[i] {
			if math.Abs(a.Logprobs[i][j]-b.Logprobs[i][j]) > 1e-4 {
				return false
			}
		}
	}
	return true
}
