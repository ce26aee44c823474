package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestServeMetricsSeveralFrontends: with --api-server-count 2 the
// frontends share the port and a scrape reaches either; every scrape
// counts every request once (the two frontends' own series added up) and
// shows each engine's series once, as one vLLM server with several API
// servers does.
func TestServeMetricsSeveralFrontends(t *testing.T) {
	port, dir := freePort(t), t.TempDir()
	p := startProc(t, "serve", "--model", "dummy", "--port", fmt.Sprint(port), "--data-parallel-size", "2", "--api-server-count", "2",
		"--threads", "2", "--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--run-dir", dir)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	// /health answered by one frontend; the other may still be waiting
	// for its engine cores (503, Retry-After) on the shared port. Each
	// serves its own socket only once ready: wait for both.
	own := make([]*http.Client, 2)
	for i := range own {
		sock := filepath.Join(dir, fmt.Sprintf("metrics-%d.sock", i))
		own[i] = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := own[i].Get("http://frontend/metrics")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("frontend %d never served its own metrics socket: %v", i, err)
			}
		}
	}

	// Fresh connections, so SO_REUSEPORT spreads requests and scrapes
	// over both frontends.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	const numRequests = 12
	for i := range numRequests {
		body := map[string]any{"model": "dummy", "prompt": fmt.Sprint("count me ", i), "max_tokens": 2}
		if code, resp := postJSON(t, base+"/v1/completions", body, map[string]string{"Connection": "close"}); code != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, code, resp)
		}
	}
	// Each frontend's own share, from the socket it serves it on.
	var shares []float64
	for _, c := range own {
		shares = append(shares, successes(scrapeWith(t, c, "http://frontend")))
	}
	if shares[0]+shares[1] != numRequests {
		t.Fatalf("the frontends' own counts %v do not add up to %d requests", shares, numRequests)
	}
	t.Logf("finished requests by frontend: %v", shares)
	if shares[0] == 0 || shares[1] == 0 {
		t.Logf("SO_REUSEPORT sent every request to one frontend (%v): the sum is not tested", shares)
	}
	for range 10 {
		fams := scrapeWith(t, client, base)
		running := map[string]int{}
		for _, m := range fams["vllm:num_requests_running"].GetMetric() {
			running[labelOf(m, "engine")]++
		}
		if got := successes(fams); got != numRequests {
			t.Errorf("a scrape counts %v finished requests, want %d (the frontends' own: %v)", got, numRequests, shares)
		}
		if len(running) != 2 || running["0"] != 1 || running["1"] != 1 {
			t.Errorf("vllm:num_requests_running series by engine: %v, want one each of 0 and 1", running)
		}
		if _, ok := fams["go_goroutines"]; !ok {
			t.Error("no go_goroutines: the answering frontend's process series are missing")
		}
	}
}

func successes(fams map[string]*dto.MetricFamily) float64 {
	n := 0.0
	for _, m := range fams["vllm:request_success_total"].GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n
}

func scrapeWith(t *testing.T, c *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
