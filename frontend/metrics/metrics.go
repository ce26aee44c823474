package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tandem-llm/tandem/frontend/engineclient"
)

// Metrics holds the frontend's collectors.
type Metrics struct {
	reg *prometheus.Registry

	ttft       prometheus.Histogram   // seconds from arrival to the first token
	itl        prometheus.Histogram   // seconds between tokens of one request
	e2e        prometheus.Histogram   // seconds from arrival to the finish
	promptLen  prometheus.Histogram   // tokens per request
	genLen     prometheus.Histogram   // tokens per request
	promptToks prometheus.Counter     // tokens, cumulative
	genToks    prometheus.Counter     // tokens, cumulative
	success    *prometheus.CounterVec // finished requests by finished_reason
	sessionReq *prometheus.CounterVec // requests by session_id source
	sessionHit prometheus.Counter     // prompt tokens of session requests served from cache
	sessionQry prometheus.Counter     // prompt tokens of session requests
	routing    *prometheus.CounterVec // routing decisions by policy and outcome
}

var (
	latencyBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	tokenBuckets   = prometheus.ExponentialBuckets(1, 2, 18)
)

// New registers every metric for model. engines is read at scrape time.
func New(model string, engines func() []engineclient.EngineState) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	labels := prometheus.Labels{"model_name": model}
	f := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(h)
		return h
	}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(x)
		return x
	}
	cv := func(name, help string, l ...string) *prometheus.CounterVec {
		x := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, l)
		reg.MustRegister(x)
		return x
	}
	m := &Metrics{
		reg:        reg,
		ttft:       f("vllm:time_to_first_token_seconds", "Time to first token, seconds.", latencyBuckets),
		itl:        f("vllm:inter_token_latency_seconds", "Time between consecutive tokens of a request, seconds.", latencyBuckets),
		e2e:        f("vllm:e2e_request_latency_seconds", "End-to-end request latency, seconds.", latencyBuckets),
		promptLen:  f("vllm:request_prompt_tokens", "Prompt tokens per request.", tokenBuckets),
		genLen:     f("vllm:request_generation_tokens", "Generated tokens per request.", tokenBuckets),
		promptToks: c("vllm:prompt_tokens_total", "Prompt tokens processed."),
		genToks:    c("vllm:generation_tokens_total", "Tokens generated."),
		success:    cv("vllm:request_success_total", "Finished requests by finish reason.", "finished_reason"),
		sessionReq: cv("tandem:session_requests_total", "Requests by where their session_id came from (none, body, header, vllm_xargs).", "source"),
		sessionHit: c("tandem:session_prefix_cache_hits_total", "Prompt tokens of requests with a session_id served from the prefix cache."),
		sessionQry: c("tandem:session_prefix_cache_queries_total", "Prompt tokens of requests with a session_id."),
		routing:    cv("tandem:routing_decisions_total", "Engine choices by routing policy and outcome.", "policy", "outcome"),
	}
	reg.MustRegister(&engineCollector{model: model, engines: engines})
	return m
}

// Handler serves the Prometheus text exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveFirstToken records a request's time to first token.
func (m *Metrics) ObserveFirstToken(d time.Duration) { m.ttft.Observe(d.Seconds()) }

// ObserveInterToken records the gap between two tokens of a request.
func (m *Metrics) ObserveInterToken(d time.Duration) { m.itl.Observe(d.Seconds()) }

// ObserveFinish records a finished request (one choice).
func (m *Metrics) ObserveFinish(e2e time.Duration, numPrompt, numGenerated int, reason string) {
	m.e2e.Observe(e2e.Seconds())
	m.promptLen.Observe(float64(numPrompt))
	m.genLen.Observe(float64(numGenerated))
	m.promptToks.Add(float64(numPrompt))
	m.genToks.Add(float64(numGenerated))
	m.success.WithLabelValues(reason).Inc()
}

// ObserveSession records a request's session_id source and, for requests
// with a session, its prefix-cache outcome in tokens.
func (m *Metrics) ObserveSession(source string, numPrompt, numCached int) {
	m.sessionReq.WithLabelValues(source).Inc()
	if source != "none" {
		m.sessionQry.Add(float64(numPrompt))
		m.sessionHit.Add(float64(numCached))
	}
}

// ObserveRouting counts one routing decision.
func (m *Metrics) ObserveRouting(policy, outcome string) {
	m.routing.WithLabelValues(policy, outcome).Inc()
}

// engineCollector exports each engine's latest scheduler stats.
type engineCollector struct {
	model   string
	engines func() []engineclient.EngineState
}

var (
	labelNames  = []string{"model_name", "engine"}
	descRunning = prometheus.NewDesc("vllm:num_requests_running", "Requests running on the engine.", labelNames, nil)
	descWaiting = prometheus.NewDesc("vllm:num_requests_waiting", "Requests waiting on the engine.", labelNames, nil)
	descKVUsage = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache usage, 0 to 1.", labelNames, nil)
	descQueries = prometheus.NewDesc("vllm:prefix_cache_queries_total", "Prefix-cache queries, tokens.", labelNames, nil)
	descHits    = prometheus.NewDesc("vllm:prefix_cache_hits_total", "Prefix-cache hits, tokens.", labelNames, nil)
	descPreempt = prometheus.NewDesc("vllm:num_preemptions_total", "Preemptions.", labelNames, nil)
	descFree    = prometheus.NewDesc("tandem:kv_cache_free_blocks", "Free KV blocks.", labelNames, nil)
	descUp      = prometheus.NewDesc("tandem:engine_up", "1 when the engine core is ready and its heartbeats flow.", labelNames, nil)
	descSess    = prometheus.NewDesc("tandem:sessions_resident", "Sessions with KV blocks or requests on the engine.", labelNames, nil)
)

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunning, descWaiting, descKVUsage, descQueries, descHits, descPreempt, descFree, descUp, descSess} {
		ch <- d
	}
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.engines() {
		l := []string{c.model, strconv.Itoa(e.Index)}
		st := e.Stats
		up := 0.0
		if e.Ready {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up, l...)
		ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(st.NumRunningReqs), l...)
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(st.NumWaitingReqs), l...)
		ch <- prometheus.MustNewConstMetric(descKVUsage, prometheus.GaugeValue, st.KVCacheUsage, l...)
		ch <- prometheus.MustNewConstMetric(descFree, prometheus.GaugeValue, float64(st.NumFreeBlocks), l...)
		ch <- prometheus.MustNewConstMetric(descQueries, prometheus.CounterValue, float64(st.PrefixCacheQueries), l...)
		ch <- prometheus.MustNewConstMetric(descHits, prometheus.CounterValue, float64(st.PrefixCacheHits), l...)
		ch <- prometheus.MustNewConstMetric(descPreempt, prometheus.CounterValue, float64(st.NumPreemptions), l...)
		ch <- prometheus.MustNewConstMetric(descSess, prometheus.GaugeValue, float64(st.NumSessions), l...)
	}
}
