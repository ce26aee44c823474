package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/llamacpp"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// nativeCompletion serves llama-server's own POST /completion (and
// /completions): llama.cpp's request fields and defaults, its response
// shape (content, tokens, stop_type, timings, generation_settings,
// completion_probabilities), its stream (one event per output, a final
// event with stop true, no [DONE]), on the same engines, sessions and
// routing as the OpenAI routes. See frontend/llamacpp and docs/api.md.
func (s *Server) nativeCompletion(c echo.Context) error {
	var req llamacpp.CompletionRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	prompts := make([][]int32, len(req.Prompt))
	for i, p := range req.Prompt {
		prompts[i] = s.nativeTokens(p)
	}
	return s.runNative(c, &req, prompts)
}

// runNative runs a native completion of the given prompts (token ids).
func (s *Server) runNative(c echo.Context, req *llamacpp.CompletionRequest, prompts [][]int32) error {
	set, e := req.Resolve()
	if e != nil {
		return writeError(c, e)
	}
	if set.Seed == llamacpp.RandomSeed && s.cfg.DefaultSeed != nil {
		set.Seed = *s.cfg.DefaultSeed
	}
	bias, entries, e := s.nativeBias(req.LogitBias)
	if e != nil {
		return writeError(c, e)
	}
	if set.IgnoreEOS { // llama.cpp lists the end-of-generation tokens it then bans
		for _, id := range s.tok.EOS() {
			entries = append(entries, llamacpp.BiasEntry{Token: id})
		}
	}
	salt := req.CacheSalt
	if !set.CachePrompt {
		salt = "nocache-" + randomHex(16) // a salt of its own: no cached prefix matches it
	}
	params := set.Params(bias, req.SessionID, salt)
	if e := params.Validate(); e != nil {
		return writeError(c, e)
	}
	cm, e := s.resolveCommon(c, &params) // native routes name no model: llama-server serves whichever it loaded
	if e != nil {
		return writeError(c, e)
	}
	slot, e := s.pinSlot(set.IDSlot, params.CacheSalt, &cm.rank)
	if e != nil {
		return writeError(c, e)
	}
	var logprobs *int
	if set.NProbs > 0 {
		n := set.NProbs
		logprobs = &n
	}
	id := "cmpl-" + cm.baseID
	nat := &nativeRun{set: set, fields: req.ResponseFields, model: s.cfg.ServedModelName, gen: set.Generation(s.cfg.MaxModelLen, s.cfg.ServedModelName, entries, s.specDefaults()),
		prompts: prompts, start: time.Now()}
	var gens []*genRequest
	for i, p := range prompts {
		if len(p) == 0 {
			return writeError(c, openai.BadRequest("prompt", "prompt %d is empty after tokenization", i))
		}
		if e := s.checkTokens("prompt", p); e != nil {
			return writeError(c, e)
		}
		if len(p) >= s.cfg.MaxModelLen {
			return writeError(c, exceedContext(len(p), s.cfg.MaxModelLen))
		}
		rest := s.cfg.MaxModelLen - len(p)
		maxTokens := set.NPredict
		if maxTokens < 0 || maxTokens > rest && !s.cfg.ContextShift { // with a context shift only n_predict ends it
			maxTokens = rest
		}
		if maxTokens == 0 { // evaluate the prompt into the cache; the one token is not returned
			maxTokens = 1
		}
		sp, e := samplingParams(&params, maxTokens, logprobs, s.tok.EOS())
		if e != nil {
			return writeError(c, e)
		}
		sp.ReturnProgress = set.ReturnProgress && set.Stream // the engine reports each prefill step
		sp.ContextShift = s.contextShift(p, set.NKeep)
		sp.SpecMaxDraft, sp.SpecMinDraft = set.SpecNMax, set.SpecNMin
		gens = append(gens, &genRequest{
			internalID: fmt.Sprintf("%s-%d-%s", id, i, randomHex(4)), externalID: fmt.Sprintf("%s-%d", id, i),
			prompt: p, params: sp, n: set.NCmpl, firstIndex: i * set.NCmpl, sessionID: cm.sessionID, source: cm.source,
			cacheSalt: params.CacheSalt, rank: cm.rank, stops: set.Stop, skipSpecial: params.SkipSpecial(), slot: slot,
			lora: cm.lora,
		})
	}
	nat.gens = gens
	nat.results = make([]*nativeChoice, numChoices(gens))
	for i := range nat.results {
		nat.results[i] = &nativeChoice{}
	}
	ctx := c.Request().Context()
	events, cancel, err := s.startAll(ctx, gens)
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	if set.Stream {
		return s.streamNative(c, nat, events)
	}
	for left := len(nat.results); left > 0; {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil
		}
		if ev.err != nil {
			return writeError(c, engineError(ev.err))
		}
		if nat.observe(&ev, s) {
			left--
		}
	}
	out := make([]any, len(nat.results))
	for i := range nat.results {
		r := nat.result(i, s)
		v, err := llamacpp.SelectFields(r, req.ResponseFields)
		if err != nil {
			return writeError(c, openai.Internal("%v", err))
		}
		out[i] = v
	}
	if len(out) == 1 {
		return c.JSON(http.StatusOK, out[0])
	}
	return c.JSON(http.StatusOK, out)
}

