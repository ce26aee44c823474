package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/inproc"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/llm"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// The Go text API (frontend/llm) over an in-process engine
// (enginecore/inproc), checked against the HTTP server a user would call:
// same text for the same request, stop strings, n samples under one
// session, best_of, and a batch whose answers equal the prompts run alone.

// startInproc runs an in-process engine on model and opens an LLM on it.
func startInproc(t *testing.T, model string, maxModelLen int) (*inproc.Engine, *llm.LLM) {
	t.Helper()
	ctx := ctxTimeout(t, 5*time.Minute)
	eng, err := inproc.Start(ctx, inproc.Config{Model: model, Threads: runtime.NumCPU(), MaxModelLen: maxModelLen, KVCacheBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Errorf("engine Close: %v", err)
		}
	})
	l, err := llm.Open(ctx, llm.Config{Model: model, Engines: []string{eng.Endpoint()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return eng, l
}

func greedyParams(maxTokens int) llm.Params {
	p := llm.DefaultParams()
	p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, maxTokens, true
	return p
}

func TestLLMMatchesHTTP(t *testing.T) {
	eng, l := startInproc(t, "dummy", 512)
	ctx := ctxTimeout(t, 2*time.Minute)
	// A frontend process on the same engine: the HTTP answer to compare.
	port := freePort(t)
	fe := startProc(t, "frontend", "--engines", eng.Endpoint(), "--port", fmt.Sprint(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)

	prompt := "The Go text API and the HTTP server agree"
	res, err := l.Complete(ctx, prompt, greedyParams(24))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Completions[0]
	code, body := postJSON(t, base+"/v1/completions", map[string]any{"model": "dummy", "prompt": prompt, "max_tokens": 24, "temperature": 0, "ignore_eos": true}, nil)
	if code != http.StatusOK {
		t.Fatalf("HTTP: %d %v", code, body)
	}
	want := body["choices"].([]any)[0].(map[string]any)["text"].(string)
	if got.Text != want || got.Finish != "length" || len(got.TokenIDs) != 24 {
		t.Fatalf("llm %q (%s, %d tokens), HTTP %q", got.Text, got.Finish, len(got.TokenIDs), want)
	}

	msgs := []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"}}
	chat, err := l.CompleteChat(ctx, msgs, greedyParams(16))
	if err != nil {
		t.Fatal(err)
	}
	code, body = postJSON(t, base+"/v1/chat/completions", map[string]any{"model": "dummy", "max_tokens": 16, "temperature": 0, "ignore_eos": true,
		"messages": []map[string]string{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}}}, nil)
	if code != http.StatusOK {
		t.Fatalf("HTTP chat: %d %v", code, body)
	}
	wantChat := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	if chat.Completions[0].Text != wantChat {
		t.Fatalf("llm chat %q, HTTP %q", chat.Completions[0].Text, wantChat)
	}

	// A stop string taken from the middle of the greedy text ends it there,
	// in the stream and in Complete.
	full := []rune(got.Text)
	stop := string(full[len(full)/2 : len(full)/2+2])
	cut := strings.Index(got.Text, stop)
	p := greedyParams(24)
	p.Stop = []string{stop}
	st, err := l.Generate(ctx, prompt, p)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var last llm.Delta
	for {
		d, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(d.Text)
		last = d
	}
	if text.String() != got.Text[:cut] || last.Finish != "stop" || last.StopReason != stop {
		t.Fatalf("with stop %q: %q (%s %v), want %q", stop, text.String(), last.Finish, last.StopReason, got.Text[:cut])
	}
}

func TestLLMSamplesShareTheSession(t *testing.T) {
	_, l := startInproc(t, "dummy", 512)
	ctx := ctxTimeout(t, 2*time.Minute)
	p := llm.DefaultParams()
	p.N, p.MaxTokens, p.IgnoreEOS = 3, 12, true
	seed := int64(7)
	p.Seed = &seed
	st, err := l.Generate(ctx, "a prompt of more than sixteen tokens, sampled three times", p, engineclient.WithSessionID("conv-3"))
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int, 3)
	ends := 0
	for {
		d, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tokens[d.Index] += len(d.TokenIDs)
		if d.Finish != "" {
			ends++
		}
	}
	if ends != 3 || tokens[0] != 12 || tokens[1] != 12 || tokens[2] != 12 {
		t.Fatalf("samples: %d ended, tokens %v; want 3 of 12", ends, tokens)
	}
	sess, err := l.Client().Session(ctx, "conv-3")
	if err != nil || len(sess) != 1 || sess[0].NumRequests != 3 {
		t.Fatalf("session: %+v, %v; want 3 requests on one engine", sess, err)
	}

	// best_of 3: the one kept has the best mean logprob of the three the
	// same seeds sample.
	p.Logprobs = new(int)
	all, err := l.Complete(ctx, "best of three", p)
	if err != nil {
		t.Fatal(err)
	}
	best := math.Inf(-1)
	for _, c := range all.Completions {
		best = max(best, c.MeanLogprob())
	}
	p.N, p.BestOf, p.Logprobs = 1, 3, nil
	one, err := l.Complete(ctx, "best of three", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Completions) != 1 || one.Completions[0].Logprobs != nil {
		t.Fatalf("best_of: %+v", one.Completions)
	}
	var kept *llm.Completion
	for i := range all.Completions {
		if all.Completions[i].Text == one.Completions[0].Text {
			kept = &all.Completions[i]
		}
	}
	if kept == nil || kept.MeanLogprob() != best {
		t.Fatalf("best_of kept %q, not the best of %+v", one.Completions[0].Text, all.Completions)
	}
}

func TestLLMBatch(t *testing.T) {
	_, l := startInproc(t, "dummy", 512)
	ctx := ctxTimeout(t, 2*time.Minute)
	prompts := []string{"first prompt", "a second, longer prompt than the first", "3", "the fourth", "fifth and last"}
	res, err := l.Batch(ctx, prompts, greedyParams(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(prompts) {
		t.Fatalf("%d results for %d prompts", len(res), len(prompts))
	}
	for i, prompt := range prompts {
		alone, err := l.Complete(ctx, prompt, greedyParams(10))
		if err != nil {
			t.Fatal(err)
		}
		if res[i].Completions[0].Text != alone.Completions[0].Text || res[i].PromptTokens != alone.PromptTokens {
			t.Errorf("prompt %d: batch %q, alone %q", i, res[i].Completions[0].Text, alone.Completions[0].Text)
		}
	}
	// A prompt over the context length fails the batch with the engine's reason.
	long := strings.Repeat("x", 600)
	if _, err := l.Batch(ctx, []string{"ok", long}, greedyParams(4)); !errors.Is(err, llm.ErrRejected) {
		t.Fatalf("over-long prompt: %v, want ErrRejected", err)
	}
}

// TestDefaultModelLLMBatch: the offline batch API on the real default
// model answers like the HTTP tests' model does.
func TestDefaultModelLLMBatch(t *testing.T) {
	path := defaultModel(t)
	_, l := startInproc(t, path, 1024)
	ctx := ctxTimeout(t, 5*time.Minute)
	p := greedyParams(24)
	p.IgnoreEOS = false
	res, err := l.BatchChat(ctx, [][]tokenizer.Message{
		{{Role: "user", Content: "What is the capital of France?"}},
		{{Role: "user", Content: "What is 2+2?"}},
	}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res[0].Completions[0].Text, "Paris") {
		t.Errorf("capital of France: %q", res[0].Completions[0].Text)
	}
	if a := res[1].Completions[0].Text; !strings.Contains(a, "4") && !strings.Contains(a, "four") {
		t.Errorf("2+2: %q", res[1].Completions[0].Text)
	}
}

// TestLLMPromptLogprobs: the Go API returns a completion's prompt
// logprobs, a row per prompt token after the first, the prompt token in
// column 0.
func TestLLMPromptLogprobs(t *testing.T) {
	_, l := startInproc(t, "dummy", 512)
	ctx := ctxTimeout(t, time.Minute)
	p := greedyParams(2)
	k := 1
	p.SamplingParams.PromptLogprobs = &k
	res, err := l.Complete(ctx, "prompt logprobs", p)
	if err != nil {
		t.Fatal(err)
	}
	lp := res.Completions[0].PromptLogprobs
	if lp == nil || len(lp.Ranks) != res.PromptTokens-1 || len(lp.TokenIDs[0]) != k+1 {
		t.Fatalf("prompt logprobs %+v for %d prompt tokens: want %d rows of %d", lp, res.PromptTokens, res.PromptTokens-1, k+1)
	}
}
