package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDefaultModelThinkingBudget serves the real default model with a
// reasoning parser and a budget message, and asks for JSON after a think
// block opened by an assistant prefill, with a thinking budget: the
// engine forces the message and </think> (spelled by SmolLM2's BPE
// pieces) after exactly the budget's tokens, then the schema constrains
// the content, which parses.
func TestDefaultModelThinkingBudget(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi",
		"--threads", strconv.Itoa(runtime.NumCPU()), "--reasoning-parser", "deepseek_r1", "--reasoning-budget-message", " Enough.")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	const budget = 12
	for _, prompt := range []string{"Name a city in France as JSON.", "Which planet is largest? Answer as JSON."} {
		code, out := postJSON(t, base+"/v1/chat/completions", map[string]any{
			"messages":               []map[string]any{{"role": "user", "content": prompt}, {"role": "assistant", "content": "<think>\n"}},
			"continue_final_message": true, "add_generation_prompt": false, "max_tokens": 100, "temperature": 0,
			"thinking_token_budget": budget, "return_token_ids": true,
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "a", "schema": map[string]any{
				"type": "object", "required": []string{"name"}, "properties": map[string]any{"name": map[string]any{"type": "string", "maxLength": 24}}}}},
		}, nil)
		if code != http.StatusOK {
			t.Fatalf("%d %v", code, out)
		}
		choice := out["choices"].([]any)[0].(map[string]any)
		msg := choice["message"].(map[string]any)
		reasoning, _ := msg["reasoning"].(string)
		content, _ := msg["content"].(string)
		var answer struct{ Name string }
		if err := json.Unmarshal([]byte(content), &answer); err != nil || answer.Name == "" || choice["finish_reason"] != "stop" {
			t.Fatalf("%q: content %q (finish %v) is not the schema's JSON: %v", prompt, content, choice["finish_reason"], err)
		}
		ids := choice["token_ids"].([]any)
		// The first budget tokens (up to three more to finish a UTF-8
		// character) are the model's reasoning, then the forced message.
		ok := false
		for n := budget; n <= budget+3 && n <= len(ids); n++ {
			_, d := postJSON(t, base+"/detokenize", map[string]any{"tokens": ids[:n]}, nil)
			if strings.TrimSpace(d["prompt"].(string)+" Enough.") == reasoning {
				ok = true
				break
			}
		}
		if !ok {
			t.Fatalf("%q: reasoning %q is not the first %d tokens and the budget message (tokens %v)", prompt, reasoning, budget, ids)
		}
	}
}
