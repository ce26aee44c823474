package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/hfhub"
	"github.com/tandem-llm/tandem/frontend/hfhub/hubtest"
)

// hubRouter runs a router over an empty cache and a models dir holding
// "local", downloading from hub, with the API key "k"; fake children.
func hubRouter(t *testing.T, hub *hubtest.Hub, offline bool) (*Router, *httptest.Server, string) {
	t.Helper()
	d := t.TempDir()
	cache, dir := filepath.Join(d, "cache"), filepath.Join(d, "dir")
	write(t, filepath.Join(dir, "local.gguf"), "")
	c, err := hfhub.New(hfhub.Options{Endpoint: hub.URL, CacheDir: cache, HTTP: hub.Client()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(Config{
		Sources: Sources{Dir: dir, Cache: cache}, Hub: c, Offline: offline, APIKeys: []string{"k"}, Autoload: true,
		Command: func(s Spec, port int) ([]string, error) {
			return []string{os.Args[0], "fake-child", strconv.Itoa(port)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(r.Handler())
	t.Cleanup(func() { ts.Close(); r.Close() })
	return r, ts, cache
}

// call sends a request with the API key (unless anon) and reads a JSON
// answer; an error answer's message and type are in msg.
func call(t *testing.T, ts *httptest.Server, method, path, body string, anon bool) (status int, v map[string]any, msg string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if !anon {
		req.Header.Set("Authorization", "Bearer k")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if e, ok := v["error"].(map[string]any); ok {
		msg = e["type"].(string) + ": " + e["message"].(string)
	}
	return resp.StatusCode, v, msg
}

// listed is GET /models's entry of id (nil if none).
func listed(t *testing.T, ts *httptest.Server, id string) map[string]any {
	t.Helper()
	_, v, _ := call(t, ts, "GET", "/models", "", true)
	for _, m := range v["data"].([]any) {
		if m := m.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

type sseMsg struct {
	Model, Event string
	Data         json.RawMessage
}

// String is "MODEL EVENT[ STATUS[ EXIT_CODE]]".
func (m sseMsg) String() string {
	var d struct {
		Status   string
		ExitCode *int `json:"exit_code"`
	}
	_ = json.Unmarshal(m.Data, &d)
	s := strings.TrimSpace(m.Model + " " + m.Event + " " + d.Status)
	if d.ExitCode != nil {
		s += " " + strconv.Itoa(*d.ExitCode)
	}
	return s
}

// subscribe reads ts's /models/sse.
func subscribe(t *testing.T, ts *httptest.Server) <-chan sseMsg {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/models/sse", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/models/sse: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan sseMsg, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m sseMsg
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &m) == nil {
				ch <- m
			}
		}
	}()
	return ch
}

// expect reads the events want names, in order, skipping the
// download_progress events it does not name; it returns all it read.
func expect(t *testing.T, ch <-chan sseMsg, want ...string) []sseMsg {
	t.Helper()
	var got []sseMsg
	for _, w := range want {
		for {
			var m sseMsg
			select {
			case e, ok := <-ch:
				if !ok {
					t.Fatalf("stream ended, want %q", w)
				}
				m = e
			case <-time.After(20 * time.Second):
				t.Fatalf("no event, want %q (read %v)", w, got)
			}
			got = append(got, m)
			if m.String() == w {
				break
			}
			if m.Event != "download_progress" {
				t.Fatalf("event %q, want %q (read %v)", m, w, got)
			}
		}
	}
	return got
}

// TestRouterDownload: POST /models downloads with progress into the
// cache, whose scanner then lists the model as hfhub placed it; it loads
// like any cache model and DELETE stops it and removes its files.
func TestRouterDownload(t *testing.T) {
	hub := hubtest.New(t)
	model := bytes.Repeat([]byte("gguf"), 3000)
	hub.Add("o/r", map[string][]byte{"README.md": []byte("# r\n"), "m-F16.gguf": model, "m-Q8_0.gguf": []byte("q8")})
	r, ts, _ := hubRouter(t, hub, false)
	ev := subscribe(t, ts)

	if code, v, msg := call(t, ts, "POST", "/models", `{"model":"o/r:F16"}`, false); code != 200 || v["success"] != true {
		t.Fatalf("POST /models: %d %v %s", code, v, msg)
	}
	got := expect(t, ev, "o/r:F16 model_status downloading", "o/r:F16 download_finished", "* models_reload")
	url := hub.URL + "/o/r/resolve/" + hubtest.Commit + "/m-F16.gguf"
	var last map[string]Transfer
	for _, e := range got {
		if e.Event == "download_progress" {
			var d struct{ Progress map[string]Transfer }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			last = d.Progress
		}
	}
	if n := int64(len(model)); len(last) != 1 || last[url] != (Transfer{n, n}) {
		t.Errorf("last download_progress %v, want %s done %d of %d", last, url, n, n)
	}
	m := listed(t, ts, "o/r:F16")
	if m == nil || m["status"].(map[string]any)["value"] != "unloaded" || m["source"] != "cache" || m["can_remove"] != true {
		t.Fatalf("GET /models after the download: %v", m)
	}
	local, err := r.cfg.Hub.Local("o/r:F16")
	r.mu.Lock()
	spec, _ := r.fleet.Get("o/r:F16")
	r.mu.Unlock()
	if err != nil || local.Name != "o/r:F16" || spec.Path != local.Path {
		t.Fatalf("the cache scanner's path %q, hfhub's %+v, %v", spec.Path, local, err)
	}
	if code, _, msg := call(t, ts, "POST", "/models", `{"model":"o/r:F16"}`, false); code != 400 || msg != "invalid_request_error: model 'o/r:F16' already exists" {
		t.Errorf("POST /models again: %d %s", code, msg)
	}

	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"o/r:F16"}`, false); code != 200 {
		t.Fatalf("load: %d %s", code, msg)
	}
	expect(t, ev, "o/r:F16 model_status loading", "o/r:F16 status_change loading", "o/r:F16 status_change loaded")
	if code, _, msg := call(t, ts, "DELETE", "/models?model=o/r:F16", "", false); code != 200 {
		t.Fatalf("DELETE a loaded model: %d %s", code, msg)
	}
	expect(t, ev, "o/r:F16 status_change unloaded 0", "o/r:F16 model_remove")
	if m := listed(t, ts, "o/r:F16"); m != nil {
		t.Errorf("listed after DELETE: %v", m)
	}
	if _, err := os.Stat(local.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after DELETE: %v, want it gone", local.Path, err)
	}
}

// TestRouterDownloadErrors: llama-server's statuses for names it refuses
// and the hub's refusals, before anything is listed.
func TestRouterDownloadErrors(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/private", map[string][]byte{"p-Q8_0.gguf": []byte("p")})
	hub.Private("o/private", true)
	hub.Add("o/docs", map[string][]byte{"README.md": []byte("no model")})
	hub.Add("o/have", map[string][]byte{"m-Q8_0.gguf": []byte("q8")})
	_, ts, cache := hubRouter(t, hub, false)
	write(t, filepath.Join(cache, "models--o--have", "snapshots", hubtest.Commit, "m-Q8_0.gguf"), "q8")
	call(t, ts, "GET", "/models?reload=1", "", false)
	tests := []struct {
		method, path, body string
		anon               bool
		status             int
		msg                string
	}{
		{"POST", "/models", `{"model":""}`, false, 400, "invalid_request_error: model must be a non-empty string"},
		{"POST", "/models", `{"model":"no-owner"}`, false, 400, "invalid_request_error: invalid HF repo format, expected <user>/<model>[:quant]"},
		{"POST", "/models", `{"model":"o/../x"}`, false, 400, "invalid_request_error: invalid HF repo format, expected <user>/<model>[:quant]"},
		{"POST", "/models", `{"model":"o/missing"}`, false, 404, "not_found_error: hfhub: o/missing: not found (HTTP 404): Repository not found"},
		{"POST", "/models", `{"model":"o/private"}`, false, 401, "authentication_error: hfhub: o/private: unauthorized (HTTP 401): Invalid username or password."},
		{"POST", "/models", `{"model":"o/docs"}`, false, 400, "invalid_request_error: hfhub: o/docs: no GGUF file: no model for the default tags (Q4_K_M, Q8_0); the repository has no GGUF files"},
		{"POST", "/models", `{"model":"o/have:Q8_0"}`, false, 400, "invalid_request_error: model 'o/have:Q8_0' already exists"},
		{"POST", "/models", `{"model":"o/have:Q8_0"}`, true, 401, "authentication_error: Invalid API Key"},
		{"DELETE", "/models", "", false, 400, "invalid_request_error: model must be a non-empty string"},
		{"DELETE", "/models?model=nope", "", false, 500, "server_error: model name=nope is not found"},
		{"DELETE", "/models?model=local", "", false, 500, "server_error: model name=local is not removable (not from cache)"},
		{"DELETE", "/models?model=o/have:Q8_0", "", true, 401, "authentication_error: Invalid API Key"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.body, func(t *testing.T) {
			if code, _, msg := call(t, ts, tt.method, tt.path, tt.body, tt.anon); code != tt.status || msg != tt.msg {
				t.Errorf("got %d %q, want %d %q", code, msg, tt.status, tt.msg)
			}
		})
	}
	if m := listed(t, ts, "o/have:Q8_0"); m == nil {
		t.Error("a refused POST or DELETE dropped o/have:Q8_0")
	}
}

// TestRouterOffline: offline, POST /models takes what the cache holds
// and refuses the rest, asking the hub nothing.
func TestRouterOffline(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/r", map[string][]byte{"m-Q8_0.gguf": []byte("q8")})
	_, ts, cache := hubRouter(t, hub, true)
	ev := subscribe(t, ts)
	if code, _, msg := call(t, ts, "POST", "/models", `{"model":"o/r"}`, false); code != 501 || !strings.HasPrefix(msg, "not_supported_error: offline mode") {
		t.Errorf("offline POST of a model not cached: %d %q, want 501", code, msg)
	}
	snap := filepath.Join(cache, "models--o--r", "snapshots", hubtest.Commit)
	write(t, filepath.Join(snap, "m-Q8_0.gguf"), "q8")
	write(t, filepath.Join(cache, "models--o--r", "refs", "main"), hubtest.Commit)
	if code, _, msg := call(t, ts, "POST", "/models", `{"model":"o/r"}`, false); code != 200 {
		t.Fatalf("offline POST of a cached model: %d %s", code, msg)
	}
	expect(t, ev, "o/r model_status downloading", "o/r download_finished", "* models_reload")
	if m := listed(t, ts, "o/r:Q8_0"); m == nil || listed(t, ts, "o/r") != nil {
		t.Errorf("after the offline POST: o/r:Q8_0 = %v, o/r = %v", m, listed(t, ts, "o/r"))
	}
}

// TestRouterCancelDownload: a download in progress is listed as
// downloading; DELETE cancels it and forgets it, as do an unload (which
// keeps nothing either) and the router's Close.
func TestRouterCancelDownload(t *testing.T) {
	hub := hubtest.New(t)
	hub.Add("o/slow", map[string][]byte{"s-Q8_0.gguf": bytes.Repeat([]byte("s"), 4096)})
	hub.Stall("s-Q8_0.gguf")
	r, ts, _ := hubRouter(t, hub, false)
	ev := subscribe(t, ts)
	start := func() {
		t.Helper()
		if code, _, msg := call(t, ts, "POST", "/models", `{"model":"o/slow:Q8_0"}`, false); code != 200 {
			t.Fatalf("POST /models: %d %s", code, msg)
		}
		expect(t, ev, "o/slow:Q8_0 model_status downloading", "o/slow:Q8_0 download_progress")
	}

	start()
	m := listed(t, ts, "o/slow:Q8_0")
	if m == nil || m["status"].(map[string]any)["value"] != "downloading" || m["can_remove"] != true {
		t.Fatalf("GET /models while downloading: %v", m)
	}
	if code, _, msg := call(t, ts, "POST", "/models/load", `{"model":"o/slow:Q8_0"}`, false); code != 200 {
		t.Errorf("load while downloading: %d %s, want 200 and nothing done (llama-server's)", code, msg)
	}
	chat := `{"model":"o/slow:Q8_0","messages":[{"role":"user","content":"hi"}]}`
	if code, _, msg := call(t, ts, "POST", "/v1/chat/completions", chat, false); code != 400 || !strings.Contains(msg, "is not running") {
		t.Errorf("chat while downloading: %d %s, want 400 not running", code, msg)
	}
	if code, _, msg := call(t, ts, "DELETE", "/models?model=o/slow:Q8_0", "", false); code != 200 {
		t.Fatalf("DELETE mid-download: %d %s", code, msg)
	}
	expect(t, ev, "o/slow:Q8_0 download_failed", "* models_reload", "o/slow:Q8_0 model_remove")
	if m := listed(t, ts, "o/slow:Q8_0"); m != nil {
		t.Errorf("listed after DELETE: %v", m)
	}

	start()
	if code, _, msg := call(t, ts, "POST", "/models/unload", `{"model":"o/slow:Q8_0"}`, false); code != 200 {
		t.Fatalf("unload mid-download: %d %s", code, msg)
	}
	expect(t, ev, "o/slow:Q8_0 download_failed", "* models_reload")
	if m := listed(t, ts, "o/slow:Q8_0"); m != nil {
		t.Errorf("listed after the unload: %v", m)
	}

	start()
	r.Close()
	expect(t, ev, "o/slow:Q8_0 download_failed")
}
