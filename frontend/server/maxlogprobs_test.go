package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestMaxLogprobs checks requests against the engines' max logprobs
// (READY's, from --max-logprobs) with vLLM's messages: 20 unless they
// say, -1 for the whole vocabulary.
func TestMaxLogprobs(t *testing.T) {
	vocab := tokenizer.NewByte().VocabSize()
	const chat = `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"logprobs":true,`
	const cmpl = `{"prompt":"x","max_tokens":2,`
	tests := []struct {
		name       string
		max        *int // nil: READY without it (20)
		path, body string
		wantParam  string // "" = 200
		wantMsg    string
	}{
		{"default: logprobs 20", nil, "/v1/completions", cmpl + `"logprobs":20}`, "", ""},
		{"default: logprobs 21", nil, "/v1/completions", cmpl + `"logprobs":21}`, "logprobs", "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"default: top_logprobs 21", nil, "/v1/chat/completions", chat + `"top_logprobs":21}`, "logprobs", "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"default: prompt_logprobs 21", nil, "/v1/completions", cmpl + `"prompt_logprobs":21}`, "prompt_logprobs", "Requested prompt logprobs of 21, which is greater than max allowed: 20"},
		{"default: logprobs -1", nil, "/v1/completions", cmpl + `"logprobs":-1}`, "logprobs", fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: 20", vocab)},
		{"default: responses top_logprobs 21", nil, "/v1/responses", `{"input":"x","max_output_tokens":2,"top_logprobs":21}`, "top_logprobs", "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"50: logprobs 21", ptr(50), "/v1/completions", cmpl + `"logprobs":21}`, "", ""},
		{"50: top_logprobs 50", ptr(50), "/v1/chat/completions", chat + `"top_logprobs":50}`, "", ""},
		{"50: responses top_logprobs 50", ptr(50), "/v1/responses", `{"input":"x","max_output_tokens":2,"top_logprobs":50}`, "", ""},
		{"5: logprobs 6", ptr(5), "/v1/completions", cmpl + `"logprobs":6}`, "logprobs", "Requested sample logprobs of 6, which is greater than max allowed: 5"},
		{"5: echo with logprobs 6", ptr(5), "/v1/completions", cmpl + `"echo":true,"logprobs":6}`, "logprobs", "Requested sample logprobs of 6, which is greater than max allowed: 5"},
		{"3: beam of 2", ptr(3), "/v1/completions", cmpl + `"use_beam_search":true,"n":2}`, "n", "Requested sample logprobs of 4, which is greater than max allowed: 3"},
		{"no cap: logprobs -1", ptr(-1), "/v1/completions", cmpl + `"logprobs":-1}`, "", ""},
		{"no cap: top_logprobs -1", ptr(-1), "/v1/chat/completions", chat + `"top_logprobs":-1}`, "", ""},
		{"no cap: prompt_logprobs -1", ptr(-1), "/v1/completions", cmpl + `"prompt_logprobs":-1}`, "", ""},
		{"no cap: past the vocabulary", ptr(-1), "/v1/completions", cmpl + fmt.Sprintf(`"logprobs":%d}`, vocab+1), "logprobs",
			fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: %d", vocab+1, vocab)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: logprobScript("ab", false)}
			ts := newTestServerWith(t, f, func(c *Config) { c.MaxLogprobs = tc.max }, tokenizer.NewByte())
			code, body := do(t, ts, http.MethodPost, tc.path, tc.body, nil)
			if tc.wantParam == "" {
				if code != http.StatusOK {
					t.Fatalf("%d %s, want 200", code, body)
				}
				return
			}
			e, _ := decodeMap(t, body)["error"].(map[string]any)
			if code != http.StatusBadRequest || e == nil || e["param"] != tc.wantParam || e["message"] != tc.wantMsg {
				t.Fatalf("%d %s; want 400 on %s: %q", code, body, tc.wantParam, tc.wantMsg)
			}
		})
	}
}
