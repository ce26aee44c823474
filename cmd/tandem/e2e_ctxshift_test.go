package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestContextShift serves the default model with llama-server's
// --context-shift and a 128-token context: a prompt of about 100 tokens
// asking for 64 more goes past the context, so the engine drops half of
// the tokens after n_keep and goes on; the native /completion and the
// OpenAI /v1/completions both generate every token asked for, the native
// one saying truncated.
func TestContextShift(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "128", "--kv-cache-memory", "64Mi",
		"--context-shift", "--threads", "1")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	prompt := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 10) // ~100 tokens

	code, body := postJSON(t, base+"/completion", map[string]any{"prompt": prompt, "n_predict": 64, "n_keep": 8, "temperature": 0, "ignore_eos": true}, nil)
	if code != http.StatusOK {
		t.Fatalf("/completion: %d %v", code, body)
	}
	evaluated, predicted := int(body["tokens_evaluated"].(float64)), int(body["tokens_predicted"].(float64))
	if evaluated+64 <= 128 || predicted != 64 || body["truncated"] != true {
		t.Errorf("/completion: %d prompt tokens, %d predicted, truncated %v; want a prompt that leaves < 64, 64 predicted, truncated",
			evaluated, predicted, body["truncated"])
	}
	if generation := body["generation_settings"].(map[string]any); generation["n_keep"] != 8.0 {
		t.Errorf("generation_settings.n_keep = %v, want 8", generation["n_keep"])
	}

	code, body = postJSON(t, base+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 64, "temperature": 0, "ignore_eos": true}, nil)
	if code != http.StatusOK {
		t.Fatalf("/v1/completions with max_tokens past the context: %d %v", code, body)
	}
	usage := body["usage"].(map[string]any)
	if usage["completion_tokens"] != 64.0 || body["choices"].([]any)[0].(map[string]any)["finish_reason"] != "length" {
		t.Errorf("/v1/completions: usage %v, choice %v; want 64 tokens, length", usage, body["choices"])
	}
}
