package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSleepMode runs sleep mode on real processes and the default model:
// vLLM's endpoints (--enable-sleep-mode) put the engine to sleep at level
// 2, which gives back the KV cache and the pack cache's resident pages
// (the engine's RSS falls), holds a request until the wake and then
// answers it as before; and llama-server's --sleep-idle-seconds puts an
// idle engine to sleep, which a /tokenize wakes.
func TestSleepMode(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	path := defaultModel(t)
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine.sock")
	eng := startProc(t, "engine", "--model", path, "--listen", ep, "--max-model-len", "1024", "--kv-cache-memory", "128Mi",
		"--threads", "1", "--weights-cache-dir", filepath.Join(dir, "packed"), "--sleep-idle-seconds", "2",
		"--heartbeat-interval", "200ms")
	port := freePort(t)
	fe := startProc(t, "frontend", "--engines", ep, "--port", strconv.Itoa(port), "--enable-sleep-mode", "--heartbeat-interval", "200ms")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)

	complete := func() string {
		code, body := postJSON(t, base+"/v1/completions", map[string]any{"prompt": "The capital of France is", "max_tokens": 6, "temperature": 0}, nil)
		if code != http.StatusOK {
			t.Fatalf("completion: %d %v", code, body)
		}
		return body["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	want := complete()
	awakeRSS := vmRSS(t, eng.cmd.Process.Pid)

	if code, body := postJSON(t, base+"/sleep?level=3", nil, nil); code != http.StatusBadRequest || body["error"].(map[string]any)["param"] != "query.level" {
		t.Errorf("sleep?level=3: %d %v, want 400 on query.level", code, body)
	}
	if code, body := postJSON(t, base+"/sleep?level=2", nil, nil); code != http.StatusOK || body["status"] != "sleeping" || body["level"] != 2.0 {
		t.Fatalf("sleep: %d %v", code, body)
	}
	if _, body := getJSON(t, base+"/is_sleeping"); body["is_sleeping"] != true {
		t.Errorf("is_sleeping after sleep: %v", body)
	}
	waitMetric(t, base, `sleep_state="discard_all"} 1`)
	asleepRSS := vmRSS(t, eng.cmd.Process.Pid)
	t.Logf("engine RSS awake %d MiB, asleep at level 2 %d MiB", awakeRSS>>20, asleepRSS>>20)
	if awakeRSS-asleepRSS < 48<<20 { // the pack cache alone is ~97 MiB resident
		t.Errorf("the engine's RSS fell by %d MiB asleep, want ≥ 48 MiB", (awakeRSS-asleepRSS)>>20)
	}

	// A request waits while the engine sleeps, and runs after the wake.
	got := make(chan string, 1)
	go func() { got <- complete() }()
	select {
	case s := <-got:
		t.Fatalf("a request was answered while the engine slept: %q", s)
	case <-time.After(time.Second):
	}
	if code, body := postJSON(t, base+"/wake_up", nil, nil); code != http.StatusOK || body["status"] != "awake" || body["tags"] != nil {
		t.Fatalf("wake_up: %d %v", code, body)
	}
	select {
	case s := <-got:
		if s != want {
			t.Errorf("after the wake: %q, before the sleep: %q", s, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the request held during the sleep never finished")
	}

	// Idle: two seconds without requests put the engine to sleep; a
	// tokenization wakes it, as llama-server's tasks do.
	props := func() bool {
		_, body := getJSON(t, base+"/props")
		return body["is_sleeping"] == true
	}
	for deadline := time.Now().Add(10 * time.Second); !props(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not fall asleep idle:\n%s", eng.out.String())
		}
	}
	if code, _ := postJSON(t, base+"/tokenize", map[string]any{"prompt": "Hello"}, nil); code != http.StatusOK {
		t.Fatalf("tokenize: %d", code)
	}
	if props() {
		t.Error("/props says is_sleeping after a /tokenize")
	}
	if s := complete(); s != want {
		t.Errorf("after the idle sleep: %q, want %q", s, want)
	}
}

// vmRSS is process pid's resident set, bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// waitMetric waits (5 s at most) for /metrics to contain s: engine state
// reaches the frontend with the engine's reports.
func waitMetric(t *testing.T, base, s string) {
	t.Helper()
	var text string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if text = string(raw); strings.Contains(text, s) {
			return
		}
	}
	t.Errorf("/metrics never had %q", s)
}