// streamNative writes llama.cpp's stream: a partial event per output of
// each choice, then each choice's final result (stop true, empty
// content), and no [DONE]. An error after the first event is one
// {"error"} event.
func (s *Server) streamNative(c echo.Context, nat *nativeRun, events <-chan choiceEvent) error {
	ctx := c.Request().Context()
	out := &sse{c: c}
	out.start()
	for left := len(nat.results); left > 0; {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil
		}
		if ev.err != nil {
			_ = out.send(engineError(ev.err))
			return nil
		}
		finished := nat.observe(&ev, s)
		r := nat.results[ev.index]
		for _, p := range nat.progress(&ev) {
			partial := llamacpp.Partial{Index: ev.index, Tokens: []int32{}, IDSlot: nat.set.IDSlot,
				TokensPredicted: r.numTokens, TokensEvaluated: len(nat.prompt(ev.index)), Progress: &p}
			if nat.set.TimingsPerToken {
				t := r.progress.timings(p)
				partial.Timings = &t
			}
			if err := out.write(partial); err != nil {
				return nil
			}
		}
		if len(ev.tokenIDs) > 0 && !nat.evalOnly() {
			p := llamacpp.Partial{Index: ev.index, Content: ev.text, Tokens: nonNilIDs(ev.tokenIDs), IDSlot: nat.set.IDSlot,
				TokensPredicted: r.numTokens, TokensEvaluated: len(nat.prompt(ev.index))}
			if nat.set.NProbs > 0 {
				p.Probs = r.probs[len(r.probs)-min(len(r.probs), len(ev.tokenIDs)):]
			}
			if nat.set.TimingsPerToken {
				t := nat.timings(ev.index)
				p.Timings = &t
			}
			if err := out.write(p); err != nil {
				return nil
			}
		}
		if finished {
			res := nat.result(ev.index, s)
			res.Content, res.Tokens, res.Probs = "", []int32{}, nil
			v, err := llamacpp.SelectFields(res, nat.fields)
			if err != nil {
				_ = out.send(openai.Internal("%v", err))
				return nil
			}
			if err := out.write(v); err != nil {
				return nil
			}
			left--
		}
		if len(events) == 0 {
			out.flush()
		}
	}
	out.flush()
	return nil
}

// nativeRun is one native completion's state: its settings, prompts and
// the choices as they arrive.
type nativeRun struct {
	set     llamacpp.Settings
	fields  []string // response_fields
	model   string
	gen     llamacpp.GenerationSettings
	gens    []*genRequest
	prompts [][]int32
	results []*nativeChoice
	start   time.Time
}

// nativeChoice is one choice's output so far.
type nativeChoice struct {
	text       strings.Builder
	tokens     []int32
	numTokens  int
	probs      []llamacpp.TokenProb
	numCached  int
	finish     string
	stopReason any
	first      time.Time // when its first token arrived
	last       time.Time
	timing     engineclient.Timing // the engine's, on the finishing event
	progress   promptProgress      // return_progress's
}

func (n *nativeRun) evalOnly() bool { return n.set.NPredict == 0 }

// prompt is the prompt of choice i.
func (n *nativeRun) prompt(i int) []int32 { return n.prompts[i/n.set.NCmpl] }

// observe folds one event into its choice and reports whether the
// choice finished.
func (n *nativeRun) observe(ev *choiceEvent, s *Server) bool {
	r := n.results[ev.index]
	now := time.Now()
	if len(ev.tokenIDs) > 0 && !n.evalOnly() {
		if r.first.IsZero() {
			r.first = now
		}
		r.last = now
		r.text.WriteString(ev.text)
		r.tokens = append(r.tokens, ev.tokenIDs...)
		r.numTokens += len(ev.tokenIDs)
		if n.set.NProbs > 0 && ev.logprobs != nil {
			r.probs = append(r.probs, s.nativeProbs(ev.logprobs, n.set.PostSamplingProbs)...)
		}
	}
	r.numCached = max(r.numCached, ev.numCached)
	if ev.finish == "" {
		return false
	}
	r.finish, r.stopReason = ev.finish, ev.stopReason
	r.timing = ev.timing
	return true
}

