package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tandem-llm/tandem/wire"
)

// Config is what the registry is built from.
type Config struct {
	ModelName string // the model_name label
	Engine    int    // the engine label: the engine's data-parallel rank
	BlockSize int    // tokens per KV block, for vllm:cache_config_info
	NumBlocks int    // KV blocks in the pool, for vllm:cache_config_info
	// GPUNames also exports vLLM's deprecated gpu_ cache names
	// (vllm:gpu_cache_usage_perc, vllm:gpu_prefix_cache_queries_total,
	// vllm:gpu_prefix_cache_hits_total), as the frontends do for a
	// --show-hidden-metrics-for-version of 0.11 or older.
	GPUNames bool
	// Stats is read at scrape time: the engine's latest load.
	Stats func() wire.SchedulerStats
}

// Metrics is an engine's registry.
type Metrics struct {
	reg *prometheus.Registry
}

// New registers the engine's series and the process collectors.
func New(cfg Config) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{cfg: cfg, engine: strconv.Itoa(cfg.Engine)})
	return &Metrics{reg: reg}
}

// Handler serves the Prometheus text exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Gatherer is the registry, for tests and for adding to another.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }
