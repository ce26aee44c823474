package enginecore

import (
	"context"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/wire"
)

// specEngine is the dummy model on the CPU backend, with sc's
// speculative decoding (nil: none); a draft model method drafts with the
// dummy model too (a second backend), whose greedy drafts the model
// itself agrees with.
func specEngine(t *testing.T, sc *spec.Config) *Engine {
	t.Helper()
	dummy := func() runner.Backend {
		cfg, w := model.Dummy(256)
		be, err := cpu.New(cfg, w, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		return be
	}
	be := dummy()
	var draft runner.Backend
	if sc != nil && sc.Method == spec.MethodDraftModel {
		draft = dummy()
	}
	e, err := NewEngine(Config{MaxModelLen: 256, BlockSize: 4, NumBlocks: 512, MaxNumSeqs: 8, MaxNumBatchedTokens: 512,
		EnablePrefixCaching: true, Speculative: sc, DraftBackend: draft, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
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
					lps[out.RequestID].Append(l)
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
		{Method: spec.MethodDraftModel, NumSpeculativeTokens: 4, Model: "dummy"},
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
		if sc.Method == spec.MethodDraftModel {
			if n := e.drafter.NumFreeBlocks(); n != 512+8 {
				t.Errorf("draft cache: %d free blocks after every request finished, want all 520", n)
			}
			// The draft is the model: greedy requests keep nearly every
			// draft token (a near-tie may round apart between the draft's
			// one-token steps and the verification's several).
			g := specEngine(t, &sc)
			greedy := reqs()
			for _, r := range greedy {
				r.SamplingParams.Temperature = 0
			}
			runAll(t, g, greedy)
			if st := g.Load().SpecDecoding; st.NumAcceptedTokens*10 < st.NumDraftTokens*9 {
				t.Errorf("draft model = target, greedy: %d of %d draft tokens kept", st.NumAcceptedTokens, st.NumDraftTokens)
			}
		}
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

// TestDraftModelVocabulary: a draft model of another vocabulary (beyond
// llama.cpp's 128-token slack) or BOS is refused when the engine starts.
func TestDraftModelVocabulary(t *testing.T) {
	sc := &spec.Config{Method: spec.MethodDraftModel, NumSpeculativeTokens: 3, Model: "d"}
	for _, tc := range []struct {
		draft *countingBackend
		want  string
	}{
		{&countingBackend{vocab: 64 + 129}, "the draft model's vocabulary (193 tokens) is not the model's (64)"},
		{nil, "without a draft model loaded"},
	} {
		cfg := Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 8, MaxNumSeqs: 2, MaxNumBatchedTokens: 16, Speculative: sc,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if tc.draft != nil {
			cfg.DraftBackend = tc.draft
		}
		_, err := NewEngine(cfg, &countingBackend{vocab: 64})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", err, tc.want)
		}
	}
	cfg := Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 8, MaxNumSeqs: 2, MaxNumBatchedTokens: 16, Speculative: sc,
		DraftBackend: &countingBackend{vocab: 64 + 100}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := NewEngine(cfg, &countingBackend{vocab: 64}); err != nil {
		t.Errorf("a draft vocabulary 100 tokens larger: %v", err)
	}
}

// TestReadyReportsSpeculative checks that READY carries the engine's
// speculative decoding (the frontend's generation_settings report it),
// and nothing when it does not draft.
func TestReadyReportsSpeculative(t *testing.T) {
	for _, tc := range []struct {
		sc   *spec.Config
		want *wire.SpecInfo
	}{
		{nil, nil},
		{&spec.Config{Method: spec.MethodNgram, NumSpeculativeTokens: 4, PromptLookupMin: 2, PromptLookupMax: 3, MinDraft: 1},
			&wire.SpecInfo{NMax: 4, NMin: 1, Type: "ngram"}},
		{&spec.Config{Method: spec.MethodDraftModel, Model: "draft.gguf", NumSpeculativeTokens: 6, PMin: 0.5},
			&wire.SpecInfo{NMax: 6, PMin: 0.5, Type: "draft-simple"}},
	} {
		e := specEngine(t, tc.sc)
		outs := e.Handle(time.Unix(1000, 0), "fe2", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe2"})
		if len(outs) != 1 {
			t.Fatalf("HELLO: %d outputs", len(outs))
		}
		got := outs[0].Payload.(*wire.Ready).Speculative
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("config %+v: READY speculative %+v, want %+v", tc.sc, got, tc.want)
		}
	}
}
