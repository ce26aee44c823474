package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// TestNativeReturnProgress: a streamed /completion with return_progress
// asks the engine for its prefill steps (_tandem_return_progress) and
// turns each into a partial with prompt_progress, after a first one of
// what the prefix cache served and before the whole prompt's, sent with
// the first token, as llama-server does.
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
	total := float64(len(f.requests()[0].PromptTokenIDs))                                // the 40 bytes and the tokenizer's BOS
	want := []progress{{total, 8, 8}, {total, 8, 16}, {total, 8, 32}, {total, 8, total}} // first what the cache served
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] || text != "ab" {
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

	// With timings_per_token every progress partial carries timings too
	// (llama.cpp's test_metrics_timings_on_prompt_progress): the first,
	// before any prompt token is computed, all zero; then prompt_n counts
	// the tokens computed past the cache, and prompt_ms never goes back.
	code, body = do(t, ts, "POST", "/completion", `{"prompt": "`+prompt+`", "n_predict": 2, "stream": true, "return_progress": true, "timings_per_token": true}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var promptN []float64
	lastMS := 0.0
	for _, ev := range events(body) {
		if _, ok := ev["prompt_progress"]; !ok {
			continue
		}
		tm, ok := ev["timings"].(map[string]any)
		if !ok {
			t.Fatalf("a progress partial without timings: %v", ev)
		}
		if tm["predicted_n"] != 0.0 || tm["predicted_ms"] != 0.0 || tm["prompt_ms"].(float64) < lastMS {
			t.Errorf("progress timings %v", tm)
		}
		lastMS = tm["prompt_ms"].(float64)
		promptN = append(promptN, tm["prompt_n"].(float64))
	}
	if len(promptN) != 4 || promptN[0] != 0 || promptN[1] != 8 || promptN[2] != 24 || promptN[3] != total-8 {
		t.Errorf("progress prompt_n %v, want [0 8 24 %v]", promptN, total-8)
	}
}

// TestResponsesLlamaTelemetry: llama.cpp's telemetry on a Responses
// stream (its test_responses_stream_with_llama_telemetry): with
// return_progress, response.in_progress events carry prompt_progress (the
// engine's prefill steps, then the whole prompt, before any text); with
// timings_per_token, every text delta and response.completed carry
// timings.
func TestResponsesLlamaTelemetry(t *testing.T) {
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		var steps []wire.EngineCoreOutput
		if r.SamplingParams.ReturnProgress {
			steps = append(steps, wire.EngineCoreOutput{NumCachedTokens: 4, PromptProgress: 8})
		}
		for _, o := range tokens("abc", wire.FinishLength) {
			o.NumCachedTokens = 4
			steps = append(steps, o)
		}
		return steps
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/v1/responses", `{"input": "This is a test", "max_output_tokens": 3, "stream": true, "timings_per_token": true, "return_progress": true}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if !f.requests()[0].SamplingParams.ReturnProgress {
		t.Error("the engine was not asked for progress")
	}
	var processed []float64
	deltas, deltaTimings, text := 0, 0, false
	var completed map[string]any
	for _, ev := range sseEvents(t, body) {
		var data map[string]any
		if err := json.Unmarshal(ev.data, &data); err != nil {
			t.Fatal(err)
		}
		if p, ok := data["prompt_progress"].(map[string]any); ok {
			if ev.typ != "response.in_progress" || text {
				t.Errorf("prompt_progress on %s (after text: %v)", ev.typ, text)
			}
			if p["processed"].(float64) < p["cache"].(float64) || p["total"].(float64) <= 0 {
				t.Errorf("prompt_progress %v", p)
			}
			processed = append(processed, p["processed"].(float64))
		}
		switch ev.typ {
		case "response.output_text.delta":
			text = true
			deltas++
			if tm, ok := data["timings"].(map[string]any); ok && tm["prompt_per_second"] != nil && tm["predicted_per_second"] != nil {
				deltaTimings++
			}
		case "response.completed":
			completed = data
		}
	}
	total := float64(len(f.requests()[0].PromptTokenIDs))
	if len(processed) != 3 || processed[0] != 4 || processed[1] != 8 || processed[2] != total {
		t.Errorf("prompt_progress processed %v, want [4 (the cached) 8 %v]", processed, total)
	}
	if deltas == 0 || deltaTimings != deltas {
		t.Errorf("%d of %d text deltas have timings", deltaTimings, deltas)
	}
	if completed == nil || completed["timings"] == nil || completed["response"].(map[string]any)["usage"] == nil {
		t.Errorf("response.completed %v: want timings and the response's usage", completed)
	}
	// Neither asked for: none of it.
	code, body = do(t, ts, "POST", "/v1/responses", `{"input": "This is a test", "max_output_tokens": 3, "stream": true}`, nil)
	if code != 200 || strings.Contains(body, "prompt_progress") || strings.Contains(body, "timings") || f.requests()[1].SamplingParams.ReturnProgress {
		t.Errorf("%d %s", code, body)
	}
}

// TestChatReturnProgress: on chat's stream, return_progress adds role
// chunks without content carrying prompt_progress (the engine's prefill
// steps, then the whole prompt), before the first content, as
// llama-server's chat stream does.
func TestChatReturnProgress(t *testing.T) {
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		var steps []wire.EngineCoreOutput
		if r.SamplingParams.ReturnProgress {
			steps = append(steps, wire.EngineCoreOutput{PromptProgress: 5})
		}
		return append(steps, tokens("hi", wire.FinishLength)...)
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 2, "stream": true, "return_progress": true}`, nil)
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var processed []float64
	content := ""
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, "data: ")
		if !ok || rest == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Role    string
					Content *string
				}
			}
			Progress map[string]float64 `json:"prompt_progress"`
		}
		if err := json.Unmarshal([]byte(rest), &ch); err != nil {
			t.Fatalf("%q: %v", rest, err)
		}
		if ch.Progress != nil {
			if content != "" || len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant" || ch.Choices[0].Delta.Content != nil {
				t.Errorf("progress chunk %s (content so far %q)", rest, content)
			}
			processed = append(processed, ch.Progress["processed"])
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				content += *c.Delta.Content
			}
		}
	}
	total := float64(len(f.requests()[0].PromptTokenIDs))
	if len(processed) != 3 || processed[0] != 0 || processed[1] != 5 || processed[2] != total || content != "hi" {
		t.Errorf("processed %v, want [0 (nothing cached) 5 %v]; content %q", processed, total, content)
	}
}
