package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRouterMode runs serve as llama-server's router over two dummy
// models with --models-max 1: a chat loads its model, the next model's
// chat evicts it, an unload frees the slot; GET /models/sse reports
// every status change.
func TestRouterMode(t *testing.T) {
	t.Setenv("LLAMA_CACHE", t.TempDir()) // the router lists llama.cpp's cache too: an empty one
	dir := t.TempDir()
	preset := filepath.Join(dir, "models.ini")
	ini := "[*]\nmax-model-len = 256\nkv-cache-memory = 64Mi\n\n[a]\nmodel = dummy\n\n[b]\nmodel = dummy\n"
	if err := os.WriteFile(preset, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := startProc(t, "serve", "--models-preset", preset, "--models-max", "1", "--port", fmt.Sprint(port), "--threads", "1")
	waitHealthy(t, base, p)

	status := func() map[string]string {
		t.Helper()
		resp, err := http.Get(base + "/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Data []struct {
				ID     string
				Status struct{ Value string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range l.Data {
			out[m.ID] = m.Status.Value
		}
		return out
	}
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	waitStatus := func(id, want string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if status()[id] == want {
				return
			}
		}
		t.Fatalf("%s never %s: %v\n%s", id, want, status(), p.out.String())
	}
	if s := status(); s["a"] != "unloaded" || s["b"] != "unloaded" {
		t.Fatalf("at start: %v", s)
	}
	changes := watchStatus(t, base)
	chat := `{"model":"%s","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	if code, body := post("/v1/chat/completions", fmt.Sprintf(chat, "a")); code != 200 {
		t.Fatalf("chat with a: %d %s", code, body)
	}
	if s := status(); s["a"] != "loaded" {
		t.Fatalf("after a's chat: %v", s)
	}
	if code, body := post("/v1/chat/completions", fmt.Sprintf(chat+"\n", "b")); code != 200 || !strings.Contains(body, `"model":"b"`) {
		t.Fatalf("chat with b: %d %s", code, body)
	}
	if s := status(); s["a"] != "unloaded" || s["b"] != "loaded" {
		t.Fatalf("--models-max 1 should have evicted a: %v", s)
	}
	if code, _ := post("/v1/chat/completions", fmt.Sprintf(chat, "nope")); code != 400 {
		t.Fatalf("unknown model: %d, want 400", code)
	}
	if code, body := post("/models/unload", `{"model":"b"}`); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	waitStatus("b", "unloaded")
	want := map[string][]string{"a": {"loading", "loaded", "unloaded 0"}, "b": {"loading", "loaded", "unloaded 0"}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := changes()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/models/sse status changes %v, want %v", got, want)
		}
	}
}

// watchStatus subscribes to base's /models/sse and returns what it has
// seen so far: each model's status_change events, "STATUS [EXIT_CODE]".
func watchStatus(t *testing.T, base string) func() map[string][]string {
	t.Helper()
	resp, err := http.Get(base + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("/models/sse: %s %q", resp.Status, ct)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e struct {
				Model, Event string
				Data         struct {
					Status   string
					ExitCode *int `json:"exit_code"`
				}
			}
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || json.Unmarshal([]byte(data), &e) != nil || e.Event != "status_change" {
				continue
			}
			s := e.Data.Status
			if e.Data.ExitCode != nil {
				s += fmt.Sprint(" ", *e.Data.ExitCode)
			}
			mu.Lock()
			seen[e.Model] = append(seen[e.Model], s)
			mu.Unlock()
		}
	}()
	return func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]string{}
		for k, v := range seen {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
}
