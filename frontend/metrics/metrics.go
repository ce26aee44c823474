package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/tandem-llm/tandem/frontend/engineclient"
)

// Config is what the registry is built from.
type Config struct {
	ModelName string // the model_name label
	// MaxModelLen caps the token-count histograms' buckets, as vLLM's
	// max_model_len does; 0 = 131072.
	MaxModelLen int
	// ShowHiddenMetricsForVersion brings back the deprecated names vLLM
	// hid and later removed (vLLM's --show-hidden-metrics-for-version):
	// each name vLLM could still export in that version ("0.11"); ""
	// shows none. Validate it with CheckHiddenVersion.
	ShowHiddenMetricsForVersion string
	// Engines is read at scrape time: each engine's latest scheduler
	// stats and READY.
	Engines func() []engineclient.EngineState
	// Peers are the other frontends of one `tandem serve
	// --api-server-count M` (their OwnHandler, on a Unix socket each):
	// Handler adds their own series to this frontend's, as vLLM's API
	// servers share theirs (Prometheus multiprocess mode), so a scrape of
	// the shared port counts every frontend's requests once, whichever
	// frontend answers it (peers.go).
	Peers []string
	// NoEngineSeries leaves out the series each engine owns (engines.go:
	// its scheduler stats and cache config, the same on every frontend),
	// for frontends scaled out as separate scrape targets while each
	// engine exports its own (enginecore/metrics): otherwise every
	// frontend repeats every engine's numbers and a sum over the targets
	// counts each engine once per frontend. Request series, HTTP series
	// and production-stack's router series stay: they are this frontend's.
	NoEngineSeries bool
	// LoRA exports vllm:lora_requests_info (the server serves LoRA
	// adapters); MaxLoRA is its max_lora label, the adapters an engine
	// keeps loaded.
	LoRA    bool
	MaxLoRA int
}

// Metrics holds the frontend's collectors. Every vllm: series carries
// model_name and engine (the serving engine's index), as vLLM's do.
type Metrics struct {
	// own holds what this frontend observed (requests, HTTP, sessions,
	// routing): summed across the frontends of one serve. shared holds
	// what every frontend sees alike (the engines' stats, the process):
	// exported once, from the frontend that answers.
	own, shared *prometheus.Registry
	peers       []prometheus.Gatherer
	cfg         Config
	hidden      hiddenSet

	// Request series, observed by this frontend, by engine.
	ttft, itl, tpot, e2e                 *prometheus.HistogramVec // seconds
	queue, inference, prefill, decode    *prometheus.HistogramVec // seconds, on the engine's clock
	promptLen, genLen, maxGen, maxTokens *prometheus.HistogramVec // tokens
	prefillKV                            *prometheus.HistogramVec // prompt tokens computed (not cached)
	paramsN, numPreempt, iterTokens      *prometheus.HistogramVec
	promptToks, genToks, cachedToks      *prometheus.CounterVec // tokens
	promptBySource, success              *prometheus.CounterVec
	admission                            *prometheus.CounterVec   // by reason, no engine (vLLM's)
	oldTPOT                              *prometheus.HistogramVec // hidden vllm:time_per_output_token_seconds; nil unless shown
	sessionReq, routing                  *prometheus.CounterVec
	sessionHit, sessionQry               prometheus.Counter
	http                                 *httpMetrics
	qps                                  *qpsWindow    // requests routed per engine, for vllm:current_qps
	touched                              sync.Map      // engine label → struct{}: its series exist
	llama                                llamaStats    // llama-server's llamacpp: series (llamacpp.go)
	sleep                                *sleepMetrics // vLLM's sleep-mode operations (sleep.go)
	lora                                 *loraInfo     // vllm:lora_requests_info (lora.go); nil without adapters
}

// processStart is this process's start, Unix seconds (llama-server's
// Process-Start-Time-Unix header on /metrics).
var processStart = strconv.FormatInt(time.Now().Unix(), 10)

// Label values vLLM creates up front for every engine, so a counter's
// first increment is a visible change.
var (
	finishReasons = []string{"stop", "length", "abort", "error", "repetition"}
	promptSources = []string{"local_compute", "local_cache_hit", "external_kv_transfer"}
)

