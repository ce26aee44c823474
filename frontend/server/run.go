package server

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// choiceResult is one finished choice of a non-streaming request.
type choiceResult struct {
	text       strings.Builder
	numTokens  int
	finish     string
	stopReason openai.StopReason
	numCached  int
	logprobs   []tokenLogprob
	tokenIDs   []int32             // the generated tokens, for return_token_ids
	timing     engineclient.Timing // the engine's timestamps, for per-request metrics
	// promptLogprobs are the engine's prompt logprobs (prompt_logprobs).
	promptLogprobs *wire.Logprobs
}

// tokenLogprob is one generated token's logprobs, decoded for the API.
type tokenLogprob struct {
	token   string
	bytes   []int
	logprob float64
	top     []topLogprob
}

type topLogprob struct {
	token   string
	bytes   []int
	logprob float64
}

func stopReasonOf(v any) openai.StopReason {
	switch x := v.(type) {
	case string:
		return openai.StopString(x)
	case int64:
		return openai.StopToken(int32(x))
	}
	return openai.StopReason{}
}

// decodeLogprobs turns an output's logprobs into API entries; asIDs
// writes each token as "token_id:N" (return_tokens_as_token_ids).
func (s *Server) decodeLogprobs(lp *wire.Logprobs, asIDs bool) []tokenLogprob {
	if lp == nil {
		return nil
	}
	text := func(id int32) (string, []int) {
		if asIDs {
			t := tokenIDText(id)
			return t, openai.ByteValues(t)
		}
		return tokenText(s.tok, id)
	}
	out := make([]tokenLogprob, len(lp.TokenIDs))
	for i, ids := range lp.TokenIDs {
		if len(ids) == 0 {
			continue
		}
		t, b := text(ids[0])
		out[i] = tokenLogprob{token: t, bytes: b, logprob: lp.Logprobs[i][0]}
		for j := 1; j < len(ids); j++ {
			tt, bb := text(ids[j])
			out[i].top = append(out[i].top, topLogprob{token: tt, bytes: bb, logprob: lp.Logprobs[i][j]})
		}
	}
	return out
}

// withSampledTop puts each position's sampled token first among its
// top_logprobs unless it is there: with logprob_token_ids the engine
// reports exactly those ids after the sampled one, and vLLM lists the
// sampled token with them.
func withSampledTop(lps []tokenLogprob) []tokenLogprob {
	for i := range lps {
		l := &lps[i]
		if !slices.ContainsFunc(l.top, func(t topLogprob) bool { return t.token == l.token }) {
			l.top = append([]topLogprob{{token: l.token, bytes: l.bytes, logprob: l.logprob}}, l.top...)
		}
	}
	return lps
}

// sampledTopIf is withSampledTop(lps) when on, else lps.
func sampledTopIf(on bool, lps []tokenLogprob) []tokenLogprob {
	if on {
		return withSampledTop(lps)
	}
	return lps
}

// tokenIDText is a token written as its id, vLLM's "token_id:N".
func tokenIDText(id int32) string { return "token_id:" + strconv.Itoa(int(id)) }

// tokensAsIDs resolves return_tokens_as_token_ids: the request's value,
// else the server's --return-tokens-as-token-ids.
func (s *Server) tokensAsIDs(p *openai.Params) bool {
	if p.ReturnTokensAsTokenIDs != nil {
		return *p.ReturnTokensAsTokenIDs
	}
	return s.cfg.ReturnTokensAsTokenIDs
}

// source starts generating every choice of a request and returns the
// channel of their events and a func that stops them all. Plain sampling
// (startAll) and beam search (beamSource) are the two sources.
type source func(ctx context.Context, gens []*genRequest) (<-chan choiceEvent, func(), error)

// numChoices is the number of choices gens produce.
func numChoices(gens []*genRequest) int {
	total := 0
	for _, g := range gens {
		total += g.n
	}
	return total
}

