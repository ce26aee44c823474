package server

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/ollama"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// sseLines decodes the data of a text/event-stream body's events (not
// [DONE]) into one T each, with the data's text.
func sseLines[T any](t *testing.T, body string) (out []T, data []string) {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("%v: %q", err, d)
		}
		out, data = append(out, v), append(data, d)
	}
	return out, data
}

// ndjsonLines decodes an NDJSON body into one T per line.
func ndjsonLines[T any](t *testing.T, body string) []T {
	t.Helper()
	var out []T
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		out = append(out, v)
	}
	return out
}

// TestOllamaChat: /api/chat answers as Ollama does, whole with
// "stream": false and as NDJSON by default: the streamed pieces join to
// the whole answer, only the last is done, with done_reason and the
// stats; calls read by the tool-call parser come as tool_calls with
// arguments as objects, streamed whole in an object of their own.
func TestOllamaChat(t *testing.T) {
	tests := []struct {
		name, format string
		answer       []string
		reason       wire.FinishReason
		content      string
		calls        []ollama.ToolCall
		done         string
	}{
		{"text", "", []string{"Hel", "lo", " there"}, wire.FinishStop, "Hello there", nil, "stop"},
		{"cut by num_predict", "", []string{"Hel", "lo"}, wire.FinishLength, "Hello", nil, "length"},
		{"content and two calls", "hermes", hermesAnswer, wire.FinishStop, "Checking both.",
			[]ollama.ToolCall{ollama.NewToolCall(0, "get_weather", `{"city":"Zürich"}`), ollama.NewToolCall(1, "get_time", `{}`)}, "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, tc.format, tokenizer.NewByte())
			req := `{"model":"dummy:latest","messages":[{"role":"user","content":"Weather and time in Zürich?"}],` + toolsBody
			code, body := postTo(t, url, "/api/chat", req+`,"stream":false}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var whole ollama.ChatResponse
			if err := json.Unmarshal([]byte(body), &whole); err != nil {
				t.Fatal(err)
			}
			if whole.Model != "dummy:latest" || !whole.Done || whole.DoneReason != tc.done || whole.Message.Content != tc.content ||
				whole.Stats == nil || whole.EvalCount == 0 || whole.PromptEvalCount == 0 {
				t.Errorf("not streamed: %s", body)
			}
			if diff := cmp.Diff(tc.calls, whole.Message.ToolCalls, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}

			code, body = postTo(t, url, "/api/chat", req+`}`) // streamed by default
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			lines := ndjsonLines[ollama.ChatResponse](t, body)
			var content string
			var calls []ollama.ToolCall
			for i, l := range lines {
				if l.Done != (i == len(lines)-1) || (l.Stats != nil) != l.Done {
					t.Fatalf("line %d: done %v, stats %v: only the last is done, with stats\n%s", i, l.Done, l.Stats, body)
				}
				if l.Message.Role != "assistant" {
					t.Fatalf("line %d: role %q", i, l.Message.Role)
				}
				content += l.Message.Content
				calls = append(calls, l.Message.ToolCalls...)
			}
			last := lines[len(lines)-1]
			if content != tc.content || last.DoneReason != tc.done || last.EvalCount != whole.EvalCount || last.PromptEvalCount != whole.PromptEvalCount {
				t.Errorf("streamed: content %q, last %+v\n%s", content, last, body)
			}
			if diff := cmp.Diff(tc.calls, calls, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("streamed calls (-want +got):\n%s", diff)
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
}

// TestOllamaGenerate: /api/generate's prompt goes through the chat
// template (with system), raw goes as it is, and a context's tokens go
// before the prompt; the answer's context is the prompt's and the
// answer's tokens.
func TestOllamaGenerate(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	url := toolServer(t, f, "", tokenizer.NewByte())
	tok := tokenizer.NewByte()
	lastPrompt := func() []int32 { r := f.requests(); return r[len(r)-1].PromptTokenIDs }

	code, body := postTo(t, url, "/api/generate", `{"model":"dummy","prompt":"Why?","system":"Be brief.","stream":false}`)
	var r ollama.GenerateResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("%d %s", code, body)
	}
	prompt := tok.Decode(lastPrompt(), false)
	if !strings.Contains(prompt, "Be brief.") || !strings.Contains(prompt, "Why?") || prompt == "Why?" {
		t.Errorf("templated prompt %q", prompt)
	}
	if r.Response != "ok" || r.DoneReason != "length" || !slices.Equal(r.Context, append(slices.Clone(lastPrompt()), tok.Encode("ok", false)...)) {
		t.Errorf("%s", body)
	}

	code, body = postTo(t, url, "/api/generate", `{"model":"dummy","prompt":"Once","raw":true,"system":"ignored","stream":false}`)
	if code != http.StatusOK || tok.Decode(lastPrompt(), true) != "Once" { // after the BOS the model wants, as llama.cpp's /completion
		t.Errorf("raw: %d %s, prompt %q", code, body, tok.Decode(lastPrompt(), false))
	}

	code, body = postTo(t, url, "/api/generate", `{"model":"dummy","prompt":" more","raw":true,"context":[65,66],"stream":false}`)
	if code != http.StatusOK || tok.Decode(lastPrompt(), false) != "AB more" {
		t.Errorf("context: %d %s, prompt %q", code, body, tok.Decode(lastPrompt(), false))
	}

	code, body = postTo(t, url, "/api/generate", `{"model":"dummy","prompt":"Once","raw":true}`)
	lines := ndjsonLines[ollama.GenerateResponse](t, body)
	text := ""
	for _, l := range lines {
		text += l.Response
	}
	if code != http.StatusOK || text != "ok" || !lines[len(lines)-1].Done || lines[len(lines)-1].Context == nil || lines[0].Context != nil {
		t.Errorf("streamed: %d %s", code, body)
	}
}

// TestOllamaRoutes: the model listings, the load requests and Ollama's
// error shape.
func TestOllamaRoutes(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishStop) }}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	get := func(path string) string {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var tags ollama.ListResponse
	if err := json.Unmarshal([]byte(get("/api/tags")), &tags); err != nil || len(tags.Models) != 1 || tags.Models[0].Name != "dummy:latest" {
		t.Errorf("tags %+v %v", tags, err)
	}
	var ps ollama.ProcessResponse
	if err := json.Unmarshal([]byte(get("/api/ps")), &ps); err != nil || len(ps.Models) != 1 || ps.Models[0].ContextLength != 4096 {
		t.Errorf("ps %+v %v", ps, err)
	}
	if v := get("/api/version"); v != "{\"version\":\"test\"}\n" {
		t.Errorf("version %s", v)
	}
	code, body := postTo(t, url, "/api/show", `{"model":"dummy"}`)
	var show ollama.ShowResponse
	if err := json.Unmarshal([]byte(body), &show); code != http.StatusOK || err != nil || !slices.Equal(show.Capabilities, []string{"completion", "tools"}) {
		t.Errorf("show %d %s", code, body)
	}
	code, body = postTo(t, url, "/api/chat", `{"model":"dummy","messages":[]}`)
	if code != http.StatusOK || !strings.Contains(body, `"done_reason":"load"`) {
		t.Errorf("load: %d %s", code, body)
	}
	n := len(f.requests())
	for _, tc := range []struct {
		path, body string
		code       int
		words      string
	}{
		{"/api/chat", `{"model":"other","messages":[{"role":"user","content":"x"}]}`, 404, "model 'other' not found"},
		{"/api/chat", `{"messages":[{"role":"user","content":"x"}]}`, 400, "model is required"},
		{"/api/chat", `{"model":"dummy","messages":[{"role":"user","content":"x","images":["AA"]}]}`, 400, "image"},
		{"/api/chat", `{"model":"dummy","messages":{}}`, 400, "messages"},
		{"/api/generate", `{"model":"dummy","prompt":"x","template":"{{.Prompt}}"}`, 400, "template"},
		{"/api/generate", `{"model":"dummy","prompt":"x","context":[999999]}`, 400, "out of vocabulary"},
		{"/api/show", `{"model":"other"}`, 404, "not found"},
		{"/api/embed", `{"model":"dummy"}`, 400, "input is required"},
		{"/api/embed", `{"model":"other","input":"x"}`, 404, "model 'other' not found"},
		{"/api/pull", `{"model":"llama3.2"}`, 404, "model management is not served"},
		{"/api/nope", `{}`, 404, ""},
	} {
		code, body := postTo(t, url, tc.path, tc.body)
		var e ollama.Error
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != tc.code || e.Error == "" || !strings.Contains(e.Error, tc.words) {
			t.Errorf("%s %s: %d %s; want %d {\"error\": …%s…}", tc.path, tc.body, code, body, tc.code, tc.words)
		}
	}
	if len(f.requests()) != n {
		t.Errorf("a refused request reached the engine")
	}
}

// TestOllamaLogprobs: with logprobs (and top_logprobs) each object
// carries its own tokens' logprobs, streamed and not alike.
func TestOllamaLogprobs(t *testing.T) {
	f := &fakeEngine{script: logprobScript("abc", true)}
	url := toolServer(t, f, "", tokenizer.NewByte())
	req := `{"model":"dummy","messages":[{"role":"user","content":"x"}],"top_logprobs":1`
	code, body := postTo(t, url, "/api/chat", req+`,"stream":false}`)
	var whole ollama.ChatResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &whole) != nil {
		t.Fatalf("%d %s", code, body)
	}
	want := []ollama.Logprob{}
	for _, tok := range []string{"a", "b", "c"} {
		want = append(want, ollama.Logprob{Token: tok, Logprob: -0.5, Bytes: []int{int(tok[0])},
			TopLogprobs: []ollama.TokenLogprob{{Token: "z", Logprob: -2, Bytes: []int{'z'}}}}) // the engine's top-1 (logprobScript)
	}
	if r := f.requests()[0]; r.SamplingParams.Logprobs == nil || *r.SamplingParams.Logprobs != 1 {
		t.Errorf("the engine was asked for %v logprobs, want 1", r.SamplingParams.Logprobs)
	}
	if diff := cmp.Diff(want, whole.Logprobs); diff != "" {
		t.Errorf("not streamed (-want +got):\n%s", diff)
	}
	_, body = postTo(t, url, "/api/chat", req+`}`)
	var got []ollama.Logprob
	for _, l := range ndjsonLines[ollama.ChatResponse](t, body) {
		if len(l.Logprobs) > 0 && l.Message.Content == "" && !l.Done {
			t.Errorf("logprobs on an object without its text: %+v", l)
		}
		got = append(got, l.Logprobs...)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("streamed (-want +got):\n%s", diff)
	}
}
