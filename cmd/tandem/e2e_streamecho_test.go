package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// checkStreamedEcho streams what the non-streamed echo with logprobs 1
// answered as want and checks vLLM's shape: the first chunk holds the
// prompt and the first tokens, with the prompt's logprobs (the first
// token's null) ahead of theirs; the text and every logprob match want's.
func checkStreamedEcho(t *testing.T, base, prompt string, want map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 4, "temperature": 0, "echo": true, "logprobs": 1, "stream": true})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := sseEvents(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v: %v", resp.StatusCode, err, events)
	}
	type logprobs struct {
		Tokens        []string
		TokenLogprobs []*float64           `json:"token_logprobs"`
		TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		TextOffset    []int                `json:"text_offset"`
	}
	var text strings.Builder
	var all logprobs
	for i, data := range events {
		if data == "[DONE]" {
			break
		}
		var ev struct {
			Choices []struct {
				Text     string
				Logprobs *logprobs
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Choices) != 1 || ev.Choices[0].Logprobs == nil {
			t.Fatalf("event %d %s: want one choice with logprobs (%v)", i, data, err)
		}
		ch := ev.Choices[0]
		if i == 0 && (!strings.HasPrefix(ch.Text, prompt) || len(ch.Text) == len(prompt)) {
			t.Errorf("first chunk %q: want the prompt and the first token", ch.Text)
		}
		text.WriteString(ch.Text)
		lp := ch.Logprobs
		all.Tokens = append(all.Tokens, lp.Tokens...)
		all.TokenLogprobs = append(all.TokenLogprobs, lp.TokenLogprobs...)
		all.TopLogprobs = append(all.TopLogprobs, lp.TopLogprobs...)
		all.TextOffset = append(all.TextOffset, lp.TextOffset...)
	}
	if text.String() != want["text"] {
		t.Errorf("streamed text %q, non-streamed %q", text.String(), want["text"])
	}
	wantLP := want["logprobs"].(map[string]any)
	wantLPs := wantLP["token_logprobs"].([]any)
	if len(all.Tokens) != len(wantLPs) || len(all.TokenLogprobs) != len(wantLPs) {
		t.Fatalf("streamed %d tokens, %d logprobs; non-streamed %d", len(all.Tokens), len(all.TokenLogprobs), len(wantLPs))
	}
	if all.TokenLogprobs[0] != nil || all.TopLogprobs[0] != nil {
		t.Errorf("first token's logprob %v, top %v: want null", all.TokenLogprobs[0], all.TopLogprobs[0])
	}
	for i := 1; i < len(wantLPs); i++ {
		w, _ := wantLPs[i].(float64)
		if g := all.TokenLogprobs[i]; g == nil || math.Abs(*g-w) > 1e-4 || len(all.TopLogprobs[i]) == 0 {
			t.Errorf("token %d (%q): streamed logprob %v (top %v), non-streamed %v", i, all.Tokens[i], g, all.TopLogprobs[i], w)
		}
	}
	if wantOff := wantLP["text_offset"].([]any); all.TextOffset[0] != 0 || len(all.TextOffset) != len(wantOff) {
		t.Errorf("text_offset %v, non-streamed %v", all.TextOffset, wantOff)
	}
}
