package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// TestServePoolingFlag serves the dummy model with --pooling cls (and
// vLLM's --runner pooling and llama-server's --embeddings, which change
// nothing), which serve hands to its engine: an input's embedding is then its first
// token's hidden state, so inputs that share only their first token embed
// alike (LAST, the default, would tell them apart), and a request's
// dimensions and normalize apply on top.
func TestServePoolingFlag(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "256",
		"--kv-cache-memory", "16Mi", "--threads", "1", "--pooling", "cls", "--runner", "pooling", "--embeddings")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	embed := func(input any, extra map[string]any) [][]float64 {
		t.Helper()
		body := map[string]any{"input": input, "encoding_format": "float"}
		for k, v := range extra {
			body[k] = v
		}
		code, resp := postJSON(t, base+"/v1/embeddings", body, nil)
		if code != http.StatusOK {
			t.Fatalf("%v: %d %v", body, code, resp)
		}
		var out [][]float64
		for _, d := range resp["data"].([]any) {
			var v []float64
			for _, x := range d.(map[string]any)["embedding"].([]any) {
				v = append(v, x.(float64))
			}
			out = append(out, v)
		}
		return out
	}
	v := embed([][]int{{72, 105}, {72, 33, 33}, {72}, {105, 72}}, nil)
	if !slices.Equal(v[0], v[1]) || !slices.Equal(v[0], v[2]) {
		t.Fatal("--pooling cls: inputs with the same first token embed differently")
	}
	if slices.Equal(v[0], v[3]) {
		t.Fatal("--pooling cls: inputs with different first tokens embed alike")
	}
	raw := embed([]int{72, 1, 2}, map[string]any{"normalize": false, "dimensions": 3})[0]
	if len(raw) != 3 {
		t.Fatalf("dimensions 3: %d values", len(raw))
	}
	var norm float64
	for _, x := range raw {
		norm += x * x
	}
	if norm > 0.999 && norm < 1.001 {
		t.Fatalf("normalize false: norm² %g, as if normalized", norm)
	}
	// The 5 requests (11 prompt tokens) count as requests that computed
	// their prompts and generated nothing.
	fams := scrapeWith(t, http.DefaultClient, base)
	sum := func(name string) float64 {
		n := 0.0
		for _, m := range fams[name].GetMetric() {
			n += m.GetCounter().GetValue() + m.GetUntyped().GetValue() + m.GetHistogram().GetSampleSum()
		}
		return n
	}
	if got := successes(fams); got != 5 {
		t.Errorf("vllm:request_success_total %g, want 5", got)
	}
	for name, want := range map[string]float64{"llamacpp:prompt_tokens_total": 11, "llamacpp:tokens_predicted_total": 0,
		"vllm:request_generation_tokens": 0, "vllm:request_prompt_tokens": 11} {
		if got := sum(name); got != want {
			t.Errorf("%s %g, want %g", name, got, want)
		}
	}
	if sum("llamacpp:n_decode_total") == 0 || sum("vllm:iteration_tokens_total") == 0 {
		t.Error("no engine step carried the embeddings (llamacpp:n_decode_total, vllm:iteration_tokens_total)")
	}
}
