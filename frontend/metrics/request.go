package metrics

import (
	"time"

	"github.com/tandem-llm/tandem/frontend/engineclient"
)

// ObserveFirstToken records a request's first token from engine: its
// time to first token (arrival at this frontend to the token's arrival)
// and its prompt's tokens by where their KV came from, as vLLM counts
// them when a prefill completes.
func (m *Metrics) ObserveFirstToken(engine int, ttft time.Duration, numPrompt, numCached int) {
	l := engineLabel(engine)
	m.touch(engine)
	m.ttft.WithLabelValues(l).Observe(ttft.Seconds())
	numCached = min(max(numCached, 0), numPrompt)
	m.promptToks.WithLabelValues(l).Add(float64(numPrompt))
	m.cachedToks.WithLabelValues(l).Add(float64(numCached))
	m.promptBySource.WithLabelValues(l, "local_compute").Add(float64(numPrompt - numCached))
	m.promptBySource.WithLabelValues(l, "local_cache_hit").Add(float64(numCached))
}

// ObserveTokens counts n tokens generated on engine.
func (m *Metrics) ObserveTokens(engine, n int) {
	m.genToks.WithLabelValues(engineLabel(engine)).Add(float64(n))
}

// ObserveInterToken records the gap between two outputs of a request.
func (m *Metrics) ObserveInterToken(engine int, d time.Duration) {
	l := engineLabel(engine)
	m.itl.WithLabelValues(l).Observe(d.Seconds())
	if m.oldTPOT != nil {
		m.oldTPOT.WithLabelValues(l).Observe(d.Seconds())
	}
}

// ObserveIteration records the tokens one engine step computed for this
// frontend's requests: prompt tokens prefilled plus tokens generated
// (vllm:iteration_tokens_total).
func (m *Metrics) ObserveIteration(engine, tokens int) {
	m.touch(engine)
	m.iterTokens.WithLabelValues(engineLabel(engine)).Observe(float64(tokens))
	m.llama.iteration(tokens)
}

// ObserveRouted counts a request sent to engine, for the router's
// vllm:current_qps.
func (m *Metrics) ObserveRouted(engine int) { m.qps.add(engine, time.Now()) }

// Finished is one finished request (one choice of it).
type Finished struct {
	Engine       int           // the engine that served it; -1 for none
	Reason       string        // stop, length, abort, error, repetition
	E2E          time.Duration // arrival at this frontend to the finish
	NumPrompt    int
	NumGenerated int
	NumCached    int // prompt tokens served from the prefix cache
	MaxTokens    int // the max_tokens parameter; 0 = not set
	// Timing is what the engine told of the request; the phase times
	// (queue, prefill, decode, inference) and the time per output token
	// need its events, and are left out without them.
	Timing engineclient.Timing
}

// ObserveFinish records a finished request, as vLLM's
// update_from_finished_request does.
func (m *Metrics) ObserveFinish(f Finished) {
	l := engineLabel(f.Engine)
	m.touch(f.Engine)
	m.llama.finish(f)
	m.success.WithLabelValues(l, f.Reason).Inc()
	m.e2e.WithLabelValues(l).Observe(f.E2E.Seconds())
	m.promptLen.WithLabelValues(l).Observe(float64(f.NumPrompt))
	m.genLen.WithLabelValues(l).Observe(float64(f.NumGenerated))
	m.prefillKV.WithLabelValues(l).Observe(float64(f.NumPrompt - min(max(f.NumCached, 0), f.NumPrompt)))
	if f.MaxTokens > 0 {
		m.maxTokens.WithLabelValues(l).Observe(float64(f.MaxTokens))
	}
	t := f.Timing
	m.numPreempt.WithLabelValues(l).Observe(float64(t.NumPreemptions))
	if !t.Known() {
		return
	}
	// vLLM's intervals: QUEUED → first SCHEDULED → first token → last
	// token, all on the engine's clock.
	since := func(a, b float64) float64 { return max(b-a, 0) }
	decode := since(t.FirstToken, t.LastToken)
	m.queue.WithLabelValues(l).Observe(since(t.Queued, t.Scheduled))
	m.prefill.WithLabelValues(l).Observe(since(t.Scheduled, t.FirstToken))
	m.decode.WithLabelValues(l).Observe(decode)
	m.inference.WithLabelValues(l).Observe(since(t.Scheduled, t.LastToken))
	tpot := 0.0 // the first token is the prefill's
	if t.NumGenerated > 1 {
		tpot = decode / float64(t.NumGenerated-1)
	}
	m.tpot.WithLabelValues(l).Observe(tpot)
}

// ObserveParent records a request whose every choice finished: its n and
// the most tokens one of its choices generated (vLLM observes both once
// per request, when its last child finishes).
func (m *Metrics) ObserveParent(engine, n, maxGenerated int) {
	l := engineLabel(engine)
	m.touch(engine)
	m.paramsN.WithLabelValues(l).Observe(float64(n))
	m.maxGen.WithLabelValues(l).Observe(float64(maxGenerated))
}

// ObserveAdmissionRejected counts a request refused by a queue limit
// (--max-waiting-requests: vLLM's reason "max_num_queued_reqs").
func (m *Metrics) ObserveAdmissionRejected(reason string) { m.admission.WithLabelValues(reason).Inc() }

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
