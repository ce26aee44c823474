package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// browserTools finds node, Debian's chromium and the web console's
// playwright-core, or skips saying which is missing (scripts/setup.sh
// installs chromium and node, scripts/webui.sh playwright-core).
func browserTools(t *testing.T) (node, chromium, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs it)")
	}
	chromium, err = exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (scripts/setup.sh installs it: apt-get install chromium)")
	}
	dir, err := filepath.Abs("../../frontend/webui")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Skip("frontend/webui/node_modules/playwright-core is missing (scripts/webui.sh installs it)")
	}
	return node, chromium, filepath.Join(dir, "test", "browser.mjs")
}

// runBrowser runs browser.mjs in mode against base, logging its steps;
// on its KILL line it calls kill and tells it to go on. Screenshots go to
// $TANDEM_WEBUI_SCREENSHOTS (docs/images when refreshing them) or a
// temporary directory.
func runBrowser(t *testing.T, mode, base string, kill func()) {
	t.Helper()
	node, chromium, script := browserTools(t)
	shots := os.Getenv("TANDEM_WEBUI_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, mode, base, shots)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		last = line
		if line == "KILL" {
			kill()
			fmt.Fprintln(stdin, "killed")
		}
	}
	if err := cmd.Wait(); err != nil || last != "OK" {
		t.Fatalf("browser test %s: %v (last line %q)", mode, err, last)
	}
}

// TestWebUIBrowser serves the default model on two engines and drives the
// chat page and the cluster view in headless chromium: a streamed answer
// naming Paris with its TTFT and cached tokens, three conversations whose
// sessions stay on their engines, a session ended from the console, the
// 375 px layouts, nothing fetched from elsewhere, and the error shown once
// the server is gone.
func TestWebUIBrowser(t *testing.T) {
	browserTools(t)
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--data-parallel-size", "2", "--max-model-len", "2048", "--kv-cache-memory", "256Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	runBrowser(t, "main", base, func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop within 15 s")
		}
	})
}

// TestWebUIAPIKey: with --api-key the pages load, ask for the key, and
// chat and the feed work once it is given; the feed refuses a request
// without it.
func TestWebUIAPIKey(t *testing.T) {
	browserTools(t)
	port := freePort(t)
	p := startProc(t, "serve", "dummy", "--port", strconv.Itoa(port), "--api-key", "sk-webui", "--max-model-len", "16384", "--kv-cache-memory", "64Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	resp, err := http.Get(base + "/console/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("feed without the key: %d, want 401", resp.StatusCode)
	}
	runBrowser(t, "key", base, func() {})
}

// TestWebUIDisabled: --disable-web-ui serves neither page.
func TestWebUIDisabled(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "serve", "dummy", "--port", strconv.Itoa(port), "--disable-web-ui", "--kv-cache-memory", "64Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	for _, path := range []string{"/", "/console", "/webui/chat.js", "/console/events"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
