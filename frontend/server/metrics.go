package server

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/frontend/openai"
)

// What the server reads of a Stream for metrics, when the stream has it
// (engineclient's does; a test's fake may not).
type (
	engineIndexer interface{ EngineIndex() int }
	timed         interface{ Timing() engineclient.Timing }
	// iterationReporter is an Engine that reports each engine step's
	// tokens (engineclient.Client.OnIteration).
	iterationReporter interface {
		OnIteration(fn func(engine, tokens int))
	}
)

// engineOf is the engine serving st; -1 when unknown.
func engineOf(st Stream) int {
	if e, ok := st.(engineIndexer); ok {
		return e.EngineIndex()
	}
	return -1
}

func timingOf(st Stream) engineclient.Timing {
	if t, ok := st.(timed); ok {
		return t.Timing()
	}
	return engineclient.Timing{}
}

// parentStats gathers one genRequest's choices for vllm:request_params_n
// and vllm:request_max_num_generation_tokens, observed when the last of
// them finishes.
type parentStats struct {
	mu     sync.Mutex // mu guards the fields below
	left   int        // choices not finished yet
	maxGen int        // most tokens one finished choice generated
}

// finished records one choice; it reports whether it was the last, and
// the most tokens any choice generated.
func (p *parentStats) finished(numGenerated int) (last bool, maxGen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left--
	p.maxGen = max(p.maxGen, numGenerated)
	return p.left == 0, p.maxGen
}

// observeFinish records a finished choice of g served on st.
func (s *Server) observeFinish(g *genRequest, st Stream, ps *parentStats, start time.Time, numGenerated, numCached int, reason string) {
	engine := engineOf(st)
	s.metrics.ObserveFinish(metrics.Finished{
		Engine: engine, Reason: reason, E2E: time.Since(start),
		NumPrompt: len(g.prompt), NumGenerated: numGenerated, NumCached: numCached,
		MaxTokens: g.params.MaxTokens, Timing: timingOf(st),
	})
	if last, maxGen := ps.finished(numGenerated); last {
		s.metrics.ObserveParent(engine, g.n, maxGen)
	}
}

// observeHTTP records every request in vLLM's http_requests_total and
// http_request_duration_seconds, under its route's template.
func (s *Server) observeHTTP(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		s.metrics.ObserveHTTP(req.Method, routeTemplate(c.Path()), res.Status, time.Since(start), req.ContentLength, contentLength(res))
		return nil
	}
}

// routeTemplate spells an echo route ("/v1/responses/:id") as FastAPI
// does ("/v1/responses/{id}"); "" for none.
func routeTemplate(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// contentLength is what the response's Content-Length says, or would:
// its size, except for a stream (SSE has none, so it counts 0, as the
// instrumentator counts a missing header).
func contentLength(res *echo.Response) int64 {
	if strings.HasPrefix(res.Header().Get(echo.HeaderContentType), "text/event-stream") {
		return 0
	}
	return res.Size
}

// requestMetrics is a response's "metrics", vLLM's per-request timings:
// only with --enable-per-request-metrics and for one sequence (one
// prompt, one choice), whose timestamps they are; nil otherwise.
func (s *Server) requestMetrics(gens []*genRequest, res []*choiceResult) *openai.PerRequestMetrics {
	if !s.cfg.EnablePerRequestMetrics || len(gens) != 1 || len(res) != 1 {
		return nil
	}
	return perRequestMetrics(res[0].timing, res[0].numTokens)
}

// perRequestMetrics computes the timings of one sequence that generated
// numTokens tokens from the engine's timestamps (unix seconds, 0 =
// unknown), as vLLM's build_per_request_timing_metrics does: a field
// whose timestamps are unknown stays nil.
func perRequestMetrics(t engineclient.Timing, numTokens int) *openai.PerRequestMetrics {
	ms := func(d float64) *float64 { v := d * 1000; return &v }
	m := &openai.PerRequestMetrics{}
	if t.Scheduled > 0 && t.FirstToken > 0 {
		m.TimeToFirstTokenMs = ms(t.FirstToken - t.Scheduled)
	}
	if t.FirstToken > 0 && t.LastToken > 0 {
		m.GenerationTimeMs = ms(t.LastToken - t.FirstToken)
		if numTokens > 1 {
			m.MeanITLMs = ms((t.LastToken - t.FirstToken) / float64(numTokens-1))
		}
	}
	if t.Queued > 0 && t.Scheduled > 0 {
		m.QueueTimeMs = ms(t.Scheduled - t.Queued)
	}
	if t.Scheduled > 0 && t.LastToken > 0 {
		if inference := t.LastToken - t.Scheduled; inference > 0 {
			tps := float64(numTokens) / inference
			m.TokensPerSecond = &tps
		}
	}
	m.SpeculativeDecoding = specMetrics(t.Spec)
	return m
}

// specMetrics is vLLM's build_spec_decoding_metrics: nil when the request
// verified no draft.
func specMetrics(s engineclient.SpecDecode) *openai.SpeculativeDecodingMetrics {
	steps := s.NumSteps()
	if steps == 0 {
		return nil
	}
	m := &openai.SpeculativeDecodingMetrics{
		MeanAcceptanceLength:   1 + float64(s.NumAccepted)/float64(steps),
		AcceptanceHistogram:    slices.Clone(s.Histogram),
		NumSpecSteps:           steps,
		NumAcceptedDraftTokens: s.NumAccepted,
		NumDraftTokens:         s.NumDraftTokens,
		NumSpecTokens:          s.NumSpecTokens,
	}
	if s.NumDraftTokens > 0 {
		m.DraftAcceptanceRate = float64(s.NumAccepted) / float64(s.NumDraftTokens)
	}
	return m
}