// progress are the prompt_progress reports to stream before ev with
// return_progress (promptProgress).
func (n *nativeRun) progress(ev *choiceEvent) []llamacpp.Progress {
	if !n.set.ReturnProgress {
		return nil
	}
	r := n.results[ev.index]
	return r.progress.next(ev, len(n.prompt(ev.index)), r.numCached, n.start)
}

// promptProgress is llama.cpp's return_progress for one choice, as
// llama-server reports it: first what the prefix cache served (processed
// = cache), then the engine's count after each prefill step that sampled
// nothing, then the whole prompt once, with the first token (or the end).
// The first report goes with the first engine output, which brings the
// cached count. time_ms runs from the request's arrival.
type promptProgress struct {
	started, done bool
	firstMS       float64 // the first report's time_ms: the prompt's clock starts there
}

// timings are llama.cpp's timings of a report (timings_per_token): the
// prompt tokens computed so far past the cache, over the time since the
// first report; nothing generated yet.
func (p *promptProgress) timings(r llamacpp.Progress) llamacpp.Timings {
	return llamacpp.NewTimings(r.Cache, max(r.Processed-r.Cache, 0), max(r.TimeMS-p.firstMS, 0), 0, 0)
}

// next are the reports to send before ev, in order; none for most events.
func (p *promptProgress) next(ev *choiceEvent, total, cached int, start time.Time) []llamacpp.Progress {
	if p.done {
		return nil
	}
	processed := ev.progress
	if processed <= 0 {
		if len(ev.tokenIDs) == 0 && ev.finish == "" {
			return nil
		}
		processed, p.done = total, true
	}
	cached = min(cached, total)
	report := func(n int) llamacpp.Progress {
		return llamacpp.Progress{Total: total, Cache: cached, Processed: min(n, total), TimeMS: ms(time.Since(start))}
	}
	var out []llamacpp.Progress
	if !p.started {
		p.started = true
		first := report(cached)
		p.firstMS = first.TimeMS
		out = append(out, first)
	}
	return append(out, report(processed))
}

// timings are choice i's timings: the engine's clock once it finished
// (scheduled → first token is the prompt, first → last token the
// generation), the frontend's before.
func (n *nativeRun) timings(i int) llamacpp.Timings {
	r := n.results[i]
	numPrompt := len(n.prompt(i))
	cached := min(r.numCached, numPrompt)
	promptMS, predMS, ok := engineMS(r.timing)
	if !ok && !r.first.IsZero() {
		promptMS, predMS = ms(r.first.Sub(n.start)), ms(r.last.Sub(r.first))
	}
	return llamacpp.NewTimings(cached, numPrompt-cached, promptMS, r.numTokens, predMS).WithDraft(r.timing.Spec.NumDraftTokens, r.timing.Spec.NumAccepted)
}

