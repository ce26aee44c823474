package metrics

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// llama-server's own series (llamacpp:*, no labels), beside vLLM's, so
// dashboards and alerts written for llama-server read Tandem too. They
// are derived from what this frontend observes: finished requests' token
// counts and engine times, and the engine steps that carried its
// requests, and the drafts speculative decoding verified for them.

// llamaStats are the running sums behind the llamacpp: series.
type llamaStats struct {
	mu sync.Mutex
	// prompt tokens computed and served from the cache; generated tokens
	promptTokens, cachedTokens, predictedTokens float64
	// engine seconds: scheduled → first token, first → last token
	promptSeconds, predictedSeconds float64
	// engine steps that carried this frontend's requests, the most
	// tokens one computed, and the tokens they computed in all
	decodes, maxTokens, stepTokens float64
	// speculative decoding: drafts verified, their tokens, those kept
	specDrafts, specDraftTokens, specAccepted float64
	// The throughput gauges' bucket, as llama-server's: the same sums
	// since the last scrape, which reports and empties it.
	bucketPrompt, bucketPromptSeconds, bucketPredicted, bucketPredictedSeconds float64
}

// finish adds one finished request.
func (s *llamaStats) finish(f Finished) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cached := float64(min(max(f.NumCached, 0), f.NumPrompt))
	s.promptTokens += float64(f.NumPrompt) - cached
	s.cachedTokens += cached
	s.predictedTokens += float64(f.NumGenerated)
	s.bucketPrompt += float64(f.NumPrompt) - cached
	s.bucketPredicted += float64(f.NumGenerated)
	sd := f.Timing.Spec
	s.specDrafts += float64(sd.NumSteps())
	s.specDraftTokens += float64(sd.NumDraftTokens)
	s.specAccepted += float64(sd.NumAccepted)
	if t := f.Timing; t.Known() {
		s.promptSeconds += max(t.FirstToken-t.Scheduled, 0)
		s.predictedSeconds += max(t.LastToken-t.FirstToken, 0)
		s.bucketPromptSeconds += max(t.FirstToken-t.Scheduled, 0)
		s.bucketPredictedSeconds += max(t.LastToken-t.FirstToken, 0)
	}
}

// iteration adds one engine step of tokens tokens.
func (s *llamaStats) iteration(tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decodes++
	s.stepTokens += float64(tokens)
	s.maxTokens = math.Max(s.maxTokens, float64(tokens))
}

// llamaCollector exports llamaStats under llama-server's names (own:
// this frontend's, summed over the frontends of one serve), or with
// shared the engines' running and waiting requests (each engine's once).
type llamaCollector struct {
	m      *Metrics
	shared bool
}

type llamaDesc struct {
	name, help string
	kind       prometheus.ValueType
}

var llamaDescs = []llamaDesc{
	{"llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", prometheus.CounterValue},
	{"llamacpp:prompt_tokens_cached_total", "Number of prompt tokens served from the prefix cache.", prometheus.CounterValue},
	{"llamacpp:prompt_seconds_total", "Prompt process time.", prometheus.CounterValue},
	{"llamacpp:tokens_predicted_total", "Number of generation tokens processed.", prometheus.CounterValue},
	{"llamacpp:tokens_predicted_seconds_total", "Predict process time.", prometheus.CounterValue},
	{"llamacpp:n_decode_total", "Total number of engine steps that carried this server's requests.", prometheus.CounterValue},
	{"llamacpp:n_tokens_max", "Largest number of tokens one engine step computed.", prometheus.CounterValue},
	{"llamacpp:spec_decode_num_draft_tokens_total", "Number of speculative decoding draft tokens.", prometheus.CounterValue},
	{"llamacpp:spec_decode_num_accepted_tokens_total", "Number of speculative decoding draft tokens accepted.", prometheus.CounterValue},
	{"llamacpp:spec_decode_num_drafts_total", "Number of speculative decoding drafts verified.", prometheus.CounterValue},
	{"llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", prometheus.GaugeValue},
	{"llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", prometheus.GaugeValue},
	{"llamacpp:requests_processing", "Number of requests processing.", prometheus.GaugeValue},
	{"llamacpp:requests_deferred", "Number of requests deferred (waiting).", prometheus.GaugeValue},
	{"llamacpp:n_busy_slots_per_decode", "Average tokens computed per engine step.", prometheus.GaugeValue},
}

// llamaShared are the indices in llamaDescs of the engine gauges.
const llamaProcessing, llamaDeferred = 12, 13

// mine reports whether descriptor i is this collector's.
func (c *llamaCollector) mine(i int) bool {
	return (i == llamaProcessing || i == llamaDeferred) == c.shared
}

func (c *llamaCollector) Describe(ch chan<- *prometheus.Desc) {
	for i, d := range llamaDescs {
		if c.mine(i) {
			ch <- prometheus.NewDesc(d.name, d.help, nil, nil)
		}
	}
}

func (c *llamaCollector) Collect(ch chan<- prometheus.Metric) {
	s := &c.m.llama
	s.mu.Lock()
	rate := func(n, sec float64) float64 {
		if sec <= 0 {
			return 0
		}
		return n / sec
	}
	values := []float64{s.promptTokens, s.cachedTokens, s.promptSeconds, s.predictedTokens, s.predictedSeconds,
		s.decodes, s.maxTokens, s.specDraftTokens, s.specAccepted, s.specDrafts,
		rate(s.bucketPrompt, s.bucketPromptSeconds), rate(s.bucketPredicted, s.bucketPredictedSeconds), 0, 0, rate(s.stepTokens, s.decodes)}
	if !c.shared { // the scrape that reports the bucket empties it
		s.bucketPrompt, s.bucketPromptSeconds, s.bucketPredicted, s.bucketPredictedSeconds = 0, 0, 0, 0
	}
	s.mu.Unlock()
	if c.shared && c.m.cfg.Engines != nil {
		for _, e := range c.m.cfg.Engines() { // their latest scheduler stats, as vllm:num_requests_*
			values[llamaProcessing] += float64(e.Stats.NumRunningReqs)
			values[llamaDeferred] += float64(e.Stats.NumWaitingReqs)
		}
	}
	for i, d := range llamaDescs {
		if c.mine(i) {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(d.name, d.help, nil, nil), d.kind, values[i])
		}
	}
}
