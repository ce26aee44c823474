package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newTestServer(t *testing.T, f *fakeEngine, apiKey string) *httptest.Server {
	t.Helper()
	return newTestServerWith(t, f, func(c *Config) { c.APIKey = apiKey }, tokenizer.NewByte())
}

// newTestServerWith serves the fake engine with the test config changed by
// edit and the given tokenizer.
func newTestServerWith(t *testing.T, f *fakeEngine, edit func(*Config), tok tokenizer.Tokenizer) *httptest.Server {
	t.Helper()
	nowUnix = func() int64 { return 1700000000 }
	cfg := Config{ServedModelName: "dummy", MaxModelLen: 64, BlockSize: 16, NumBlocks: 16, Version: "test", MaxRequestBody: "1K"}
	if edit != nil {
		edit(&cfg)
	}
	s := New(cfg, f, tok)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, ts *httptest.Server, method, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "fixed")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestStreamTranscripts(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		body   string
		script func(*wire.EngineCoreRequest) []wire.EngineCoreOutput
	}{
		{"chat_usage.sse", "/v1/chat/completions",
			`{"model":"dummy","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
			func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hé!", wire.FinishStop, 259) }},
		{"chat_stop_string.sse", "/v1/chat/completions",
			`{"model":"dummy","messages":[{"role":"user","content":"hi"}],"stream":true,"stop":["lo w"]}`,
			func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("hello world", wire.FinishLength) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: tc.script}
			ts := newTestServer(t, f, "")
			code, body := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			golden(t, tc.name, body)
		})
	}
}

// TestStreamN2 checks an n=2 stream without relying on how the choices
// interleave: each choice's text and finish arrive in order.
func TestStreamN2(t *testing.T) {
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return tokens(map[bool]string{true: "xy", false: "zw"}[strings.HasPrefix(r.RequestID, "0_")], wire.FinishLength)
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"model":"dummy","prompt":"ab","stream":true,"n":2,"max_tokens":2}`, nil)
	if code != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("%d %s", code, body)
	}
	text := map[int]string{}
	finished := map[int]bool{}
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Index        int
				Text         string
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if finished[c.Index] {
				t.Fatalf("choice %d got text after its finish", c.Index)
			}
			text[c.Index] += c.Text
			finished[c.Index] = c.FinishReason != nil
		}
	}
	if text[0] != "xy" || text[1] != "zw" || !finished[0] || !finished[1] {
		t.Fatalf("texts %v finished %v", text, finished)
	}
}

func TestChatNonStreaming(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Paris", wire.FinishStop, 259) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/chat/completions",
		`{"model":"dummy","messages":[{"role":"user","content":"capital of France?"}],"session_id":"s1","n":2,"seed":5}`,
		map[string]string{"X-Session-ID": "ignored"})
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var resp struct {
		ID      string
		Choices []struct {
			Index        int
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.ID != "chatcmpl-fixed" || len(resp.Choices) != 2 || resp.Choices[1].Message.Content != "Paris" || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("response %s", body)
	}
	if resp.Usage.CompletionTokens != 12 || resp.Usage.PromptTokensDetails.CachedTokens != 3 || resp.Usage.PromptTokens == 0 {
		t.Fatalf("usage %+v", resp.Usage)
	}
	if len(f.reqs) != 2 {
		t.Fatalf("%d engine requests, want 2", len(f.reqs))
	}
	for i, r := range f.reqs {
		if r.SessionID != "s1" || r.SamplingParams.N != 1 {
			t.Fatalf("child %d: session %q n %d", i, r.SessionID, r.SamplingParams.N)
		}
	}
	if f.reqs[0].RequestID == f.reqs[1].RequestID || *f.reqs[0].SamplingParams.Seed == *f.reqs[1].SamplingParams.Seed {
		t.Fatalf("children share an id or a seed: %+v %+v", f.reqs[0], f.reqs[1])
	}
}

