package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandem-llm/tandem/wire"
)

// The same names, help texts, types and labels as frontend/metrics'
// engines.go (cmd/tandem's TestEngineMetricsEndpoint compares them).
var (
	labels = []string{"model_name", "engine"}

	descRunning  = prometheus.NewDesc("vllm:num_requests_running", "Number of requests in model execution batches.", labels, nil)
	descWaiting  = prometheus.NewDesc("vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels, nil)
	descByReason = prometheus.NewDesc("vllm:num_requests_waiting_by_reason",
		"Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints. Sum of all reasons equals vllm:num_requests_waiting.",
		append(labels, "reason"), nil)
	descSleep = prometheus.NewDesc("vllm:engine_sleep_state",
		"Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
		append(labels, "sleep_state"), nil)
	descKVUsage  = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels, nil)
	descQueries  = prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", labels, nil)
	descHits     = prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", labels, nil)
	descBySource = prometheus.NewDesc("vllm:prompt_tokens_cached_by_source_total",
		"Prefix-cache hit tokens by the cache tier that supplied them: device (local memory), host, disk, p2p or external_unspecified.",
		append(labels, "source"), nil)
	descPreempt = prometheus.NewDesc("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", labels, nil)
	descCache   = prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
		[]string{"model_name", "engine", "block_size", "num_gpu_blocks", "kv_cache_size_tokens", "cache_dtype"}, nil)

	descFree = prometheus.NewDesc("tandem:kv_cache_free_blocks", "Free KV blocks.", labels, nil)
	descUp   = prometheus.NewDesc("tandem:engine_up", "1 when the engine core is ready and its heartbeats flow.", labels, nil)
	descSess = prometheus.NewDesc("tandem:sessions_resident", "Sessions with KV blocks or requests on the engine.", labels, nil)

	descGPUUsage   = prometheus.NewDesc("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", labels, nil)
	descGPUQueries = prometheus.NewDesc("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queried tokens.DEPRECATED: Use vllm:prefix_cache_queries instead.", labels, nil)
	descGPUHits    = prometheus.NewDesc("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens.DEPRECATED: Use vllm:prefix_cache_hits instead.", labels, nil)
)

var cacheSources = []string{"device", "host", "p2p", "disk", "external_unspecified"}

// collector reads the engine's latest load at scrape time.
type collector struct {
	cfg    Config
	engine string
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descByReason, descSleep, descKVUsage, descQueries, descHits,
		descBySource, descPreempt, descCache, descFree, descUp, descSess} {
		ch <- d
	}
	if c.cfg.GPUNames {
		ch <- descGPUUsage
		ch <- descGPUQueries
		ch <- descGPUHits
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	model, engine := c.cfg.ModelName, c.engine
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{model, engine}, l...)...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{model, engine}, l...)...)
	}
	st := c.cfg.Stats()
	gauge(descUp, 1) // it answers: it is up
	gauge(descRunning, float64(st.NumRunningReqs))
	gauge(descWaiting, float64(st.NumWaitingReqs))
	deferred := min(st.NumSkippedWaitingReqs, st.NumWaitingReqs)
	gauge(descByReason, float64(st.NumWaitingReqs-deferred), "capacity")
	gauge(descByReason, float64(deferred), "deferred")
	for i, v := range st.SleepStates() {
		gauge(descSleep, v, wire.SleepStateNames[i])
	}
	gauge(descKVUsage, st.KVCacheUsage)
	gauge(descFree, float64(st.NumFreeBlocks))
	gauge(descSess, float64(st.NumSessions))
	counter(descQueries, float64(st.PrefixCacheQueries))
	counter(descHits, float64(st.PrefixCacheHits))
	for _, s := range cacheSources {
		v := 0.0
		if s == "device" {
			v = float64(st.PrefixCacheHits)
		}
		counter(descBySource, v, s)
	}
	counter(descPreempt, float64(st.NumPreemptions))
	if c.cfg.BlockSize > 0 {
		gauge(descCache, 1, strconv.Itoa(c.cfg.BlockSize), strconv.Itoa(c.cfg.NumBlocks),
			strconv.Itoa(c.cfg.BlockSize*c.cfg.NumBlocks), "auto")
	}
	if c.cfg.GPUNames {
		gauge(descGPUUsage, st.KVCacheUsage)
		counter(descGPUQueries, float64(st.PrefixCacheQueries))
		counter(descGPUHits, float64(st.PrefixCacheHits))
	}
}
