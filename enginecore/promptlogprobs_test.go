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
	"github.com/tandem-llm/tandem/wire"
)

// runToEnd adds req to e and steps until it finishes, returning its
// outputs in order.
func runToEnd(t *testing.T, e *Engine, req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
	t.Helper()
	now := time.Unix(1000, 0)
	var got []wire.EngineCoreOutput
	collect := func(outs []Out) {
		for _, o := range outs {
			if b, ok := o.Payload.(*wire.EngineCoreOutputs); ok {
				for _, out := range b.Outputs {
					if out.RequestID == req.RequestID {
						got = append(got, out)
					}
				}
			}
		}
	}
	collect(e.Handle(now, "fe", req))
	for i := 0; e.HasWork(); i++ {
		if i > 200 {
			t.Fatal("still working after 200 steps")
		}
		outs, err := e.Step(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		collect(outs)
	}
	if len(got) == 0 || got[len(got)-1].FinishReason == wire.FinishNone {
		t.Fatalf("request %s did not finish: %+v", req.RequestID, got)
	}
	return got
}

func dummyEngine(t *testing.T, maxBatched int) *Engine {
	t.Helper()
	cfg, w := model.Dummy(64)
	be, err := cpu.New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	e, err := NewEngine(Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 64, MaxNumSeqs: 4, MaxNumBatchedTokens: maxBatched,
		EnablePrefixCaching: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
	if err != nil {
		t.Fatal(err)
	}
	e.Handle(time.Unix(1000, 0), "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
	return e
}

// TestPromptLogprobsEngine: prompt logprobs come with the first token, a
// row per prompt position after the first, column 0 the prompt token; the
// same whether the prompt runs in one step or in chunks, and whether its
// prefix is cached (a prompt-logprobs request computes it again, as vLLM's
// does, and reports no cached tokens) — and the greedy tokens are those of
// a request without them.
func TestPromptLogprobsEngine(t *testing.T) {
	prompt := make([]int32, 22)
	for i := range prompt {
		prompt[i] = int32(5 + 13*i%300)
	}
	k := 2
	req := func(id string, withLogprobs bool) *wire.EngineCoreRequest {
		sp := wire.DefaultSamplingParams()
		sp.Temperature, sp.MaxTokens, sp.IgnoreEOS = 0, 3, true
		if withLogprobs {
			sp.PromptLogprobs = &k
		}
		return &wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: prompt, SamplingParams: sp}
	}
	tokens := func(outs []wire.EngineCoreOutput) []int32 {
		var ids []int32
		for _, o := range outs {
			ids = append(ids, o.NewTokenIDs...)
		}
		return ids
	}

	whole := dummyEngine(t, 64)
	plain := runToEnd(t, whole, req("plain", false)) // fills the prefix cache
	ref := runToEnd(t, whole, req("cached", true))
	lp := ref[0].NewPromptLogprobs
	if lp == nil || len(lp.Ranks) != len(prompt)-1 {
		t.Fatalf("first output's prompt logprobs %+v: want %d rows", lp, len(prompt)-1)
	}
	for i, o := range ref[1:] {
		if o.NewPromptLogprobs != nil {
			t.Errorf("output %d carries prompt logprobs again", i+1)
		}
	}
	for p, row := range lp.TokenIDs {
		if len(row) != k+1 || row[0] != prompt[p+1] {
			t.Errorf("row %d: ids %v, want the prompt token %d then %d others", p, row, prompt[p+1], k)
		}
	}
	if ref[0].NumCachedTokens != 0 {
		t.Errorf("prompt-logprobs request read %d cached tokens, want 0", ref[0].NumCachedTokens)
	}
	if !slices.Equal(tokens(ref), tokens(plain)) {
		t.Errorf("greedy tokens %v with prompt logprobs, %v without", tokens(ref), tokens(plain))
	}
	if again := runToEnd(t, whole, req("plain-again", false)); again[0].NumCachedTokens == 0 {
		t.Error("a plain request after them found nothing cached")
	}

	chunked := dummyEngine(t, 8)
	got := runToEnd(t, chunked, req("chunked", true))
	clp := got[0].NewPromptLogprobs
	if clp == nil || !slices.EqualFunc(clp.TokenIDs, lp.TokenIDs, slices.Equal) || !slices.Equal(clp.Ranks, lp.Ranks) {
		t.Fatalf("chunked prompt logprobs %+v, want %+v", clp, lp)
	}
	for p := range lp.Logprobs {
		for j := range lp.Logprobs[p] {
			if d := math.Abs(clp.Logprobs[p][j] - lp.Logprobs[p][j]); d > 1e-3 {
				t.Errorf("row %d col %d: chunked %g, whole %g", p, j, clp.Logprobs[p][j], lp.Logprobs[p][j])
			}
		}
	}
	if !slices.Equal(tokens(got), tokens(plain)) {
		t.Errorf("chunked greedy tokens %v, want %v", tokens(got), tokens(plain))
	}
}

// TestMaxLogprobsEngine: --max-logprobs reaches READY and the requests'
// checks; with -1 a request gets the whole vocabulary per position, as
// vLLM's max_logprobs -1 allows.
func TestMaxLogprobsEngine(t *testing.T) {
	cfg, w := model.Dummy(64)
	be, err := cpu.New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	newEngine := func(max *int) (*Engine, error) {
		return NewEngine(Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 64, MaxNumSeqs: 4, MaxNumBatchedTokens: 64, MaxLogprobs: max,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
	}
	if _, err := newEngine(ptrTo(-2)); err == nil {
		t.Error("max logprobs -2 accepted; want an error")
	}
	for _, tt := range []struct {
		max  *int
		want int
	}{{nil, 20}, {ptrTo(-1), -1}, {ptrTo(3), 3}} {
		e, err := newEngine(tt.max)
		if err != nil {
			t.Fatal(err)
		}
		outs := e.Handle(time.Unix(1000, 0), "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
		if r, ok := outs[0].Payload.(*wire.Ready); !ok || r.MaxLogprobs != tt.want {
			t.Errorf("max logprobs %v: READY %+v, want max_logprobs %d", tt.max, outs[0].Payload, tt.want)
		}
	}

	e, err := newEngine(ptrTo(-1))
	if err != nil {
		t.Fatal(err)
	}
	e.Handle(time.Unix(1000, 0), "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
	sp := wire.DefaultSamplingParams()
	sp.Temperature, sp.MaxTokens, sp.IgnoreEOS, sp.Logprobs, sp.PromptLogprobs = 0, 2, true, ptrTo(-1), ptrTo(-1)
	outs := runToEnd(t, e, &wire.EngineCoreRequest{RequestID: "all", PromptTokenIDs: []int32{5, 6, 7}, SamplingParams: sp})
	if outs[0].FinishReason == wire.FinishError {
		t.Fatalf("refused: %v", outs[0].StopReason)
	}
	v := cfg.VocabSize
	for p, row := range outs[0].NewPromptLogprobs.TokenIDs {
		if len(row) != v+1 { // the prompt token, then every token by rank
			t.Errorf("prompt row %d: %d entries, want %d", p, len(row), v+1)
		}
	}
	for i, o := range outs {
		if n := len(o.NewLogprobs.TokenIDs[0]); n != v+1 {
			t.Errorf("output %d: %d logprobs, want %d", i, n, v+1)
		}
	}
}
