package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestCORSProxy: /cors-proxy (--webui-mcp-proxy) forwards GET and POST to
// the url parameter with only the x-llama-server-proxy-header-* headers,
// returns the target's status, headers and body, refuses URLs llama-server
// refuses, stays behind the API key, and is 403 without the flag.
func TestCORSProxy(t *testing.T) {
	var mu sync.Mutex
	var seen *http.Request
	var seenBody string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, seenBody = r, string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "abc")
		w.Header().Set("Access-Control-Allow-Origin", "https://elsewhere")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer target.Close()
	const key = "sk-test"
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.CORSProxy, c.APIKey, c.MaxRequestBody = true, key, "1M" }, tokenizer.NewByte())
	auth := map[string]string{"Authorization": "Bearer " + key}

	hdr := map[string]string{"Authorization": "Bearer " + key, "Cookie": "session=secret", "X-Api-Key": key, "Proxy-Authorization": "Basic x",
		"x-llama-server-proxy-header-accept": "application/json, text/event-stream", "x-llama-server-proxy-header-authorization": "Bearer explicit"}
	code, body := do(t, ts, "POST", "/cors-proxy?url="+target.URL+"/mcp", `{"jsonrpc":"2.0"}`, hdr)
	if code != http.StatusAccepted || body != `{"ok":true}` {
		t.Fatalf("POST: %d %s, want the target's 202 and body", code, body)
	}
	mu.Lock()
	got, gotBody := seen, seenBody
	mu.Unlock()
	if got.Method != "POST" || got.URL.Path != "/mcp" || gotBody != `{"jsonrpc":"2.0"}` {
		t.Errorf("target saw %s %s %q", got.Method, got.URL.Path, gotBody)
	}
	if got.Header.Get("Accept") != "application/json, text/event-stream" || got.Header.Get("Authorization") != "Bearer explicit" {
		t.Errorf("explicit headers not forwarded: %v", got.Header)
	}
	for _, h := range []string{"Cookie", "X-Api-Key", "Proxy-Authorization", "X-Llama-Server-Proxy-Header-Accept"} {
		if got.Header.Get(h) != "" {
			t.Errorf("%s forwarded to the target", h)
		}
	}

	req, _ := http.NewRequest("GET", ts.URL+"/cors-proxy?url="+target.URL, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Origin", "http://localhost:5173")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Mcp-Session-Id") != "abc" || resp.Header.Get("Access-Control-Allow-Origin") == "https://elsewhere" {
		t.Errorf("GET: %d, headers %v: want the target's status and headers, this server's CORS", resp.StatusCode, resp.Header)
	}
	mu.Lock()
	if seen.Method != "GET" || seen.URL.Path != "/" {
		t.Errorf("GET reached the target as %s %s", seen.Method, seen.URL.Path)
	}
	mu.Unlock()

	for _, bad := range []struct{ url, want string }{
		{"", "is required"},
		{"ftp://example.com/x", "unsupported URL scheme"},
		{"http://user:pw@example.com/", "authentication in target URL"},
		{"http:///path", "missing host"},
	} {
		if code, body := do(t, ts, "GET", "/cors-proxy?url="+bad.url, "", auth); code != http.StatusBadRequest || !strings.Contains(body, bad.want) {
			t.Errorf("url=%q: %d %s, want 400 with %q", bad.url, code, body, bad.want)
		}
	}
	if code, _ := do(t, ts, "GET", "/cors-proxy?url="+target.URL, "", nil); code != http.StatusUnauthorized {
		t.Errorf("without the API key: %d, want 401", code)
	}
	if code, body := do(t, ts, "GET", "/cors-proxy?url=http://127.0.0.1:1/", "", auth); code != http.StatusBadGateway {
		t.Errorf("unreachable target: %d %s, want 502", code, body)
	}
	off := newTestServer(t, &fakeEngine{}, "")
	if code, _ := do(t, off, "GET", "/cors-proxy?url="+target.URL, "", nil); code != http.StatusForbidden {
		t.Errorf("without --webui-mcp-proxy: %d, want 403", code)
	}
}
