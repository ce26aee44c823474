package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestServeResetPrefixCache: a prompt sent twice hits the prefix cache;
// after vLLM's POST /reset_prefix_cache (and SGLang's /flush_cache) the
// engine computes it again from the start.
func TestServeResetPrefixCache(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "1024",
		"--kv-cache-memory", "16Mi", "--threads", "1")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	cached := func() int {
		t.Helper()
		body := map[string]any{"model": "dummy", "prompt": strings.Repeat("the same prefix ", 16), "max_tokens": 1}
		code, resp := postJSON(t, base+"/v1/completions", body, nil)
		if code != http.StatusOK {
			t.Fatalf("completion: %d %v", code, resp)
		}
		d, _ := resp["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)
		n, _ := d["cached_tokens"].(float64)
		return int(n)
	}
	cached()
	if n := cached(); n == 0 {
		t.Fatal("the second request hit no cache")
	}
	if code, resp := postJSON(t, base+"/reset_prefix_cache", nil, nil); code != http.StatusOK || resp["success"] != true {
		t.Fatalf("reset_prefix_cache: %d %v", code, resp)
	}
	if n := cached(); n != 0 {
		t.Errorf("%d tokens cached after reset_prefix_cache", n)
	}
	cached()
	resp, err := http.Post(base+"/flush_cache", "", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("flush_cache: %v %v", err, resp)
	}
	resp.Body.Close()
	if n := cached(); n != 0 {
		t.Errorf("%d tokens cached after flush_cache", n)
	}
}
