package deploy

import (
	"fmt"
	"net/http"
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
