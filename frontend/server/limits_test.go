package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestMaxRequestOutputTokens: a request whose sequences could generate
// more than the limit (max_tokens × (1 + logprobs), summed over prompts ×
// n) is a 400 naming max_tokens, before anything reaches an engine; at the
// limit it runs.
func TestMaxRequestOutputTokens(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxRequestOutputTokens = 1000; c.MaxModelLen = 4096 }, tokenizer.NewByte())
	for _, tc := range []struct {
		name, path, body string
		ok               bool
	}{
		{"at the limit", "/v1/completions", `{"prompt":["a","b"],"n":5,"max_tokens":100}`, true},
		{"prompts × n × max_tokens", "/v1/completions", `{"prompt":["a","b"],"n":5,"max_tokens":101}`, false},
		{"logprobs count", "/v1/completions", `{"prompt":"a","max_tokens":200,"logprobs":5}`, false},
		{"logprobs within", "/v1/completions", `{"prompt":"a","max_tokens":166,"logprobs":5}`, true},
		{"best_of counts its candidates", "/v1/completions", `{"prompt":"a","best_of":20,"max_tokens":51}`, false},
		{"chat without max_tokens: the model's length", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, false},
		{"chat n", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":10,"max_tokens":100}`, true},
		{"responses", "/v1/responses", `{"input":"hi","max_output_tokens":1001}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.requests())
			code, body := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
			if tc.ok {
				if code != http.StatusOK {
					t.Fatalf("%d %s, want 200", code, body)
				}
				return
			}
			if code != http.StatusBadRequest || !strings.Contains(body, `"param":"max_tokens"`) || !strings.Contains(body, "--max-request-output-tokens") {
				t.Fatalf("%d %s, want a 400 on max_tokens naming the flag", code, body)
			}
			if n := len(f.requests()); n != before {
				t.Fatalf("%d engine requests were sent for a refused request", n-before)
			}
		})
	}
}

// TestOneFlowPerHTTPRequest: every sequence of one HTTP request carries
// the same flow id, and another request gets another, whatever ids the
// client sends.
func TestOneFlowPerHTTPRequest(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, nil, tokenizer.NewByte())
	hdr := map[string]string{"X-Request-Id": "same-id"}
	for range 2 {
		if code, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":["a","b","c"],"n":2,"max_tokens":1}`, hdr); code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
	}
	reqs := f.requests()
	if len(reqs) != 12 {
		t.Fatalf("%d engine requests, want 12", len(reqs))
	}
	flows := map[string]int{}
	for i, r := range reqs {
		if r.FlowID == "" {
			t.Fatalf("request %d (%s) has no flow", i, r.RequestID)
		}
		flows[r.FlowID]++
	}
	if fmt.Sprint(len(flows)) != "2" || flows[reqs[0].FlowID] != 6 {
		t.Fatalf("flows %v, want two of 6 sequences each", flows)
	}
}