// startAll starts every genRequest and returns the shared event channel
// and a func that aborts all of them. It refuses with a 429 while the
// waiting queue is full.
func (s *Server) startAll(ctx context.Context, gens []*genRequest) (<-chan choiceEvent, func(), error) {
	if e := s.checkOutput(gens); e != nil {
		return nil, nil, e
	}
	if e := s.admit(); e != nil {
		return nil, nil, e
	}
	total := numChoices(gens)
	events := make(chan choiceEvent, 4*total)
	var cancels []func()
	cancelAll := func() {
		for _, c := range cancels {
			c()
		}
	}
	for _, g := range gens {
		cancel, err := s.start(ctx, g, events)
		if err != nil {
			cancelAll()
			return nil, nil, err
		}
		cancels = append(cancels, cancel)
	}
	return events, cancelAll, nil
}

// collect waits for every choice to finish; asIDs writes logprobs'
// tokens as ids.
func (s *Server) collect(ctx context.Context, gens []*genRequest, src source, asIDs bool) ([]*choiceResult, error) {
	events, cancel, err := src(ctx, gens)
	if err != nil {
		return nil, err
	}
	defer cancel()
	total := numChoices(gens)
	res := make([]*choiceResult, total)
	for i := range res {
		res[i] = &choiceResult{}
	}
	for left := total; left > 0; {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ev.err != nil {
			return nil, ev.err
		}
		r := res[ev.index]
		r.text.WriteString(ev.text)
		r.numTokens += len(ev.tokenIDs)
		r.tokenIDs = append(r.tokenIDs, ev.tokenIDs...)
		r.numCached = max(r.numCached, ev.numCached)
		if ev.promptLogprobs != nil {
			r.promptLogprobs = ev.promptLogprobs
		}
		r.logprobs = append(r.logprobs, s.decodeLogprobs(ev.logprobs, asIDs)...)
		if ev.finish != "" {
			r.finish, r.stopReason, r.timing = ev.finish, stopReasonOf(ev.stopReason), ev.timing
			left--
		}
	}
	return res, nil
}

// usageOf sums the usage of finished choices; prompt tokens count once per
// prompt, cached tokens are the best hit among a prompt's choices.
func usageOf(gens []*genRequest, res []*choiceResult) openai.Usage {
	var u openai.Usage
	cached := 0
	for _, g := range gens {
		u.PromptTokens += len(g.prompt)
		best := 0
		for i := range g.n {
			best = max(best, res[g.firstIndex+i].numCached)
		}
		cached += best
	}
	for _, r := range res {
		u.CompletionTokens += r.numTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: cached}
	return u
}

// streamer is what differs between chat and completions streaming.
type streamer interface {
	// first returns the event to send before any token (chat: role), or
	// nil; usage is set with continuous_usage_stats.
	first(index int, usage *openai.Usage) any
	// chunk returns the event for one choice event, chunks for several,
	// or nil to skip it. The event may be reused by the next call: the
	// caller writes it out first.
	chunk(ev *choiceEvent, lps []tokenLogprob, usage *openai.Usage) any
	// usage returns the final usage-only event, with the request's
	// metrics when they are sent.
	usage(u openai.Usage, m *openai.PerRequestMetrics) any
	// progress returns the event that carries llama.cpp's prompt_progress
	// for a choice (chat: a role chunk without content), or nil.
	progress(index int) any
}

// streamOptions are what a stream sends besides the choices.
type streamOptions struct {
	includeUsage bool // a final usage chunk
	continuous   bool // usage on every chunk
	tokensAsIDs  bool // logprobs' tokens as "token_id:N"
	metrics      bool // per-request metrics on the usage chunk
	sampledTop   bool // logprob_token_ids: the sampled token joins top_logprobs (withSampledTop)
	timings      bool // llama.cpp's timings on the usage chunk (timings_per_token)
	progress     bool // llama.cpp's prompt_progress chunks (return_progress)
}

// streamOptionsOf resolves stream_options as vLLM does: usage on every
// chunk only with include_usage, and both with
// --enable-force-include-usage.
func (s *Server) streamOptionsOf(p *openai.Params) streamOptions {
	o := streamOptions{includeUsage: p.IncludeUsage(), continuous: p.IncludeUsage() && p.ContinuousUsage(), tokensAsIDs: s.tokensAsIDs(p),
		sampledTop: len(p.LogprobTokenIDs) > 0, timings: p.TimingsPerToken, progress: p.ReturnProgress && !p.UseBeamSearch}
	if s.cfg.ForceIncludeUsage {
		o.includeUsage, o.continuous = true, true
	}
	return o
}

