package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPromptLogprobsModel serves the real default model and asks, over
// HTTP, for what needs the engine (issue #18): prompt_logprobs on
// completions and chat, echo with logprobs, allowed_token_ids,
// logprob_token_ids and -1 logprobs, each checked against what vLLM
// answers.
func TestPromptLogprobsModel(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	const prompt = "The capital of France is"
	complete := func(t *testing.T, body map[string]any) (int, map[string]any) {
		t.Helper()
		req := map[string]any{"prompt": prompt, "max_tokens": 4, "temperature": 0, "return_token_ids": true}
		for k, v := range body {
			req[k] = v
		}
		return postJSON(t, base+"/v1/completions", req, nil)
	}
	choice := func(t *testing.T, out map[string]any) map[string]any {
		t.Helper()
		cs, _ := out["choices"].([]any)
		if len(cs) == 0 {
			t.Fatalf("no choices: %v", out)
		}
		return cs[0].(map[string]any)
	}
	ints := func(v any) []int {
		var out []int
		for _, x := range v.([]any) {
			out = append(out, int(x.(float64)))
		}
		return out
	}

	// A plain request twice: the second reads the prefix cache.
	_, plain := complete(t, nil)
	complete(t, nil)
	plainChoice := choice(t, plain)
	promptIDs := ints(plainChoice["prompt_token_ids"])

	t.Run("completions prompt_logprobs", func(t *testing.T) {
		status, out := complete(t, map[string]any{"prompt_logprobs": 2})
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		ch := choice(t, out)
		if ch["text"] != plainChoice["text"] {
			t.Errorf("text %q with prompt_logprobs, %q without: greedy output changed", ch["text"], plainChoice["text"])
		}
		checkPromptLogprobs(t, ch["prompt_logprobs"], promptIDs, 2)
		if d, ok := out["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any); ok && d["cached_tokens"].(float64) != 0 {
			t.Errorf("cached_tokens %v: a prompt_logprobs request computes its whole prompt (vLLM)", d["cached_tokens"])
		}
		if plainChoice["prompt_logprobs"] != nil {
			t.Errorf("prompt_logprobs %v without asking, want null", plainChoice["prompt_logprobs"])
		}
	})

	t.Run("echo with logprobs", func(t *testing.T) {
		status, out := complete(t, map[string]any{"echo": true, "logprobs": 1})
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		ch := choice(t, out)
		lp := ch["logprobs"].(map[string]any)
		tokens, lps, offsets := lp["tokens"].([]any), lp["token_logprobs"].([]any), ints(lp["text_offset"])
		numOut := len(ints(ch["token_ids"]))
		if len(tokens) != len(promptIDs)+numOut || len(lps) != len(tokens) {
			t.Fatalf("%d tokens, %d logprobs; want %d prompt + %d generated", len(tokens), len(lps), len(promptIDs), numOut)
		}
		if lps[0] != nil || lp["top_logprobs"].([]any)[0] != nil {
			t.Errorf("first token's logprob %v, top %v: want null", lps[0], lp["top_logprobs"].([]any)[0])
		}
		for i, v := range lps[1:] {
			if f, ok := v.(float64); !ok || f > 0 {
				t.Errorf("token %d (%q): logprob %v, want a number ≤ 0", i+1, tokens[i+1], v)
			}
		}
		if offsets[0] != 0 || !strings.HasPrefix(ch["text"].(string), prompt) {
			t.Errorf("offsets %v, text %q: want the echoed prompt from offset 0", offsets, ch["text"])
		}
		for i := 1; i < len(offsets); i++ { // vLLM: offsets run on over the token strings
			if want := offsets[i-1] + len(tokens[i-1].(string)); offsets[i] != want {
				t.Errorf("text_offset[%d] = %d after %q at %d, want %d", i, offsets[i], tokens[i-1], offsets[i-1], want)
			}
		}
		checkPromptLogprobs(t, ch["prompt_logprobs"], promptIDs, 1)
		t.Run("streamed", func(t *testing.T) { checkStreamedEcho(t, base, prompt, ch) })
	})

	t.Run("chat prompt_logprobs", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": "Hi"}}, "max_tokens": 2, "temperature": 0,
			"prompt_logprobs": 0, "return_token_ids": true,
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		checkPromptLogprobs(t, out["prompt_logprobs"], ints(out["prompt_token_ids"]), 0)
	})

	t.Run("allowed_token_ids", func(t *testing.T) {
		allowed := []int{28, 29, 1030}
		status, out := complete(t, map[string]any{"allowed_token_ids": allowed, "max_tokens": 5, "ignore_eos": true})
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		for _, id := range ints(choice(t, out)["token_ids"]) {
			if id != 28 && id != 29 && id != 1030 {
				t.Errorf("generated token %d outside allowed_token_ids %v", id, allowed)
			}
		}
	})

	t.Run("logprob_token_ids", func(t *testing.T) {
		status, out := complete(t, map[string]any{"logprobs": 2, "logprob_token_ids": []int{100, 200}, "return_tokens_as_token_ids": true})
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		for i, top := range choice(t, out)["logprobs"].(map[string]any)["top_logprobs"].([]any) {
			m := top.(map[string]any)
			if _, ok := m["token_id:100"]; !ok {
				t.Errorf("position %d: top_logprobs %v without token 100", i, m)
			}
			if _, ok := m["token_id:200"]; !ok {
				t.Errorf("position %d: top_logprobs %v without token 200", i, m)
			}
		}
	})

	t.Run("chat logprob_token_ids list the sampled token too", func(t *testing.T) {
		status, out := postJSON(t, base+"/v1/chat/completions", map[string]any{
			"messages": []any{map[string]any{"role": "user", "content": "Hello"}}, "max_tokens": 1, "temperature": 0,
			"logprobs": true, "top_logprobs": 5, "logprob_token_ids": []int{100, 5000}, "allowed_token_ids": []int{42},
			"return_tokens_as_token_ids": true,
		}, nil)
		if status != 200 {
			t.Fatalf("status %d: %v", status, out)
		}
		content := out["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
		first := content[0].(map[string]any)
		var got []string
		for _, e := range first["top_logprobs"].([]any) {
			got = append(got, e.(map[string]any)["token"].(string))
		}
		if first["token"] != "token_id:42" || !slices.Equal(got, []string{"token_id:42", "token_id:100", "token_id:5000"}) {
			t.Errorf("sampled %v, top_logprobs %v: want token_id:42 then the requested ids (vLLM's test_logprob_token_ids)", first["token"], got)
		}
	})

	refusals := []struct {
		name, param, msg string
		body             map[string]any
	}{
		{"logprobs -1 above max logprobs", "logprobs", "Requested sample logprobs of 49152, which is greater than max allowed: 20", map[string]any{"logprobs": -1}},
		{"prompt_logprobs -1 above max logprobs", "prompt_logprobs", "Requested prompt logprobs of 49152, which is greater than max allowed: 20", map[string]any{"prompt_logprobs": -1}},
		{"allowed_token_ids out of vocab", "allowed_token_ids", "allowed_token_ids contains out-of-vocab token id!", map[string]any{"allowed_token_ids": []int{5, 49152}}},
		{"allowed_token_ids empty", "allowed_token_ids", "allowed_token_ids is not None and empty!", map[string]any{"allowed_token_ids": []int{}}},
		{"logprob_token_ids out of vocab", "logprob_token_ids", "token_id(s) [60000] in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: 49152",
			map[string]any{"logprobs": 1, "logprob_token_ids": []int{60000}}},
		{"prompt_logprobs streamed", "prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`.", map[string]any{"prompt_logprobs": 1, "stream": true}},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			status, out := complete(t, tt.body)
			e, _ := out["error"].(map[string]any)
			if status != 400 || e == nil || e["param"] != tt.param || e["message"] != tt.msg {
				t.Errorf("status %d, error %v; want 400 for %s: %q", status, out, tt.param, tt.msg)
			}
		})
	}
}

