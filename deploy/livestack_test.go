package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// liveStack is `tandem serve --model dummy` and a real Prometheus (the
// Debian package's) scraping its /metrics every scrapeInterval, both
// local processes that stop when the test ends.
type liveStack struct {
	tandem string // http://127.0.0.1:port of the frontend
	prom   string // http://127.0.0.1:port of Prometheus
}

const scrapeInterval = time.Second

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProcess runs name with args until the test ends (SIGTERM, then
// SIGKILL after 10 s), its output in logs.
func startProcess(t *testing.T, logs io.Writer, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return cmd
}

// syncBuffer is a bytes.Buffer two processes may write at once.
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

// startLiveStack starts both, with serveArgs added to serve's, and waits
// until the frontend is healthy and Prometheus ready.
func startLiveStack(t *testing.T, serveArgs ...string) (*liveStack, *syncBuffer) {
	t.Helper()
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus; scripts/setup.sh installs it)")
	}
	bin, err := (&images{t: t}).tandemBinary()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	tandemPort, promPort := freeTCPPort(t), freeTCPPort(t)
	args := append([]string{"serve", "--model", "dummy", "--port", strconv.Itoa(tandemPort), "--run-dir", t.TempDir(),
		"--max-model-len", "512", "--kv-cache-memory", "32Mi", "--log-level", "warn"}, serveArgs...)
	startProcess(t, logs, bin, args...)

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  evaluation_interval: %s\nscrape_configs:\n  - job_name: tandem\n    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n",
		scrapeInterval, scrapeInterval, tandemPort)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, logs, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort), "--log.level=warn")
	s := &liveStack{tandem: fmt.Sprintf("http://127.0.0.1:%d", tandemPort), prom: fmt.Sprintf("http://127.0.0.1:%d", promPort)}
	for _, w := range []struct{ what, url string }{{"tandem's /health", s.tandem + "/health"}, {"Prometheus", s.prom + "/-/ready"}} {
		waitFor(t, w.what, 3*time.Minute, func() error { return nil }, func() error {
			resp, err := http.Get(w.url)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s", resp.Status)
			}
			return nil
		})
	}
	return s, logs
}

// post sends a JSON body and returns the status.
func (s *liveStack) post(path string, body any, header map[string]string) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, s.tandem+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// traffic sends a mix of requests from workers clients for d: chats with
// and without a session (whose repeated prefix hits the cache), n=2,
// streaming, a stop string, completions. It returns the first failure.
func (s *liveStack) traffic(ctx context.Context, workers int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := 0; ctx.Err() == nil; i++ {
				msg := fmt.Sprintf("worker %d asks question %d about the weather", w, i%3)
				body := map[string]any{"model": "dummy", "messages": []map[string]string{{"role": "user", "content": msg}},
					"max_tokens": 4 + i%5, "ignore_eos": true}
				header := map[string]string{}
				path := "/v1/chat/completions"
				switch i % 5 {
				case 1:
					header["X-Session-ID"] = fmt.Sprintf("dash-%d", w)
				case 2:
					body["n"] = 2
				case 3:
					body["stream"] = true
					body["stop"] = []string{"e"}
				case 4:
					path, body = "/v1/completions", map[string]any{"model": "dummy", "prompt": msg, "max_tokens": 6, "ignore_eos": true}
				}
				code, err := s.post(path, body, header)
				if err == nil && code != http.StatusOK {
					err = fmt.Errorf("POST %s: status %d", path, code)
				}
				if err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// promResult is one series of a Prometheus query_range answer.
type promResult struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// queryRange evaluates expr at every step from start to end.
func (s *liveStack) queryRange(expr string, start, end time.Time, step time.Duration) ([]promResult, error) {
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	resp, err := http.Get(s.prom + "/api/v1/query_range?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promResult `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query_range %q: %w", expr, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query_range %q: %s", expr, r.Error)
	}
	return r.Data.Result, nil
}

// labelValues is what Grafana's label_values(label) variable offers.
func (s *liveStack) labelValues(label string) ([]string, error) {
	resp, err := http.Get(s.prom + "/api/v1/label/" + url.PathEscape(label) + "/values")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Data []string `json:"data"`
	}
	return r.Data, json.NewDecoder(resp.Body).Decode(&r)
}

// hasData reports whether a result has a value that is a number, which
// is what a Grafana panel draws (NaN, as histogram_quantile gives over no
// observations, draws nothing).
func hasData(res []promResult) bool {
	for _, r := range res {
		for _, v := range r.Values {
			s, _ := v[1].(string)
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
				return true
			}
		}
	}
	return false
}
