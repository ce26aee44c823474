package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/llm"
	"github.com/tandem-llm/tandem/frontend/server"
)

// The SDK acceptance suite: the real OpenAI SDKs for Python (PyPI
// `openai`, installed by scripts/sdktests/setup.sh into
// .cache/sdktests-venv), Node (npm `openai` in scripts/oracle, make oracle)
// and Go (openai-go/v3) drive a real server. Each script prints one line
// per check and "N passed, M failed".

const sdkKey = "sdk-test-key"

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sdkPython returns a Python that imports openai, or skips.
func sdkPython(t *testing.T) string { return pythonWith(t, "openai", "the Python openai SDK") }

// pythonWith returns a Python (the sdktests venv's, else python3) that
// imports module, or skips, naming what (the package) is missing.
func pythonWith(t *testing.T, module, what string) string {
	t.Helper()
	for _, py := range []string{filepath.Join(repoRoot(t), ".cache/sdktests-venv/bin/python"), "python3"} {
		if exec.Command(py, "-c", "import "+module).Run() == nil {
			return py
		}
	}
	t.Skip(what + " is not installed (run scripts/sdktests/setup.sh)")
	return ""
}

// sdkNode returns node when the Node openai SDK is installed, or skips.
func sdkNode(t *testing.T) string {
	t.Helper()
	return nodeWith(t, "openai/index.mjs", "the Node openai SDK")
}

// nodeWith returns node when scripts/oracle/node_modules holds file, or
// skips, naming what (the package) is missing.
func nodeWith(t *testing.T, file, what string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "scripts/oracle/node_modules", file)); err != nil {
		t.Skip(what + " is not installed (run make oracle)")
	}
	return node
}

// runSDKScript runs one SDK script and fails the test on any failed check.
func runSDKScript(t *testing.T, interpreter, script, base string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, interpreter, append([]string{filepath.Join(repoRoot(t), "scripts/sdktests", script), base}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", script, out)
	if err != nil || !strings.Contains(string(out), " 0 failed") {
		t.Fatalf("%s failed: %v", script, err)
	}
}

// TestSDKAcceptance serves the dummy model with an API key and a 1 MiB
// body limit and runs the three SDK suites against it.
func TestSDKAcceptance(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "1024",
		"--kv-cache-memory", "64Mi", "--threads", "1", "--api-key", sdkKey, "--max-request-body", "1M", "--reasoning-parser", "qwen3")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	opts := []string{"--api-key", sdkKey, "--max-body", strconv.Itoa(1 << 20)}
	t.Run("python", func(t *testing.T) { runSDKScript(t, sdkPython(t), "test_openai.py", base, opts...) })
	t.Run("node", func(t *testing.T) { runSDKScript(t, sdkNode(t), "test_openai.mjs", base, opts...) })
	t.Run("go", func(t *testing.T) { goSDKChecks(t, base) })
}

