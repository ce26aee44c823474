package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandem-llm/tandem/wire"
)

// engineCollector exports each engine's latest scheduler stats (from its
// heartbeats and outputs) and its READY, read at scrape time.
type engineCollector struct{ m *Metrics }

var (
	engineLabels = []string{"model_name", "engine"}

	descRunning  = prometheus.NewDesc("vllm:num_requests_running", "Number of requests in model execution batches.", engineLabels, nil)
	descWaiting  = prometheus.NewDesc("vllm:num_requests_waiting", "Number of requests waiting to be processed.", engineLabels, nil)
	descByReason = prometheus.NewDesc("vllm:num_requests_waiting_by_reason",
		"Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints. Sum of all reasons equals vllm:num_requests_waiting.",
		append(engineLabels, "reason"), nil)
	descSleep = prometheus.NewDesc("vllm:engine_sleep_state",
		"Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
		append(engineLabels, "sleep_state"), nil)
	descKVUsage  = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", engineLabels, nil)
	descQueries  = prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", engineLabels, nil)
	descHits     = prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", engineLabels, nil)
	descBySource = prometheus.NewDesc("vllm:prompt_tokens_cached_by_source_total",
		"Prefix-cache hit tokens by the cache tier that supplied them: device (local memory), host, disk, p2p or external_unspecified.",
		append(engineLabels, "source"), nil)
	descPreempt = prometheus.NewDesc("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", engineLabels, nil)
	descCache   = prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
		[]string{"model_name", "engine", "block_size", "num_gpu_blocks", "kv_cache_size_tokens", "cache_dtype"}, nil)

	descSpecDrafts   = prometheus.NewDesc("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", engineLabels, nil)
	descSpecDraftTok = prometheus.NewDesc("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", engineLabels, nil)
	descSpecAccepted = prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", engineLabels, nil)
	descSpecPerPos   = prometheus.NewDesc("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", append(engineLabels, "position"), nil)

	descFree = prometheus.NewDesc("tandem:kv_cache_free_blocks", "Free KV blocks.", engineLabels, nil)
	descUp   = prometheus.NewDesc("tandem:engine_up", "1 when the engine core is ready and its heartbeats flow.", engineLabels, nil)
	descSess = prometheus.NewDesc("tandem:sessions_resident", "Sessions with KV blocks or requests on the engine.", engineLabels, nil)

	// Hidden (hidden.go).
	descGPUUsage   = prometheus.NewDesc("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", engineLabels, nil)
	descGPUQueries = prometheus.NewDesc("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queried tokens.DEPRECATED: Use vllm:prefix_cache_queries instead.", engineLabels, nil)
	descGPUHits    = prometheus.NewDesc("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens.DEPRECATED: Use vllm:prefix_cache_hits instead.", engineLabels, nil)
)

var cacheSources = []string{"device", "host", "p2p", "disk", "external_unspecified"}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descByReason, descSleep, descKVUsage, descQueries, descHits,
		descBySource, descPreempt, descCache, descFree, descUp, descSess, descSpecDrafts, descSpecDraftTok, descSpecAccepted, descSpecPerPos} {
		ch <- d
	}
	if c.m.hidden.gpu {
		ch <- descGPUUsage
		ch <- descGPUQueries
		ch <- descGPUHits
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	model := c.m.cfg.ModelName
	for _, e := range c.m.engines() {
		engine := strconv.Itoa(e.Index)
		st := e.Stats
		up := 0.0
		if e.Ready {
			up = 1
		}
		gauge(descUp, up, model, engine)
		gauge(descRunning, float64(st.NumRunningReqs), model, engine)
		gauge(descWaiting, float64(st.NumWaitingReqs), model, engine)
		// deferred: waiting on its structured-output grammar to compile,
		// which vLLM counts there too (WAITING_FOR_FSM, a blocked status
		// in its skipped-waiting queue); the rest waits for capacity.
		deferred := min(st.NumSkippedWaitingReqs, st.NumWaitingReqs)
		gauge(descByReason, float64(st.NumWaitingReqs-deferred), model, engine, "capacity")
		gauge(descByReason, float64(deferred), model, engine, "deferred")
		for i, v := range st.SleepStates() {
			gauge(descSleep, v, model, engine, wire.SleepStateNames[i])
		}
		gauge(descKVUsage, st.KVCacheUsage, model, engine)
		gauge(descFree, float64(st.NumFreeBlocks), model, engine)
		gauge(descSess, float64(st.NumSessions), model, engine)
		counter(descQueries, float64(st.PrefixCacheQueries), model, engine)
		counter(descHits, float64(st.PrefixCacheHits), model, engine)
		for _, s := range cacheSources {
			v := 0.0
			if s == "device" {
				v = float64(st.PrefixCacheHits)
			}
			counter(descBySource, v, model, engine, s)
		}
		counter(descPreempt, float64(st.NumPreemptions), model, engine)
		if sd := st.SpecDecoding; sd != nil { // as vLLM: only from an engine that speculates
			counter(descSpecDrafts, float64(sd.NumDrafts), model, engine)
			counter(descSpecDraftTok, float64(sd.NumDraftTokens), model, engine)
			counter(descSpecAccepted, float64(sd.NumAcceptedTokens), model, engine)
			for pos, v := range sd.NumAcceptedTokensPerPos {
				counter(descSpecPerPos, float64(v), model, engine, strconv.Itoa(pos))
			}
		}
		if in := e.Info; in.BlockSize > 0 {
			gauge(descCache, 1, model, engine, strconv.Itoa(in.BlockSize), strconv.Itoa(in.NumBlocks),
				strconv.Itoa(in.BlockSize*in.NumBlocks), "auto")
		}
		if c.m.hidden.gpu {
			gauge(descGPUUsage, st.KVCacheUsage, model, engine)
			counter(descGPUQueries, float64(st.PrefixCacheQueries), model, engine)
			counter(descGPUHits, float64(st.PrefixCacheHits), model, engine)
		}
	}
}
