package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/servertools"
)

// TestEdge: what router mode answers itself (server.Edge): the tools,
// the CORS policy (localhost only while tools are on), the CORS proxy's
// 403 without its flag; every other request reaches the router's routes.
func TestEdge(t *testing.T) {
	tools, err := servertools.New([]string{"get_info"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var reached []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
	ts := httptest.NewServer(Edge(Config{Tools: tools}, next))
	defer ts.Close()

	if code, body := do(t, ts, "GET", "/tools", "", nil); code != 200 || !strings.Contains(body, `"get_info"`) {
		t.Errorf("GET /tools: %d %s", code, body)
	}
	if code, _ := do(t, ts, "GET", "/cors-proxy?url=http://127.0.0.1:1/", "", nil); code != http.StatusForbidden {
		t.Errorf("/cors-proxy without its flag: %d, want 403", code)
	}
	if code, _ := do(t, ts, "POST", "/v1/chat/completions", `{"model":"m"}`, nil); code != http.StatusTeapot || len(reached) != 1 || reached[0] != "POST /v1/chat/completions" {
		t.Errorf("a model's route: %d, reached %v", code, reached)
	}
	for origin, allowed := range map[string]bool{"http://localhost:5173": true, "http://evil.com": false} {
		req, _ := http.NewRequest("OPTIONS", ts.URL+"/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin") == origin; resp.StatusCode != 200 || got != allowed {
			t.Errorf("preflight from %s: %d, allowed %v, want %v", origin, resp.StatusCode, got, allowed)
		}
	}
	if len(reached) != 1 {
		t.Errorf("preflights reached the router's routes: %v", reached)
	}
}