// checkPromptLogprobs checks vLLM's prompt_logprobs form for prompt ids:
// one entry per token, null first, then a map from token id to {logprob,
// rank, decoded_token} holding the prompt token and at least k others.
func checkPromptLogprobs(t *testing.T, v any, prompt []int, k int) {
	t.Helper()
	list, ok := v.([]any)
	if !ok || len(list) != len(prompt) || len(prompt) < 2 {
		t.Fatalf("prompt_logprobs %v: want a list of %d entries", v, len(prompt))
	}
	if list[0] != nil {
		t.Errorf("first entry %v, want null", list[0])
	}
	for i, e := range list[1:] {
		m, ok := e.(map[string]any)
		if !ok || len(m) < k || len(m) > k+1 {
			t.Fatalf("entry %d: %v, want the prompt token and %d others", i+1, e, k)
		}
		lp, ok := m[strconv.Itoa(prompt[i+1])].(map[string]any)
		if !ok {
			t.Fatalf("entry %d: %v lacks the prompt token %d", i+1, m, prompt[i+1])
		}
		if f, _ := lp["logprob"].(float64); f > 0 || lp["rank"].(float64) < 1 || lp["decoded_token"] == nil {
			t.Errorf("entry %d: prompt token's %v, want logprob ≤ 0, rank ≥ 1, its text", i+1, lp)
		}
	}
}
