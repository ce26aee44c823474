package deploy

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
)

// engineSeries are series each engine exports on its own /metrics and
// the frontends leave out (--disable-engine-metrics).
var engineSeries = []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
	"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:cache_config_info", "tandem:engine_up"}

func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return fams
}

// checkEngineMetricsServed scrapes what the stack's Prometheus would:
// each engine pod's own /metrics (its container port metrics, if it has
// one) and each frontend pod's. Each engine exports its own series, once,
// labelled with its own rank; frontends export none of them, so a sum
// over every target by engine is each engine's number; the frontends'
// request counters add up to the requests sent.
func checkEngineMetricsServed(t *testing.T, c *cluster, sts *appsv1.StatefulSet, dep *appsv1.Deployment, fePort int32, requests int) {
	t.Helper()
	var port int32
	for _, p := range container(t, &sts.Spec.Template.Spec, "engine").Ports {
		if p.Name == "metrics" {
			port = p.ContainerPort
		}
	}
	if port == 0 {
		t.Log("the engines have no metrics port: the frontends export their series")
		return
	}
	ranks := map[string]string{} // engine label → pod
	queries := 0.0
	for _, p := range c.podsOf("StatefulSet/" + sts.Name) {
		fams := scrapeMetrics(t, fmt.Sprintf("http://%s:%d/metrics", p.host.ip, port))
		for _, name := range engineSeries {
			ms := fams[name].GetMetric()
			if len(ms) == 0 {
				t.Errorf("engine pod %s exports no %s", p.name, name)
			}
			for _, m := range ms {
				rank := metricLabel(m, "engine")
				if other, dup := ranks[rank]; dup && other != p.name {
					t.Errorf("engine pods %s and %s both export %s{engine=%q}", other, p.name, name, rank)
				}
				ranks[rank] = p.name
				if name == "vllm:prefix_cache_queries_total" {
					queries += m.GetCounter().GetValue()
				}
			}
		}
	}
	if queries == 0 {
		t.Errorf("the engines' prefix cache queries add up to 0 after %d requests", requests)
	}
	finished := 0.0
	for _, p := range c.podsOf("Deployment/" + dep.Name) {
		fams := scrapeMetrics(t, fmt.Sprintf("http://%s:%d/metrics", p.host.ip, fePort))
		for _, name := range engineSeries {
			if fams[name] != nil {
				t.Errorf("frontend pod %s exports %s: every frontend pod would repeat each engine's numbers", p.name, name)
			}
		}
		for _, m := range fams["vllm:request_success_total"].GetMetric() {
			finished += m.GetCounter().GetValue()
		}
	}
	if finished != float64(requests) {
		t.Errorf("vllm:request_success_total over the frontend pods: %v, want %d", finished, requests)
	}
	t.Logf("engines' own /metrics on port %d: %d engines, %v prefix cache queries; %v requests over the frontends", port, len(ranks), queries, finished)
}

