package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/null"
)

// TestNullEngine serves the frontend from `tandem engine --device null`:
// streamed and whole chat completions carry the null engine's scripted
// text, detokenized by the frontend, with the right usage; n = 2 gives
// two such choices.
func TestNullEngine(t *testing.T) {
	s := startSplit(t, "--device", "null")
	want := strings.Repeat(null.Text, 3)[:100]

	code, body := postJSON(t, s.base+"/v1/chat/completions", map[string]any{
		"model": "dummy", "max_tokens": 100, "n": 2, "temperature": 0.7,
		"messages": []map[string]string{{"role": "user", "content": "hi"}},
	}, nil)
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, body)
	}
	choices := body["choices"].([]any)
	if len(choices) != 2 {
		t.Fatalf("%d choices, want 2", len(choices))
	}
	for _, c := range choices {
		msg := c.(map[string]any)["message"].(map[string]any)
		if got := msg["content"]; got != want {
			t.Errorf("content %q, want %q", got, want)
		}
	}
	if u := body["usage"].(map[string]any); u["completion_tokens"] != 200.0 {
		t.Errorf("usage %v, want 200 completion tokens", u)
	}

	for range 3 { // a few streams, back to back
		raw, _ := json.Marshal(map[string]any{
			"model": "dummy", "max_tokens": 50, "stream": true, "stream_options": map[string]bool{"include_usage": true},
			"messages": []map[string]string{{"role": "user", "content": "hello"}},
		})
		resp, err := http.Post(s.base+"/v1/chat/completions", "application/json", strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		events, err := sseEvents(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		completion := 0
		for _, ev := range events {
			if ev == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", ev, err)
			}
			for _, c := range chunk.Choices {
				text.WriteString(c.Delta.Content)
			}
			if chunk.Usage != nil {
				completion = chunk.Usage.CompletionTokens
			}
		}
		if text.String() != want[:50] || completion != 50 || events[len(events)-1] != "[DONE]" {
			t.Errorf("streamed %q with %d completion tokens (last event %q), want %q and 50", text.String(), completion, events[len(events)-1], want[:50])
		}
	}
}
