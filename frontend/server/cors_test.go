package server

import (
	"net/http"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

func TestCORSAnswer(t *testing.T) {
	local := CORS{Origins: []string{"localhost"}}
	tests := []struct {
		name                   string
		policy                 CORS
		origin, method, header string
		want                   map[string]string // "" = absent
	}{
		{"default reflects any origin with credentials", CORS{}, "https://web.example", "POST", "Authorization",
			map[string]string{"Access-Control-Allow-Origin": "https://web.example", "Access-Control-Allow-Credentials": "true",
				"Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS", "Access-Control-Allow-Headers": "Authorization"}},
		{"no headers asked", CORS{}, "x", "POST", "", map[string]string{"Access-Control-Allow-Headers": "*"}},
		{"not a preflight: origin only", CORS{}, "https://a", "", "", map[string]string{"Access-Control-Allow-Origin": "https://a", "Access-Control-Allow-Methods": ""}},
		{"without credentials every origin is *", CORS{NoCredentials: true}, "https://a", "POST", "",
			map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": ""}},
		{"exact origin", CORS{Origins: []string{"https://a"}, NoCredentials: true}, "https://a", "", "", map[string]string{"Access-Control-Allow-Origin": "https://a"}},
		{"other origin refused", CORS{Origins: []string{"https://a"}}, "https://b", "POST", "", map[string]string{"Access-Control-Allow-Origin": ""}},
		{"localhost", local, "http://localhost:8080", "POST", "", map[string]string{"Access-Control-Allow-Origin": "http://localhost:8080"}},
		{"127.0.0.1", local, "http://127.0.0.1", "POST", "", map[string]string{"Access-Control-Allow-Origin": "http://127.0.0.1"}},
		{"::1", local, "http://[::1]:3000", "POST", "", map[string]string{"Access-Control-Allow-Origin": "http://[::1]:3000"}},
		{"localhost.evil.com", local, "http://localhost.evil.com", "POST", "", map[string]string{"Access-Control-Allow-Origin": ""}},
		{"notlocalhost", local, "http://notlocalhost", "POST", "", map[string]string{"Access-Control-Allow-Origin": ""}},
		{"listed methods and headers", CORS{Methods: []string{"POST"}, Headers: []string{"Content-Type", "Authorization"}}, "o", "POST", "X-Other",
			map[string]string{"Access-Control-Allow-Methods": "POST", "Access-Control-Allow-Headers": "Content-Type, Authorization"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.policy.corsAnswer(tc.origin, tc.method, tc.header)
			for k, want := range tc.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestCORSPreflight: a preflight is 200 with the policy's headers before
// routing and auth (a route that needs a key included); a request from an
// allowed origin gets its Access-Control-Allow-Origin.
func TestCORSPreflight(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.APIKey = "k"; c.CORS = CORS{Origins: []string{"localhost"}} }, tokenizer.NewByte())
	for _, tc := range []struct{ origin, want string }{{"http://localhost:5173", "http://localhost:5173"}, {"http://evil.com", ""}} {
		req, _ := http.NewRequest(http.MethodOptions, ts.URL+"/v1/chat/completions", nil)
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != tc.want {
			t.Errorf("%s: %d, allow-origin %q, want 200 %q", tc.origin, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), tc.want)
		}
		if tc.want != "" && resp.Header.Get("Access-Control-Allow-Headers") != "authorization,content-type" {
			t.Errorf("allow-headers %q", resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/models", nil)
	req.Header.Set("Origin", "http://127.0.0.1:3000")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:3000" || resp.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("GET: %d %v", resp.StatusCode, resp.Header)
	}
}
