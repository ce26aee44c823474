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

	"github.com/tandem-llm/tandem/frontend/hfhub/hubtest"
)

// TestRouterModePull runs serve as llama-server's router with no
// --models-cache, so that it lists and downloads into llama.cpp's cache
// ($LLAMA_CACHE here), against a local fake of the Hugging Face hub
// ($MODEL_ENDPOINT) serving the default model as tandem-test/smollm2:
// POST /models downloads it with progress events, it is listed, loads
// for a chat, and DELETE /models removes it.
func TestRouterModePull(t *testing.T) {
	model := defaultModel(t)
	const name = "tandem-test/smollm2:Q4_1"
	hub := newModelHub(t, "tandem-test/smollm2", "smollm2-Q4_1.gguf", model)
	cache := t.TempDir()
	t.Setenv("LLAMA_CACHE", cache)
	t.Setenv("MODEL_ENDPOINT", hub.URL)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := startProc(t, "serve", "--models-dir", t.TempDir(), "--port", fmt.Sprint(port), "--threads", "1",
		"--max-model-len", "512", "--kv-cache-memory", "64Mi")
	waitHealthy(t, base, p)
	events := watchEvents(t, base)

	do := func(method, path, body string) (int, string) {
		t.Helper()
		return routerDo(t, base, method, path, body)
	}
	status := func() string {
		t.Helper()
		return routerStatus(t, base, name)
	}
	waitEvent := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for _, e := range events() {
				if e == want {
					return
				}
			}
		}
		t.Fatalf("no %q event in %v\n%s", want, events(), p.out.String())
	}

	if code, body := do("POST", "/models", `{"model":"`+name+`"}`); code != 200 || !strings.Contains(body, `"success":true`) {
		t.Fatalf("POST /models: %d %s", code, body)
	}
	waitEvent(name + " download_finished")
	waitEvent("* models_reload")
	if got := events(); !hasEvent(got, name+" model_status") || !hasEvent(got, name+" download_progress") {
		t.Errorf("events %v: want model_status and download_progress before download_finished", got)
	}
	if s := status(); s != "unloaded cache" {
		t.Fatalf("%s after the download: %s", name, s)
	}
	if code, body := do("POST", "/models", `{"model":"`+name+`"}`); code != 400 || !strings.Contains(body, "already exists") {
		t.Errorf("POST /models again: %d %s", code, body)
	}
	chat := `{"model":"` + name + `","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}`
	if code, body := do("POST", "/v1/chat/completions", chat); code != 200 || !strings.Contains(body, `"choices"`) {
		t.Fatalf("chat through the downloaded model: %d %s", code, body)
	}
	if s := status(); s != "loaded cache" {
		t.Fatalf("%s after the chat: %s", name, s)
	}
	if code, body := do("DELETE", "/models?model="+name, ""); code != 200 {
		t.Fatalf("DELETE /models: %d %s", code, body)
	}
	if s := status(); s != "absent" {
		t.Errorf("%s after DELETE: %s", name, s)
	}
	waitEvent(name + " model_remove")
	files, _ := filepath.Glob(filepath.Join(cache, "models--tandem-test--smollm2", "snapshots", "*", "*.gguf"))
	blobs, _ := filepath.Glob(filepath.Join(cache, "models--tandem-test--smollm2", "blobs", "*"))
	if len(files)+len(blobs) != 0 {
		t.Errorf("files left after DELETE: %v %v", files, blobs)
	}

	// --offline: the hub is there, the model is not cached, so no download.
	offPort := freePort(t)
	off := startProc(t, "serve", "--models-dir", t.TempDir(), "--port", fmt.Sprint(offPort), "--offline")
	offBase := fmt.Sprintf("http://127.0.0.1:%d", offPort)
	waitHealthy(t, offBase, off)
	resp, err := http.Post(offBase+"/models", "application/json", strings.NewReader(`{"model":"`+name+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "offline") {
		t.Errorf("POST /models with --offline: %d %s, want 501 naming offline mode", resp.StatusCode, b)
	}
}

// routerDo sends method path with body to the router at base and returns
// the status and the body.
func routerDo(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// routerStatus is model id as the router's GET /models lists it:
// "STATUS SOURCE", " failed" after a failed load; "absent" when unlisted.
func routerStatus(t *testing.T, base, id string) string {
	t.Helper()
	_, body := routerDo(t, base, "GET", "/models", "")
	var l struct {
		Data []struct {
			ID, Source string
			Status     struct {
				Value  string
				Failed bool
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("GET /models: %v: %s", err, body)
	}
	for _, m := range l.Data {
		if m.ID == id {
			s := m.Status.Value + " " + m.Source
			if m.Status.Failed {
				s += " failed"
			}
			return s
		}
	}
	return "absent"
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// newModelHub is a fake Hugging Face hub (hfhub/hubtest) with one
// repository holding file (the content of path) and a README.md.
func newModelHub(t *testing.T, repo, file, path string) *hubtest.Hub {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return newHub(t, map[string]map[string][]byte{repo: {"README.md": []byte("# a model of the tests\n"), file: data}})
}

// newHub is a fake Hugging Face hub holding repos (by OWNER/REPO), each
// its files by path.
func newHub(t *testing.T, repos map[string]map[string][]byte) *hubtest.Hub {
	t.Helper()
	hub := hubtest.New(t)
	for repo, files := range repos {
		hub.Add(repo, files)
	}
	return hub
}

// watchEvents subscribes to base's /models/sse and returns what it has
// seen so far, each event as "MODEL EVENT".
func watchEvents(t *testing.T, base string) func() []string {
	t.Helper()
	resp, err := http.Get(base + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var mu sync.Mutex
	var seen []string
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var e struct{ Model, Event string }
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &e) == nil {
				mu.Lock()
				seen = append(seen, e.Model+" "+e.Event)
				mu.Unlock()
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
