package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRouterModeRemotePreset runs serve as llama-server's router from a
// preset repository of a local fake hub (-hf tandem-test/presets): its
// preset.ini lands in the models cache and names the models; loading one
// downloads its hf-repo (the default model) with progress events, then
// it loads and chats; a model whose repository the hub lacks fails to
// load. (-hf of a model repository serves that model: e2e_hfmodel_test.go.)
func TestRouterModeRemotePreset(t *testing.T) {
	model := defaultModel(t)
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	ini := "[*]\nctx-size = 512\n\n[smol]\nhf = tandem-test/smollm2:Q4_1\n\n[missing]\nhf-repo = tandem-test/missing\n"
	hub := newHub(t, map[string]map[string][]byte{
		"tandem-test/presets": {"preset.ini": []byte(ini), "README.md": []byte("# presets\n")},
		"tandem-test/smollm2": {"smollm2-Q4_1.gguf": data},
	})
	cache := t.TempDir()
	t.Setenv("LLAMA_CACHE", cache)
	t.Setenv("MODEL_ENDPOINT", hub.URL)
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := startProc(t, "serve", "-hf", "tandem-test/presets", "--port", fmt.Sprint(port), "--threads", "1", "--kv-cache-memory", "64Mi")
	waitHealthy(t, base, p)
	events := watchEvents(t, base)

	do := func(method, path, body string) (int, string) {
		t.Helper()
		return routerDo(t, base, method, path, body)
	}
	status := func(id string) string {
		t.Helper()
		return routerStatus(t, base, id)
	}
	waitStatus := func(id, want string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if status(id) == want {
				return
			}
		}
		t.Fatalf("%s never %q (now %q); events %v\n%s", id, want, status(id), events(), p.out.String())
	}

	if s, m := status("smol"), status("missing"); s != "unloaded preset" || m != "unloaded preset" {
		t.Fatalf("the preset's models at start: smol %q, missing %q", s, m)
	}
	if got, _ := filepath.Glob(filepath.Join(cache, "models--tandem-test--presets", "snapshots", "*", "preset.ini")); len(got) != 1 {
		t.Errorf("the preset in the models cache: %v", got)
	}
	if code, body := do("POST", "/models/load", `{"model":"smol"}`); code != 200 {
		t.Fatalf("load smol: %d %s", code, body)
	}
	waitStatus("smol", "loaded preset")
	folded := func() string { // smol's events, repeats folded
		var smol []string
		for _, e := range events() {
			if name, ev, _ := strings.Cut(e, " "); name == "smol" && (len(smol) == 0 || smol[len(smol)-1] != ev) {
				smol = append(smol, ev)
			}
		}
		return fmt.Sprint(smol)
	}
	want := fmt.Sprint([]string{"model_status", "download_progress", "download_finished", "model_status", "status_change"})
	for deadline := time.Now().Add(10 * time.Second); folded() != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("smol's events %v, want %v (repeats folded)", folded(), want)
		}
	}
	chat := `{"model":"smol","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}`
	if code, body := do("POST", "/v1/chat/completions", chat); code != 200 || !strings.Contains(body, `"choices"`) {
		t.Fatalf("chat with smol: %d %s", code, body)
	}
	if got, _ := filepath.Glob(filepath.Join(cache, "models--tandem-test--smollm2", "snapshots", "*", "smollm2-Q4_1.gguf")); len(got) != 1 {
		t.Errorf("smol's model in the models cache: %v", got)
	}

	if code, body := do("POST", "/models/load", `{"model":"missing"}`); code != 200 {
		t.Fatalf("load missing: %d %s", code, body)
	}
	waitStatus("missing", "unloaded preset failed")
	for deadline := time.Now().Add(10 * time.Second); !hasEvent(events(), "missing download_failed"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("events %v: want missing download_failed", events())
		}
	}
}
