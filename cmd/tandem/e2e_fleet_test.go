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
	"time"
)

// TestRouterMode runs serve as llama-server's router over two dummy
// models with --models-max 1: a chat loads its model, the next model's
// chat evicts it, an unload frees the slot.
func TestRouterMode(t *testing.T) {
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
}
