package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// TestNativeReturnProgress: a streamed /completion with return_progress
// asks the engine for its prefill steps (_tandem_return_progress) and
// turns each into a partial with prompt_progress, then sends the whole
// prompt's progress once before the first token, as llama-server does.
// Without return_progress, or without stream, nothing of it.
func TestNativeReturnProgress(t *testing.T) {
	prompt := strings.Repeat("x", 40) // the byte tokenizer: a token per byte
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		if !r.SamplingParams.ReturnProgress {
			return tokens("ab", wire.FinishLength)
		}
		steps := []wire.EngineCoreOutput{{NumCachedTokens: 8, PromptProgress: 16}, {NumCachedTokens: 8, PromptProgress: 32}}
		for _, o := range tokens("ab", wire.FinishLength) {
			o.NumCachedTokens = 8
			steps = append(steps, o)
		}
		return steps
	}}
	ts := newTestServer(t, f, "")
	events := func(body string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for line := range strings.SplitSeq(body, "\n") {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				var ev map[string]any
				if err := json.Unmarshal([]byte(rest), &ev); err != nil {
					t.Fatalf("%q: %v", rest, err)
				}
				out = append(out, ev)
			}
		}
		return out
	}
	code, body := do(t, ts, "POST", "/completion", `{"prompt": "`+prompt+`", "n_predict": 2, "stream": true, "return_progress": true}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if !f.requests()[0].SamplingParams.ReturnProgress {
		t.Error("the engine was not asked for progress")
	}
	type progress struct{ Total, Cache, Processed float64 }
	var got []progress
	text := ""
	for _, ev := range events(body) {
		if p, ok := ev["prompt_progress"].(map[string]any); ok {
			if ev["content"] != "" || len(ev["tokens"].([]any)) != 0 {
				t.Errorf("a progress partial with content: %v", ev)
			}
			if ms, _ := p["time_ms"].(float64); ms < 0 {
				t.Errorf("time_ms %v", p["time_ms"])
			}
			got = append(got, progress{p["total"].(float64), p["cache"].(float64), p["processed"].(float64)})
			if text != "" {
				t.Errorf("progress after the first token: %v", ev)
			}
		}
		if c, ok := ev["content"].(string); ok {
			text += c
		}
	}
	total := float64(len(f.requests()[0].PromptTokenIDs)) // the 40 bytes and the tokenizer's BOS
	want := []progress{{total, 8, 16}, {total, 8, 32}, {total, 8, total}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || text != "ab" {
		t.Errorf("progress %v, want %v; text %q", got, want, text)
	}

	for _, body := range []string{
		`{"prompt": "` + prompt + `", "n_predict": 2, "stream": true}`,
		`{"prompt": "` + prompt + `", "n_predict": 2, "return_progress": true}`,
	} {
		n := len(f.requests())
		code, resp := do(t, ts, "POST", "/completion", body, nil)
		if code != 200 || strings.Contains(resp, "prompt_progress") || f.requests()[n].SamplingParams.ReturnProgress {
			t.Errorf("%s: %d %s", body, code, resp)
		}
	}
}