func TestStopStringAbortsTheEngineRequest(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return tokens("one two three", wire.FinishLength)
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"model":"dummy","prompt":"x","stop":"two","max_tokens":20}`, nil)
	if code != http.StatusOK || !strings.Contains(body, `"text":"one "`) || !strings.Contains(body, `"stop_reason":"two"`) {
		t.Fatalf("%d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(f.abortedIDs()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("aborted %v, want the request aborted in the engine", f.abortedIDs())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		key                      string
		status                   int
		param                    string
		submitErr                error
	}{
		{name: "malformed json", method: "POST", path: "/v1/chat/completions", body: `{"model":`, status: 400},
		{name: "wrong type", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, status: 400, param: "temperature"},
		{name: "bad value", method: "POST", path: "/v1/completions", body: `{"prompt":"x","top_p":7}`, status: 400, param: "top_p"},
		{name: "unknown model", method: "POST", path: "/v1/completions", body: `{"model":"gpt-9","prompt":"x"}`, status: 404, param: "model"},
		{name: "prompt too long", method: "POST", path: "/v1/completions", body: `{"prompt":"` + strings.Repeat("a", 70) + `"}`, status: 400},
		{name: "max_tokens too large", method: "POST", path: "/v1/completions", body: `{"prompt":"abc","max_tokens":100}`, status: 400, param: "max_tokens"},
		{name: "token id out of vocab", method: "POST", path: "/v1/completions", body: `{"prompt":[1,99999]}`, status: 400, param: "prompt"},
		{name: "bad session id", method: "POST", path: "/v1/completions", body: `{"prompt":"x","session_id":"a\u0001b"}`, status: 400, param: "session_id"},
		{name: "unknown route", method: "GET", path: "/v1/nope", status: 404},
		{name: "body too large", method: "POST", path: "/v1/completions", body: `{"prompt":"` + strings.Repeat("a", 2000) + `"}`, status: 413},
		{name: "missing key", method: "POST", path: "/v1/completions", body: `{"prompt":"x"}`, key: "k", status: 401},
		{name: "wrong key", method: "POST", path: "/v1/completions", body: `{"prompt":"x"}`, key: "k", hdr: map[string]string{"Authorization": "Bearer nope"}, status: 401},
		{name: "unsupported vLLM field", method: "POST", path: "/v1/completions", body: `{"prompt":"x","bad_words":["y"]}`, status: 400, param: "bad_words"},
		{name: "two constraints", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"guided_json":{"type":"object"},"guided_regex":"a"}`, status: 400, param: "guided_regex"},
		{name: "no engine", method: "POST", path: "/v1/completions", body: `{"prompt":"x"}`, status: 503, submitErr: engineclient.ErrNoEngine},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }, failWith: tc.submitErr}
			ts := newTestServer(t, f, tc.key)
			code, body := do(t, ts, tc.method, tc.path, tc.body, tc.hdr)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
			var e struct {
				Error struct {
					Message string
					Type    string
					Param   *string
				}
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("not an OpenAI error: %s", body)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Fatalf("param %v, want %q: %s", e.Error.Param, tc.param, body)
			}
		})
	}
}

// TestChunkedBodyTooLarge: a body over the limit sent chunked (no
// Content-Length for BodyLimit to refuse up front) gets 413, not 400.
func TestChunkedBodyTooLarge(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	body := io.MultiReader(strings.NewReader(`{"prompt":"`), strings.NewReader(strings.Repeat("a", 4000)), strings.NewReader(`"}`))
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", body) // unknown length: chunked
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "max-request-body") {
		t.Fatalf("chunked oversized body: %d %s", resp.StatusCode, b)
	}
}

func TestEngineDeathMidStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishNone) }, dead: true}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","stream":true}`, nil)
	if code != http.StatusOK || !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"error"`) {
		t.Fatalf("%d %q", code, body)
	}
	code, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x"}`, nil)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("non-streaming: %d %s, want 503", code, body)
	}
}

func TestHealthStaysOpenWithAPIKey(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "k")
	if code, body := do(t, ts, http.MethodGet, "/health", "", nil); code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := do(t, ts, http.MethodGet, "/v1/models", "", map[string]string{"Authorization": "Bearer k"}); code != http.StatusOK {
		t.Fatalf("models with key: %d", code)
	}
}

var _ = errors.New