// chunks are the events a streamer sends for one choice event, in order.
type chunks []any

// stream runs gens and writes SSE events until every choice finished.
// Failures after the first byte become an error event, then [DONE].
func (s *Server) stream(c echo.Context, gens []*genRequest, src source, st streamer, opts streamOptions) error {
	ctx := c.Request().Context()
	events, cancel, err := src(ctx, gens)
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	out := &sse{c: c}
	total := numChoices(gens)
	res := make([]*choiceResult, total)
	for i := range res {
		res[i] = &choiceResult{}
	}
	for i := range res {
		var u *openai.Usage
		if opts.continuous {
			uu := usageOf(gens, res)
			u = &uu
		}
		if ev := st.first(i, u); ev != nil {
			if err := out.send(ev); err != nil {
				return nil
			}
		}
	}
	progress := make([]promptProgress, total) // return_progress's, per choice
	start := time.Now()
	var ev choiceEvent // one for the whole stream: st.chunk takes its address, so it lives on the heap
	for left := total; left > 0; {
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil // the client left; cancel aborts every child
		}
		if ev.err != nil {
			e := engineError(ev.err)
			_ = out.send(e)
			out.done()
			return nil
		}
		r := res[ev.index]
		r.numTokens += len(ev.tokenIDs)
		r.numCached = max(r.numCached, ev.numCached)
		if ev.finish != "" {
			left--
			r.finish, r.timing = ev.finish, ev.timing
		}
		if opts.progress {
			for _, p := range progress[ev.index].next(&ev, len(genOf(gens, ev.index).prompt), r.numCached, start) {
				if pc := st.progress(ev.index); pc != nil {
					if err := out.write(withField(pc, "prompt_progress", p)); err != nil {
						return nil
					}
				}
			}
		}
		var u *openai.Usage
		if opts.continuous {
			uu := usageOf(gens, res)
			u = &uu
		}
		lps := s.decodeLogprobs(ev.logprobs, opts.tokensAsIDs)
		if opts.sampledTop {
			lps = withSampledTop(lps)
		}
		chunk := st.chunk(&ev, lps, u)
		many, ok := chunk.(chunks)
		if !ok && chunk != nil {
			if err := out.write(chunk); err != nil {
				return nil
			}
		}
		for _, c := range many {
			if err := out.write(c); err != nil {
				return nil
			}
		}
		if len(events) == 0 { // nothing more ready: send what is written
			out.flush()
		}
	}
	if opts.includeUsage {
		var m *openai.PerRequestMetrics
		if opts.metrics {
			m = s.requestMetrics(gens, res)
		}
		ev := st.usage(usageOf(gens, res), m)
		if opts.timings {
			ev = withTimings(ev, requestTimings(gens, res))
		}
		_ = out.send(ev)
	}
	out.done()
	return nil
}

// pickBest keeps, of each prompt's g.n candidates (best_of), the n with
// the highest mean logprob per token, best first, as OpenAI's best_of
// does. res is indexed like gens' choices; the result holds n choices per
// prompt, in prompt order.
func pickBest(gens []*genRequest, res []*choiceResult, n int) []*choiceResult {
	out := make([]*choiceResult, 0, len(gens)*n)
	for _, g := range gens {
		best := engineclient.Best(res[g.firstIndex:g.firstIndex+g.n], n, func(r **choiceResult) float64 { return (*r).meanLogprob() })
		out = append(out, best...)
	}
	return out
}

// meanLogprob is the mean logprob of the choice's sampled tokens; -Inf
// for a choice without tokens.
func (r *choiceResult) meanLogprob() float64 {
	if len(r.logprobs) == 0 {
		return math.Inf(-1)
	}
	sum := 0.0
	for _, l := range r.logprobs {
		sum += l.logprob
	}
	return sum / float64(len(r.logprobs))
}

// respondCollected writes a non-streaming answer or the matching error.
func respondCollected(c echo.Context, body any, err error) error {
	if err != nil {
		return writeError(c, engineError(err))
	}
	return c.JSON(http.StatusOK, body)
}

// genOf is the request that generates choice i.
func genOf(gens []*genRequest, i int) *genRequest {
	for _, g := range gens {
		if i >= g.firstIndex && i < g.firstIndex+g.n {
			return g
		}
	}
	return gens[len(gens)-1]
}