// New registers every metric.
func New(cfg Config) *Metrics {
	reg, shared := prometheus.NewRegistry(), prometheus.NewRegistry()
	shared.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	model := prometheus.Labels{"model_name": cfg.ModelName}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: model}, []string{"engine"})
		reg.MustRegister(h)
		return h
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: model}, labels)
		reg.MustRegister(c)
		return c
	}
	tokens := requestTokensBuckets(cfg.MaxModelLen)
	m := &Metrics{
		own:    reg,
		shared: shared,
		peers:  peerGatherers(cfg.Peers),
		cfg:    cfg,
		hidden: hiddenFor(cfg.ShowHiddenMetricsForVersion),

		ttft:       hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:        hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		tpot:       hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets),
		e2e:        hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets),
		queue:      hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets),
		inference:  hist("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestLatencyBuckets),
		prefill:    hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets),
		decode:     hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets),
		promptLen:  hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokens),
		genLen:     hist("vllm:request_generation_tokens", "Number of generation tokens processed.", tokens),
		maxGen:     hist("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", tokens),
		maxTokens:  hist("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", tokens),
		prefillKV:  hist("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", tokens),
		paramsN:    hist("vllm:request_params_n", "Histogram of the n request parameter.", paramsNBuckets),
		numPreempt: hist("vllm:request_num_preemptions", "Histogram of the number of times a request was preempted.", numPreemptionsBuckets),
		iterTokens: hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokensBuckets),

		promptToks:     counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", "engine"),
		genToks:        counter("vllm:generation_tokens_total", "Number of generation tokens processed.", "engine"),
		cachedToks:     counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", "engine"),
		promptBySource: counter("vllm:prompt_tokens_by_source_total", "Number of prompt tokens by source.", "engine", "source"),
		success:        counter("vllm:request_success_total", "Count of successfully processed requests.", "engine", "finished_reason"),
		admission:      counter("vllm:admission_rejections_total", "Number of admission attempts rejected by a queue limit, by reason.", "reason"),

		sessionReq: counter("tandem:session_requests_total", "Requests by where their session_id came from (none, body, header, vllm_xargs).", "source"),
		routing:    counter("tandem:routing_decisions_total", "Engine choices by routing policy and outcome.", "policy", "outcome"),
		qps:        newQPSWindow(qpsWindowSeconds),
	}
	m.sessionHit = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem:session_prefix_cache_hits_total",
		Help: "Prompt tokens of requests with a session_id served from the prefix cache.", ConstLabels: model})
	m.sessionQry = prometheus.NewCounter(prometheus.CounterOpts{Name: "tandem:session_prefix_cache_queries_total",
		Help: "Prompt tokens of requests with a session_id.", ConstLabels: model})
	reg.MustRegister(m.sessionHit, m.sessionQry)
	m.admission.WithLabelValues("max_num_queued_reqs")
	if m.hidden.tpot {
		m.oldTPOT = hist("vllm:time_per_output_token_seconds",
			"Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.", itlBuckets)
	}
	m.http = newHTTPMetrics(reg)
	m.sleep = newSleepMetrics(reg)
	if cfg.LoRA {
		m.lora = newLoRAInfo(cfg.MaxLoRA)
		reg.MustRegister(m.lora)
	}
	reg.MustRegister(&qpsCollector{m: m}, &llamaCollector{m: m})
	shared.MustRegister(&llamaCollector{m: m, shared: true})
	shared.MustRegister(&routerCollector{m: m})
	if !cfg.NoEngineSeries {
		shared.MustRegister(&engineCollector{m: m})
	}
	return m
}

// Handler serves the Prometheus text exposition: this frontend's series
// plus its peers' own (Config.Peers), summed.
func (m *Metrics) Handler() http.Handler {
	return m.touching(promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{}))
}

// Gatherer gathers what Handler serves: this frontend's series, the
// engines' and its peers' (the web console reads it, frontend/webui).
func (m *Metrics) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		own, err := m.own.Gather()
		if err != nil {
			return nil, err
		}
		shared, err := m.shared.Gather()
		if err != nil {
			return nil, err
		}
		return mergeFamilies(append(own, shared...), gatherPeers(m.peers)...), nil
	})
}

// OwnHandler serves only what this frontend observed, for its peers'
// Handler to add up.
func (m *Metrics) OwnHandler() http.Handler {
	return m.touching(promhttp.HandlerFor(m.own, promhttp.HandlerOpts{}))
}

func (m *Metrics) touching(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Process-Start-Time-Unix", processStart) // llama-server's header
		for _, e := range m.engines() {
			m.touch(e.Index)
		}
		h.ServeHTTP(w, r)
	})
}

func (m *Metrics) engines() []engineclient.EngineState {
	if m.cfg.Engines == nil {
		return nil
	}
	return m.cfg.Engines()
}

// touch creates engine's request series at zero, as vLLM creates every
// engine's at start: a counter's first increment is then a change a
// rate() sees.
func (m *Metrics) touch(engine int) {
	l := engineLabel(engine)
	if _, done := m.touched.LoadOrStore(l, struct{}{}); done {
		return
	}
	for _, h := range []*prometheus.HistogramVec{m.ttft, m.itl, m.tpot, m.e2e, m.queue, m.inference, m.prefill, m.decode,
		m.promptLen, m.genLen, m.maxGen, m.maxTokens, m.prefillKV, m.paramsN, m.numPreempt, m.iterTokens} {
		h.WithLabelValues(l)
	}
	if m.oldTPOT != nil {
		m.oldTPOT.WithLabelValues(l)
	}
	for _, c := range []*prometheus.CounterVec{m.promptToks, m.genToks, m.cachedToks} {
		c.WithLabelValues(l)
	}
	for _, s := range promptSources {
		m.promptBySource.WithLabelValues(l, s)
	}
	for _, r := range finishReasons {
		m.success.WithLabelValues(l, r)
	}
}

// engineLabel is the engine label of engine index i; "" for none (a
// beam search's results come from many engines).
func engineLabel(i int) string {
	if i < 0 {
		return ""
	}
	return strconv.Itoa(i)
}