// TestSDKRateLimit runs an engine that takes one request at a time and a
// frontend, in this process, with --max-waiting-requests 1: with one
// request running and one waiting, the SDKs get a 429 with Retry-After.
func TestSDKRateLimit(t *testing.T) {
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine-0.sock")
	startProc(t, "engine", "--model", "dummy", "--listen", ep, "--max-model-len", "8192", "--kv-cache-memory", "64Mi",
		"--threads", "1", "--max-num-seqs", "1")
	client, err := engineclient.Dial(engineclient.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if err := client.WaitReady(ctxTimeout(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	info, _ := client.Info()
	tok, err := llm.LoadTokenizer("dummy", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{ServedModelName: info.ServedModelName, MaxModelLen: info.MaxModelLen, BlockSize: info.BlockSize,
		NumBlocks: info.NumBlocks, MaxWaitingRequests: 1, Version: "test"}, server.ClientEngine(client), tok)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Run("python", func(t *testing.T) {
		runSDKScript(t, sdkPython(t), "test_openai.py", ts.URL, "--max-waiting", "1", "--only", "error_429")
	})
	t.Run("node", func(t *testing.T) {
		runSDKScript(t, sdkNode(t), "test_openai.mjs", ts.URL, "--max-waiting", "1", "--only", "error429")
	})
}

// TestSDKUnavailable kills the engine under a running frontend: the SDKs
// get a 503 once its heartbeats stop.
func TestSDKUnavailable(t *testing.T) {
	s := startSplit(t)
	s.engine.signal(syscall.SIGKILL)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("/health never turned 503 after the engine died")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Run("python", func(t *testing.T) { runSDKScript(t, sdkPython(t), "test_openai.py", s.base, "--expect-unavailable") })
	t.Run("node", func(t *testing.T) { runSDKScript(t, sdkNode(t), "test_openai.mjs", s.base, "--expect-unavailable") })
	t.Run("go", func(t *testing.T) {
		c := openai.NewClient(option.WithBaseURL(s.base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
		_, err := c.Chat.Completions.New(ctxTimeout(t, time.Minute), openai.ChatCompletionNewParams{
			Model: "dummy", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}, MaxTokens: openai.Int(1)})
		wantAPIError(t, err, http.StatusServiceUnavailable, "")
	})
}

// wantAPIError checks that err is the SDK's typed error with the status
// (and param, when set).
func wantAPIError(t *testing.T, err error, status int, param string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T), want *openai.Error", err, err)
	}
	if apiErr.StatusCode != status || (param != "" && apiErr.Param != param) {
		t.Fatalf("status %d param %q, want %d %q", apiErr.StatusCode, apiErr.Param, status, param)
	}
}

// TestBeamSearchSessionEndToEnd runs width-4 beam search through both
// processes and checks, at the engine, that every beam sub-request carried
// the request's session id: with EOS ignored, 1 + (max_tokens-1)·4
// sub-requests.
func TestBeamSearchSessionEndToEnd(t *testing.T) {
	s := startSplit(t)
	sid := fmt.Sprintf("beam-%d", time.Now().UnixNano())
	body := map[string]any{"model": "dummy", "prompt": "beam me up, there is no life down here", "max_tokens": 5, "n": 4, "use_beam_search": true,
		"ignore_eos": true, "session_id": sid}
	code, resp := postJSON(t, s.base+"/v1/completions", body, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, resp)
	}
	if n := len(resp["choices"].([]any)); n != 4 {
		t.Fatalf("%d choices, want 4", n)
	}
	code, sess := getJSON(t, s.base+"/v1/sessions/"+sid)
	if code != http.StatusOK {
		t.Fatalf("session: %d %v", code, sess)
	}
	if got := sess["num_requests"].(float64); got != 1+4*4 {
		t.Fatalf("engine saw %v requests of the session, want 17 beam sub-requests", got)
	}
	var ids []any
	for _, e := range sess["engines"].([]any) {
		ids = append(ids, e.(map[string]any)["recent_request_ids"].([]any)...)
	}
	if len(ids) != 17 {
		t.Fatalf("%d recent request ids, want 17", len(ids))
	}
	for _, id := range ids {
		if !strings.Contains(id.(string), "-beam-") {
			t.Fatalf("request %v of the session is not a beam sub-request", id)
		}
	}
}

// goSDKChecks drives base with openai-go/v3.
func goSDKChecks(t *testing.T, base string) {
	c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(sdkKey), option.WithMaxRetries(0))
	ctx := ctxTimeout(t, 2*time.Minute)
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello, and tell me of the sea and the sky")}
	ignoreEOS := option.WithJSONSet("ignore_eos", true)

	t.Run("embeddings", func(t *testing.T) {
		r, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "dummy", EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
			Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the sea", "the sky", "the sea"}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Data) != 3 || r.Usage.PromptTokens == 0 || r.Usage.TotalTokens != r.Usage.PromptTokens {
			t.Fatalf("%+v", r)
		}
		for i, d := range r.Data {
			var norm float64
			for _, x := range d.Embedding {
				norm += x * x
			}
			if d.Index != int64(i) || len(d.Embedding) != len(r.Data[0].Embedding) || math.Abs(norm-1) > 1e-4 {
				t.Fatalf("embedding %d: index %d, %d values, norm² %g", i, d.Index, len(d.Embedding), norm)
			}
		}
		if !slices.Equal(r.Data[0].Embedding, r.Data[2].Embedding) || slices.Equal(r.Data[0].Embedding, r.Data[1].Embedding) {
			t.Fatal("equal texts embed differently, or different texts alike")
		}
		ids, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "dummy", EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
			Dimensions: openai.Int(16), Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: []int64{116, 104, 101}}})
		if err != nil || len(ids.Data) != 1 || len(ids.Data[0].Embedding) != 16 || ids.Usage.PromptTokens != 3 {
			t.Fatalf("token ids, 16 dimensions: %+v %v", ids, err)
		}
	})
	t.Run("chat n=2 logprobs", func(t *testing.T) {
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "dummy", Messages: user, MaxTokens: openai.Int(4),
			N: openai.Int(2), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(2)}, ignoreEOS)
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1019 the SDK deprecates system_fingerprint, but clients still read it and vLLM sends it
		fingerprint := r.SystemFingerprint
		if len(r.Choices) != 2 || len(r.Choices[1].Logprobs.Content) != 4 || len(r.Choices[1].Logprobs.Content[0].TopLogprobs) != 2 ||
			r.Usage.CompletionTokens != 8 || !strings.HasPrefix(fingerprint, "fp_") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("chat stream with usage", func(t *testing.T) {
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "dummy", Messages: user, MaxTokens: openai.Int(5),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}}, ignoreEOS)
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Usage.CompletionTokens != 5 || acc.Choices[0].FinishReason != "length" {
			t.Fatalf("usage %+v finish %q", acc.Usage, acc.Choices[0].FinishReason)
		}
	})
	t.Run("seed, header and extra body", func(t *testing.T) {
		sid := fmt.Sprintf("go-sdk-%d", time.Now().UnixNano())
		run := func(seed int64, temperature float64, opts ...option.RequestOption) string {
			r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "dummy", Messages: user, MaxTokens: openai.Int(10),
				Seed: openai.Int(seed), Temperature: openai.Float(temperature)}, append(opts, ignoreEOS)...)
			if err != nil {
				t.Fatal(err)
			}
			return r.Choices[0].Message.Content
		}
		a := run(7, 1, option.WithHeader("X-Session-ID", sid))
		b := run(7, 1, option.WithJSONSet("session_id", sid))
		if a != b || a == run(8, 1) {
			t.Fatalf("seed 7 twice: %q %q; seed 8 must differ", a, b)
		}
		if top1, greedy := run(9, 1, option.WithJSONSet("top_k", 1)), run(9, 0); top1 != greedy {
			t.Fatalf("top_k=1 %q != greedy %q", top1, greedy)
		}
		code, sess := getJSONAuth(t, base+"/v1/sessions/"+sid)
		if code != http.StatusOK || sess["num_requests"].(float64) != 2 {
			t.Fatalf("session: %d %v", code, sess)
		}
	})
	t.Run("completions logprobs and stop", func(t *testing.T) {
		// Keep the dummy model to printable ASCII so the text has stop strings.
		bias := map[string]int64{}
		for id := range 320 {
			if id < 32 || id > 126 {
				bias[strconv.Itoa(id)] = -100
			}
		}
		params := openai.CompletionNewParams{Model: "dummy", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")},
			MaxTokens: openai.Int(20), Logprobs: openai.Int(1), Temperature: openai.Float(0), LogitBias: bias}
		r, err := c.Completions.New(ctx, params, ignoreEOS)
		if err != nil {
			t.Fatal(err)
		}
		text := r.Choices[0].Text
		if len(r.Choices[0].Logprobs.Tokens) != 20 || r.Usage.CompletionTokens != 20 || len(text) != 20 {
			t.Fatalf("%+v", r)
		}
		stop := text[8:10]
		params.Stop = openai.CompletionNewParamsStopUnion{OfStringArray: []string{stop}}
		r, err = c.Completions.New(ctx, params, ignoreEOS)
		if err != nil {
			t.Fatal(err)
		}
		if want := text[:strings.Index(text, stop)]; r.Choices[0].Text != want || r.Choices[0].FinishReason != "stop" {
			t.Fatalf("text %q finish %q, want %q stop", r.Choices[0].Text, r.Choices[0].FinishReason, want)
		}
	})
	t.Run("responses", func(t *testing.T) {
		r1, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "dummy", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
			MaxOutputTokens: openai.Int(5), Instructions: openai.String("Be brief.")})
		if err != nil {
			t.Fatal(err)
		}
		st := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "dummy", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("More")},
			MaxOutputTokens: openai.Int(3), PreviousResponseID: openai.String(r1.ID)})
		var deltas string
		var final responses.Response
		for st.Next() {
			ev := st.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.completed":
				final = ev.Response
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if final.ID == "" || final.OutputText() != deltas || final.PreviousResponseID != r1.ID || final.Usage.InputTokens <= r1.Usage.InputTokens {
			t.Fatalf("final %+v deltas %q", final, deltas)
		}
		got, err := c.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
		if err != nil || got.OutputText() != r1.OutputText() {
			t.Fatalf("get: %v %+v", err, got)
		}
	})
	t.Run("typed errors", func(t *testing.T) {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "dummy", Messages: user, Temperature: openai.Float(-1)})
		wantAPIError(t, err, http.StatusBadRequest, "temperature")
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: user})
		wantAPIError(t, err, http.StatusNotFound, "model")
		bad := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
		_, err = bad.Models.List(ctx)
		wantAPIError(t, err, http.StatusUnauthorized, "")
		_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "dummy", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("x", 1<<20))}})
		wantAPIError(t, err, http.StatusRequestEntityTooLarge, "")
	})
}

// getJSONAuth is getJSON with the suite's API key.
func getJSONAuth(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+sdkKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, out
}
