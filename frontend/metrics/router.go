package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routerCollector exports the per-engine gauges production-stack's router
// (vllm_router, services/metrics_service) exports and its Grafana
// dashboard reads: a Tandem frontend is the router in front of its
// engines. Labelled server, the engine's endpoint, as the router labels
// them with each backend's URL.
type routerCollector struct{ m *Metrics }

var (
	descHealthy = prometheus.NewDesc("vllm:healthy_pods_total", "Number of healthy vLLM pods", []string{"server"}, nil)
	descQPS     = prometheus.NewDesc("vllm:current_qps", "Current Queries Per Second", []string{"server"}, nil)
	descHitRate = prometheus.NewDesc("vllm:gpu_prefix_cache_hit_rate", "GPU Prefix Cache Hit Rate", []string{"server"}, nil)
	descSwapped = prometheus.NewDesc("vllm:num_requests_swapped", "Number of swapped requests", []string{"server"}, nil)
)

func (c *routerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHealthy, descHitRate, descSwapped} {
		ch <- d
	}
}

func (c *routerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.m.engines() {
		healthy, rate := 0.0, 0.0
		if e.Ready {
			healthy = 1
		}
		if q := e.Stats.PrefixCacheQueries; q > 0 {
			rate = float64(e.Stats.PrefixCacheHits) / float64(q)
		}
		ch <- prometheus.MustNewConstMetric(descHealthy, prometheus.GaugeValue, healthy, e.Endpoint)
		ch <- prometheus.MustNewConstMetric(descHitRate, prometheus.GaugeValue, rate, e.Endpoint)
		// Tandem never swaps a request out to CPU memory (nor does vLLM v1):
		// a preempted request is recomputed.
		ch <- prometheus.MustNewConstMetric(descSwapped, prometheus.GaugeValue, 0, e.Endpoint)
	}
}

// qpsCollector exports vllm:current_qps: the requests this frontend
// sent each engine, so it is summed across the frontends of one serve.
type qpsCollector struct{ m *Metrics }

func (c *qpsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descQPS }

func (c *qpsCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, e := range c.m.engines() {
		ch <- prometheus.MustNewConstMetric(descQPS, prometheus.GaugeValue, c.m.qps.rate(e.Index, now), e.Endpoint)
	}
}

// qpsWindowSeconds is the window vllm:current_qps averages over, as the
// router's --request-stats-window.
const qpsWindowSeconds = 60

// qpsWindow counts requests per engine in one-second slots of a sliding
// window.
type qpsWindow struct {
	mu     sync.Mutex // mu guards the fields below
	size   int
	counts map[int][]int   // engine → count per slot, slot = unix second mod size
	stamps map[int][]int64 // engine → the unix second each slot counts
}

func newQPSWindow(seconds int) *qpsWindow {
	return &qpsWindow{size: seconds, counts: map[int][]int{}, stamps: map[int][]int64{}}
}

func (w *qpsWindow) add(engine int, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.counts[engine] == nil {
		w.counts[engine], w.stamps[engine] = make([]int, w.size), make([]int64, w.size)
	}
	sec := t.Unix()
	i := int(sec % int64(w.size))
	if w.stamps[engine][i] != sec {
		w.stamps[engine][i], w.counts[engine][i] = sec, 0
	}
	w.counts[engine][i]++
}

// rate is engine's requests per second over the window ending at t.
func (w *qpsWindow) rate(engine int, t time.Time) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, sec := 0, t.Unix()
	for i, s := range w.stamps[engine] {
		if sec-s < int64(w.size) {
			n += w.counts[engine][i]
		}
	}
	return float64(n) / float64(w.size)
}
