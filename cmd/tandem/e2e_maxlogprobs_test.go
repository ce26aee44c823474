package main

import (
	"fmt"
	"strconv"
	"testing"
)

// TestMaxLogprobsModel serves the real default model with --max-logprobs
// -1 (vLLM's no cap): chat's top_logprobs -1 and completions' logprobs -1
// return every vocabulary entry per position (the frontend learns the cap
// from the engine's READY). TestPromptLogprobsModel checks the refusal
// under the default 20.
func TestMaxLogprobsModel(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi", "--max-logprobs", "-1")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	const vocab = 49152 // SmolLM2's

	t.Run("chat top_logprobs -1", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": "Hi"}}, "max_tokens": 2, "temperature": 0,
			"logprobs": true, "top_logprobs": -1,
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		content := out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		if len(content) == 0 {
			t.Fatal("no logprobs")
		}
		for i, c := range content {
			if n := len(c.(map[string]any)["top_logprobs"].([]any)); n != vocab {
				t.Errorf("position %d: %d top_logprobs, want %d", i, n, vocab)
			}
		}
	})

	t.Run("completions logprobs -1", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/completions", map[string]any{
			"prompt": "The capital of France is", "max_tokens": 2, "temperature": 0,
			"logprobs": -1, "return_tokens_as_token_ids": true, // ids as keys: every entry distinct
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		top := out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["top_logprobs"].([]any)
		if len(top) == 0 {
			t.Fatal("no logprobs")
		}
		for i, m := range top {
			if n := len(m.(map[string]any)); n != vocab {
				t.Errorf("position %d: %d top_logprobs, want %d", i, n, vocab)
			}
		}
	})

	t.Run("prompt_logprobs -1", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/completions", map[string]any{
			"prompt": "The capital of France is", "max_tokens": 1, "temperature": 0, "prompt_logprobs": -1,
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		list := out["choices"].([]any)[0].(map[string]any)["prompt_logprobs"].([]any)
		for i, e := range list[1:] {
			if n := len(e.(map[string]any)); n != vocab {
				t.Errorf("prompt position %d: %d entries, want %d", i+1, n, vocab)
			}
		}
	})
}
