package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// engineOwned are the series each engine exports on --metrics-address
// and a frontend with --disable-engine-metrics leaves out.
var engineOwned = []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:num_requests_waiting_by_reason",
	"vllm:engine_sleep_state", "vllm:kv_cache_usage_perc", "vllm:cache_config_info", "vllm:prefix_cache_queries_total",
	"vllm:prefix_cache_hits_total", "vllm:prompt_tokens_cached_by_source_total", "vllm:num_preemptions_total",
	"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total",
	"tandem:kv_cache_free_blocks", "tandem:engine_up", "tandem:sessions_resident"}

// metricsEngine starts `tandem engine` rank i with its /metrics on a
// free port; it returns the engine's ROUTER endpoint and metrics URL.
func metricsEngine(t *testing.T, dir string, i int) (endpoint, metricsURL string) {
	t.Helper()
	ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startProc(t, "engine", "--model", "dummy", "--listen", ep, "--data-parallel-rank", strconv.Itoa(i),
		"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--threads", "1", "--metrics-address", addr,
		"--show-hidden-metrics-for-version", "0.11", "--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms")
	return ep, "http://" + addr
}

func metricsFrontend(t *testing.T, engines []string, extra ...string) string {
	t.Helper()
	port := freePort(t)
	fe := startProc(t, append([]string{"frontend", "--engines", strings.Join(engines, ","), "--port", strconv.Itoa(port),
		"--show-hidden-metrics-for-version", "0.11", "--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}, extra...)...)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)
	return base
}

// byEngine sums family name's series (a histogram's count) by their
// engine label and the labels other than model_name.
func byEngine(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		var key []string
		for _, l := range m.GetLabel() {
			if l.GetName() != "model_name" {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
		}
		slices.Sort(key)
		v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		out[strings.Join(key, ",")] += v
	}
	return out
}

// completions sends n completions of prompt (long enough to fill KV
// blocks, so a repeat hits the prefix cache) to base.
func completions(t *testing.T, base, prompt string, n int) {
	t.Helper()
	for i := range n {
		body := map[string]any{"model": "dummy", "prompt": prompt, "max_tokens": 3, "temperature": 0}
		if code, resp := postJSON(t, base+"/v1/completions", body, nil); code != http.StatusOK {
			t.Fatalf("request %d to %s: %d %v", i, base, code, resp)
		}
	}
}

// TestEngineMetricsEndpoint: `tandem engine --metrics-address` serves
// the engine's own series, with the names, help, types and labels a
// frontend exports for it, and after a few requests the values the
// frontend reads from the engine's heartbeats.
func TestEngineMetricsEndpoint(t *testing.T) {
	ep, engineURL := metricsEngine(t, t.TempDir(), 0)
	base := metricsFrontend(t, []string{ep})
	prompt := strings.Repeat("a shared system prompt. ", 8) // 192 bytes: 12 blocks of the byte tokenizer
	completions(t, base, prompt, 4)

	client := &http.Client{Timeout: 10 * time.Second}
	var eng, fe map[string]*dto.MetricFamily
	waitFor(t, "the frontend's engine series to match the engine's", func() bool {
		eng, fe = scrapeWith(t, client, engineURL), scrapeWith(t, client, base)
		for _, name := range engineOwned {
			if fmt.Sprint(byEngine(eng, name)) != fmt.Sprint(byEngine(fe, name)) {
				return false
			}
		}
		return true
	})
	for _, name := range engineOwned {
		e, f := eng[name], fe[name]
		if e == nil || f == nil {
			t.Errorf("%s: engine exports %v, frontend %v", name, e != nil, f != nil)
			continue
		}
		if e.GetHelp() != f.GetHelp() || e.GetType() != f.GetType() {
			t.Errorf("%s: engine's %s %q, frontend's %s %q", name, e.GetType(), e.GetHelp(), f.GetType(), f.GetHelp())
		}
		for _, m := range e.GetMetric() {
			if labelOf(m, "model_name") != "dummy" || labelOf(m, "engine") != "0" {
				t.Errorf("%s: labels %v, want model_name=dummy engine=0", name, m.GetLabel())
			}
		}
	}
	want := map[string]func(float64) bool{
		"vllm:num_requests_running":       func(v float64) bool { return v == 0 },
		"vllm:num_requests_waiting":       func(v float64) bool { return v == 0 },
		"vllm:prefix_cache_queries_total": func(v float64) bool { return v >= 4*float64(len(prompt)) },
		"vllm:prefix_cache_hits_total":    func(v float64) bool { return v >= 3*float64(len(prompt)/16*16-16) },
		"tandem:engine_up":                func(v float64) bool { return v == 1 },
	}
	for name, ok := range want {
		if v := byEngine(eng, name)["engine=0"]; !ok(v) {
			t.Errorf("%s = %v after 4 requests of a %d-byte prompt", name, v, len(prompt))
		}
	}
	if got := byEngine(eng, "vllm:cache_config_info"); len(got) != 1 || !strings.Contains(fmt.Sprint(got), "block_size=16") {
		t.Errorf("vllm:cache_config_info: %v", got)
	}
	for _, name := range []string{"vllm:request_success_total", "http_requests_total", "vllm:time_to_first_token_seconds"} {
		if eng[name] != nil {
			t.Errorf("the engine exports %s, a frontend's series", name)
		}
	}
	if eng["process_cpu_seconds_total"] == nil {
		t.Error("no process_cpu_seconds_total: the engine's process series are missing")
	}
	t.Logf("engine 0: prefix cache queries %v, hits %v", byEngine(eng, "vllm:prefix_cache_queries_total"),
		byEngine(eng, "vllm:prefix_cache_hits_total"))
}

// TestScaledOutFrontendsCountEachEngineOnce: two engines export their
// own metrics and two frontends (separate processes, as separate pods
// are) run with --disable-engine-metrics. Summed over every scrape
// target, as Prometheus' sum by (engine) does, each engine's series is
// that engine's own number, and the request series count every request
// once.
func TestScaledOutFrontendsCountEachEngineOnce(t *testing.T) {
	dir := t.TempDir()
	var eps, engineURLs []string
	for i := range 2 {
		ep, u := metricsEngine(t, dir, i)
		eps, engineURLs = append(eps, ep), append(engineURLs, u)
	}
	var frontends []string
	for range 2 {
		frontends = append(frontends, metricsFrontend(t, eps, "--disable-engine-metrics", "--routing", "round-robin"))
	}
	for _, fe := range frontends {
		waitFor(t, "both engines ready at "+fe, func() bool {
			n := 0
			for _, e := range engines(t, fe) {
				if e.State == "ready" {
					n++
				}
			}
			return n == 2
		})
	}
	const perFrontend = 6
	prompt := strings.Repeat("scaled out frontends share engines. ", 6)
	for _, fe := range frontends {
		completions(t, fe, prompt, perFrontend)
	}

	client := &http.Client{Timeout: 10 * time.Second}
	var targets []map[string]*dto.MetricFamily
	for _, u := range append(slices.Clone(engineURLs), frontends...) {
		targets = append(targets, scrapeWith(t, client, u))
	}
	engineFams, frontendFams := targets[:2], targets[2:]
	for _, name := range engineOwned {
		sum := map[string]float64{}
		for _, fams := range targets {
			for k, v := range byEngine(fams, name) {
				sum[k] += v
			}
		}
		own := map[string]float64{}
		for i, fams := range engineFams {
			for k, v := range byEngine(fams, name) {
				if !strings.Contains(k, "engine="+strconv.Itoa(i)) {
					t.Errorf("engine %d exports %s{%s}", i, name, k)
				}
				own[k] += v
			}
		}
		if len(own) == 0 {
			t.Errorf("no engine exports %s", name)
		}
		if fmt.Sprint(sum) != fmt.Sprint(own) {
			t.Errorf("%s summed over every target %v, the engines' own %v", name, sum, own)
		}
	}
	queries := 0.0
	for _, fams := range engineFams {
		q := byEngine(fams, "vllm:prefix_cache_queries_total")
		for _, v := range q {
			if v == 0 {
				t.Errorf("an engine served no request: round-robin over two frontends: %v", q)
			}
			queries += v
		}
	}
	if min := float64(2 * perFrontend * len(prompt)); queries < min {
		t.Errorf("prefix cache queries %v over the engines, want ≥ %v (%d requests of %d tokens)", queries, min, 2*perFrontend, len(prompt))
	}
	finished := 0.0
	for _, fams := range frontendFams {
		finished += successes(fams)
	}
	if finished != 2*perFrontend {
		t.Errorf("vllm:request_success_total summed over the frontends: %v, want %d", finished, 2*perFrontend)
	}
	for _, fams := range engineFams {
		if successes(fams) != 0 {
			t.Error("an engine exports vllm:request_success_total")
		}
	}
}