// engineMS are a finished sequence's prompt time (scheduled → first
// token) and generation time (first → last token) in milliseconds, by the
// engine's clock; ok is false while the engine's timestamps are unknown.
func engineMS(t engineclient.Timing) (promptMS, predMS float64, ok bool) {
	if t.Scheduled <= 0 || t.FirstToken < t.Scheduled {
		return 0, 0, false
	}
	return 1e3 * (t.FirstToken - t.Scheduled), 1e3 * max(t.LastToken-t.FirstToken, 0), true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// result is choice i's final result.
func (n *nativeRun) result(i int, s *Server) llamacpp.Result {
	r := n.results[i]
	p := n.prompt(i)
	stopType, word := llamacpp.StopLimit, ""
	switch {
	case r.finish == "stop":
		stopType = llamacpp.StopEOS
		if w, ok := r.stopReason.(string); ok {
			stopType, word = llamacpp.StopWord, w
		}
	case r.finish == "length" || n.evalOnly():
		stopType = llamacpp.StopLimit
	}
	tokens := []int32{}
	if n.set.ReturnTokens {
		tokens = nonNilIDs(r.tokens)
	}
	text := r.text.String()
	res := llamacpp.Result{Index: i, Content: text, Tokens: tokens, IDSlot: n.set.IDSlot, Stop: true, Model: n.model,
		TokensPredicted: r.numTokens, TokensEvaluated: len(p), GenerationSettings: n.gen, Prompt: s.tok.Decode(p, false),
		HasNewLine: strings.Contains(text, "\n"), StopType: stopType, StoppingWord: word,
		Truncated:    stopType == llamacpp.StopLimit && len(p)+r.numTokens >= s.cfg.MaxModelLen,
		TokensCached: len(p) + max(r.numTokens-1, 0), Timings: n.timings(i)}
	if n.set.NProbs > 0 {
		res.Probs = r.probs
		if res.Probs == nil {
			res.Probs = []llamacpp.TokenProb{}
		}
	}
	return res
}

// requestTimings are llama.cpp's timings of a request's first choice
// (timings_per_token on the OpenAI routes): its prompt, cached tokens,
// and the engine's clock.
func requestTimings(gens []*genRequest, res []*choiceResult) *llamacpp.Timings {
	if len(gens) == 0 || len(res) == 0 {
		return nil
	}
	r, numPrompt := res[0], len(gens[0].prompt)
	cached := min(r.numCached, numPrompt)
	promptMS, predMS, _ := engineMS(r.timing)
	t := llamacpp.NewTimings(cached, numPrompt-cached, promptMS, r.numTokens, predMS).WithDraft(r.timing.Spec.NumDraftTokens, r.timing.Spec.NumAccepted)
	return &t
}

// withTimings puts timings on a usage chunk.
func withTimings(ev any, t *llamacpp.Timings) any {
	switch ch := ev.(type) {
	case openai.ChatCompletionChunk:
		ch.Timings = t
		return ch
	case openai.CompletionChunk:
		ch.Timings = t
		return ch
	}
	return ev
}

// nativeTokens tokenizes one llama.cpp prompt: each text piece is
// tokenized, special tokens parsed, and only a prompt that starts with
// text gets the model's BOS (when its GGUF says to add one).
func (s *Server) nativeTokens(p llamacpp.Prompt) []int32 {
	var ids []int32
	for i, part := range p {
		if part.IsText {
			ids = append(ids, s.tok.Encode(part.Text, i == 0)...)
			continue
		}
		ids = append(ids, part.Token)
	}
	return ids
}

// nativeBias resolves logit_bias: a text biases every token of its
// tokenization, false bans (the lowest bias the engine takes, -100;
// generation_settings shows llama.cpp's -Inf, null).
func (s *Server) nativeBias(bs llamacpp.Biases) (map[string]float64, []llamacpp.BiasEntry, *openai.Error) {
	if len(bs) == 0 {
		return nil, nil, nil
	}
	out := map[string]float64{}
	var entries []llamacpp.BiasEntry
	v := int32(s.vocabSize())
	for _, b := range bs {
		val := b.Value
		if b.Ban {
			val = -100
		}
		val = min(max(val, -100), 100)
		ids := []int32{b.Token}
		if b.IsText {
			ids = s.tok.Encode(b.Text, false)
		}
		for _, id := range ids {
			if id < 0 || id >= v {
				return nil, nil, openai.BadRequest("logit_bias", "logit_bias token id %d is out of the vocabulary (size %d)", id, v)
			}
			out[strconv.Itoa(int(id))] = val
			entry := llamacpp.BiasEntry{Token: id}
			if !b.Ban {
				entry.Bias = &val
			}
			entries = append(entries, entry)
		}
	}
	slices.SortFunc(entries, func(a, b llamacpp.BiasEntry) int { return int(a.Token - b.Token) })
	return out, entries, nil
}

// nativeProbs are one output's completion_probabilities: per token the
// sampled one and its alternatives, best first, with ids and bytes.
func (s *Server) nativeProbs(lp *wire.Logprobs, post bool) []llamacpp.TokenProb {
	out := make([]llamacpp.TokenProb, 0, len(lp.TokenIDs))
	for i, ids := range lp.TokenIDs {
		if len(ids) == 0 {
			continue
		}
		tp := s.tokenProb(ids[0], lp.Logprobs[i][0], post)
		tp.Top = make([]llamacpp.TokenProb, 0, len(ids)-1)
		for j := 1; j < len(ids); j++ {
			tp.Top = append(tp.Top, s.tokenProb(ids[j], lp.Logprobs[i][j], post))
		}
		out = append(out, tp)
	}
	return out
}

func (s *Server) tokenProb(id int32, logprob float64, post bool) llamacpp.TokenProb {
	t, b := tokenText(s.tok, id)
	return llamacpp.TokenProb{ID: id, Token: t, Bytes: b, Logprob: logprob, Post: post}
}

// exceedContext is llama.cpp's error for a prompt longer than the
// context: 400, type exceed_context_size_error, with both counts.
func exceedContext(numPrompt, nCtx int) *openai.Error {
	e := openai.BadRequest("prompt", "request (%d tokens) exceeds the available context size (%d tokens), try increasing it", numPrompt, nCtx)
	e.Type = "exceed_context_size_error"
	return e
}