func metricLabel(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestScaledOutPrometheusCountsEachEngineOnce is the chart's layout as
// local processes with a real Prometheus (Debian's, as the dashboard
// test uses): two `tandem engine`s with --metrics-address and two
// `tandem frontend`s with --disable-engine-metrics, every one a scrape
// target. After traffic through both frontends, Prometheus' sum by
// (engine) of each engine series is that engine's own number, every
// engine has one series, and the request counters summed over the
// frontends count every request once.
func TestScaledOutPrometheusCountsEachEngineOnce(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus; scripts/setup.sh installs it)")
	}
	bin, err := (&images{t: t}).tandemBinary()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output:\n%s", logs.String())
		}
	})
	dir := t.TempDir()
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms", "--log-level", "warn"}
	var eps, engineTargets, frontendTargets []string
	for i := range 2 {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		startProcess(t, logs, bin, append([]string{"engine", "--model", "dummy", "--listen", ep, "--data-parallel-rank", strconv.Itoa(i),
			"--max-model-len", "512", "--kv-cache-memory", "32Mi", "--threads", "1", "--metrics-address", addr}, hb...)...)
		eps, engineTargets = append(eps, ep), append(engineTargets, addr)
	}
	for range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		_, port, _ := net.SplitHostPort(addr)
		startProcess(t, logs, bin, append([]string{"frontend", "--engines", strings.Join(eps, ","), "--port", port,
			"--routing", "round-robin", "--disable-engine-metrics"}, hb...)...)
		frontendTargets = append(frontendTargets, addr)
	}
	promPort := freeTCPPort(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\nscrape_configs:\n  - job_name: engine\n    static_configs:\n      - targets: [%q, %q]\n"+
		"  - job_name: frontend\n    static_configs:\n      - targets: [%q, %q]\n",
		scrapeInterval, engineTargets[0], engineTargets[1], frontendTargets[0], frontendTargets[1])
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, logs, prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort), "--log.level=warn")
	s := &liveStack{prom: fmt.Sprintf("http://127.0.0.1:%d", promPort)}
	none := func() error { return nil }
	for _, fe := range frontendTargets {
		waitFor(t, "frontend "+fe+" with both engines", 2*time.Minute, none, func() error { return twoReady("http://" + fe) })
	}

	const perFrontend = 6
	for _, fe := range frontendTargets {
		s.tandem = "http://" + fe
		for i := range perFrontend {
			body := map[string]any{"model": "dummy", "prompt": strings.Repeat("every engine counted once. ", 4) + strconv.Itoa(i), "max_tokens": 3}
			if code, err := s.post("/v1/completions", body, nil); err != nil || code != http.StatusOK {
				t.Fatalf("completion %d at %s: %d %v", i, fe, code, err)
			}
		}
	}
	// The engines' own numbers, read directly, then what Prometheus sums.
	own := map[string]float64{}
	for _, addr := range engineTargets {
		for _, m := range scrapeMetrics(t, "http://"+addr+"/metrics")["vllm:prefix_cache_queries_total"].GetMetric() {
			own[metricLabel(m, "engine")] += m.GetCounter().GetValue()
		}
	}
	if len(own) != 2 || own["0"] == 0 || own["1"] == 0 {
		t.Fatalf("the engines' own prefix cache queries %v: want both engines to have served requests", own)
	}
	instant := func(expr string) (map[string]float64, error) {
		now := time.Now()
		res, err := s.queryRange(expr, now, now, time.Second)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, r := range res {
			if len(r.Values) == 0 {
				continue
			}
			v, _ := r.Values[len(r.Values)-1][1].(string)
			out[r.Metric["engine"]], _ = strconv.ParseFloat(v, 64)
		}
		return out, nil
	}
	expect := func(expr string, want map[string]float64) {
		t.Helper()
		waitFor(t, expr, time.Minute, none, func() error {
			got, err := instant(expr)
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("%s = %v, want %v", expr, got, want)
			}
			return nil
		})
	}
	expect("sum by (engine) (vllm:prefix_cache_queries_total)", own)
	for _, name := range engineSeries {
		expect(fmt.Sprintf("count by (engine) (%s)", name), map[string]float64{"0": 1, "1": 1})
	}
	expect(`sum(vllm:request_success_total{job="frontend"})`, map[string]float64{"": 2 * perFrontend})
	expect(`count(vllm:num_requests_running{job="frontend"}) or vector(0)`, map[string]float64{"": 0})
	t.Logf("Prometheus: sum by (engine) of vllm:prefix_cache_queries_total over 4 targets = %v, the engines' own", own)
}

// twoReady: GET /v1/engines at base lists two ready engines.
func twoReady(base string) error {
	resp, err := http.Get(base + "/v1/engines")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Data []struct {
			State string `json:"state"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return err
	}
	ready := 0
	for _, e := range r.Data {
		if e.State == "ready" {
			ready++
		}
	}
	if ready != 2 {
		return fmt.Errorf("%d of %d engines ready", ready, len(r.Data))
	}
	return nil
}
