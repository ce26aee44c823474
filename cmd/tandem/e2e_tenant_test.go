package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTenantsOwnTheirSessions: with two API keys (--api-key-file), each
// key is a tenant. Key B gets for key A's session exactly the 404 of an
// unknown id (GET and DELETE), cannot delete it, shares none of A's
// cached blocks (cached_tokens 0 for A's prompt), and cannot read or
// continue A's stored responses.
func TestTenantsOwnTheirSessions(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("# two tenants\nkey-of-alice\n\nkey-of-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ep := "ipc://" + filepath.Join(dir, "engine.sock")
	port := freePort(t)
	eng := startProc(t, "engine", "--model", "dummy", "--listen", ep, "--max-model-len", "512", "--kv-cache-memory", "64Mi", "--threads", "1")
	fe := startProc(t, "frontend", "--engines", ep, "--port", fmt.Sprint(port), "--api-key-file", keys)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)
	_ = eng
	alice := map[string]string{"Authorization": "Bearer key-of-alice"}
	bob := map[string]string{"Authorization": "Bearer key-of-bob"}
	prompt := strings.Repeat("a shared system prompt that spans blocks; ", 4)

	complete := func(hdr map[string]string) int {
		t.Helper()
		code, body := postJSON(t, base+"/v1/completions", map[string]any{"model": "dummy", "prompt": prompt, "max_tokens": 1, "session_id": "conv"}, hdr)
		if code != http.StatusOK {
			t.Fatalf("completion: %d %v", code, body)
		}
		usage := body["usage"].(map[string]any)
		details, _ := usage["prompt_tokens_details"].(map[string]any)
		cached, _ := details["cached_tokens"].(float64)
		return int(cached)
	}
	call := func(method, path string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	complete(alice)
	if c := complete(alice); c == 0 {
		t.Fatal("alice's second turn found nothing cached")
	}
	if code, body := call("GET", "/v1/sessions/conv", alice); code != http.StatusOK || !strings.Contains(body, `"id":"conv"`) {
		t.Fatalf("alice GET her session: %d %s", code, body)
	}
	// Bob: the same answer as for a session that does not exist.
	gotCode, got := call("GET", "/v1/sessions/conv", bob)
	unkCode, unk := call("GET", "/v1/sessions/never-seen", bob)
	if gotCode != http.StatusNotFound || unkCode != http.StatusNotFound || got != strings.ReplaceAll(unk, "never-seen", "conv") {
		t.Fatalf("bob GET alice's session: %d %s; unknown: %d %s", gotCode, got, unkCode, unk)
	}
	if code, body := call("DELETE", "/v1/sessions/conv", bob); code != http.StatusNotFound {
		t.Fatalf("bob DELETE alice's session: %d %s", code, body)
	}
	if code, _ := call("GET", "/v1/sessions/conv", alice); code != http.StatusOK {
		t.Fatalf("alice's session gone after bob's DELETE: %d", code)
	}
	// Bob's same prompt under the same session id: none of alice's blocks.
	if c := complete(bob); c != 0 {
		t.Fatalf("bob's first request reused %d of alice's cached tokens", c)
	}

	// Stored responses are their owner's.
	code, resp := postJSON(t, base+"/v1/responses", map[string]any{"model": "dummy", "input": "hi", "max_output_tokens": 2}, alice)
	if code != http.StatusOK {
		t.Fatalf("alice's response: %d %v", code, resp)
	}
	id := resp["id"].(string)
	if code, _ := call("GET", "/v1/responses/"+id, alice); code != http.StatusOK {
		t.Fatalf("alice GET her response: %d", code)
	}
	if code, body := call("GET", "/v1/responses/"+id, bob); code != http.StatusNotFound {
		t.Fatalf("bob GET alice's response: %d %s", code, body)
	}
	code, resp = postJSON(t, base+"/v1/responses", map[string]any{"model": "dummy", "input": "more", "max_output_tokens": 2, "previous_response_id": id}, bob)
	if b, _ := json.Marshal(resp); code != http.StatusBadRequest || !strings.Contains(string(b), "not found") {
		t.Fatalf("bob continuing alice's response: %d %s", code, b)
	}
	if code, body := call("DELETE", "/v1/responses/"+id, bob); code != http.StatusNotFound {
		t.Fatalf("bob DELETE alice's response: %d %s", code, body)
	}
}
