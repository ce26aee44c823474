package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the tandem binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tandem-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "tandem")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tandem:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a tandem process started by a test.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startProc runs `tandem args…` until the test ends.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	return startProcIn(t, "", args...)
}

// startProcIn runs `tandem args…` in the working directory dir ("" = the
// test's) until the test ends.
func startProcIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binPath, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start tandem %v: %v", args, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of tandem %s:\n%s", args[0], p.out.String())
		}
	})
	return p
}

// signal signals the process group (the process and its children).
func (p *proc) signal(sig syscall.Signal) { _ = syscall.Kill(-p.cmd.Process.Pid, sig) }

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHealthy polls /health until 200.
func waitHealthy(t *testing.T, base string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("tandem exited early:\n%s", p.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("server at %s never became healthy:\n%s", base, p.out.String())
}

// splitStack is an engine and a frontend started as separate processes.
type splitStack struct {
	base     string
	engine   *proc
	frontend *proc
	endpoint string
}

// startSplit runs `tandem engine` and `tandem frontend` with short
// heartbeats so failures are detected within a second or two.
func startSplit(t *testing.T, engineArgs ...string) *splitStack {
	t.Helper()
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine-0.sock")
	port := freePort(t)
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	eng := startProc(t, append(append([]string{"engine", "--model", "dummy", "--listen", ep, "--max-model-len", "1024", "--kv-cache-memory", "64Mi", "--threads", "1"}, hb...), engineArgs...)...)
	fe := startProc(t, append([]string{"frontend", "--engines", ep, "--port", fmt.Sprint(port)}, hb...)...)
	s := &splitStack{base: fmt.Sprintf("http://127.0.0.1:%d", port), engine: eng, frontend: fe, endpoint: ep}
	waitHealthy(t, s.base, fe)
	return s
}

// postJSON sends body as JSON with headers and decodes the JSON answer.
func postJSON(t *testing.T, url string, body any, headers map[string]string) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST %s: status %d, body %q is not JSON", url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("GET %s: %q is not JSON", url, raw)
		}
	}
	return resp.StatusCode, out
}

// sseEvents reads an SSE body into its data payloads (without "data: ").
func sseEvents(r io.Reader) ([]string, error) {
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			events = append(events, data)
		}
	}
	return events, sc.Err()
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
