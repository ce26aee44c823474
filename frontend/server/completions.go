package server

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// nowUnix is the "created" clock; tests replace it.
var nowUnix = func() int64 { return time.Now().Unix() }

// completions serves POST /v1/completions: one generation per prompt,
// n choices each (choice index = prompt index · n + i).
func (s *Server) completions(c echo.Context) error {
	var req openai.CompletionRequest
	cm, e := s.begin(c, &req, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	var prompts [][]int32
	var texts []string
	switch req.Prompt.Kind {
	case openai.PromptText, openai.PromptTexts:
		for _, t := range req.Prompt.Texts {
			prompts = append(prompts, s.truncatePrompt(&req.Params, s.tok.Encode(t, req.AddSpecial(true))))
			texts = append(texts, t)
		}
	default:
		for _, ids := range req.Prompt.Tokens {
			ids = s.truncatePrompt(&req.Params, ids)
			if e := s.checkTokens("prompt", ids); e != nil {
				return writeError(c, e)
			}
			prompts = append(prompts, ids)
			if req.Echo { // only echo needs the text: 2,048 prompts of token ids are ~13 MB of it
				texts = append(texts, s.tok.Decode(ids, false))
			}
		}
	}
	if e := s.checkLogprobParams(&req.Params, req.Logprobs); e != nil {
		return writeError(c, e)
	}
	id := "cmpl-" + cm.baseID
	plan := planCandidates(&req.Params, req.Logprobs)
	n := plan.numGenerated
	maxOut, set := req.MaxOutputTokens()
	var gens []*genRequest
	for i, p := range prompts {
		if len(p) == 0 {
			return writeError(c, openai.BadRequest("prompt", "prompt %d is empty after tokenization", i))
		}
		maxTokens, e := s.checkLength(len(p), maxOut, set)
		if e != nil {
			return writeError(c, e)
		}
		sp, e := samplingParams(&req.Params, maxTokens, plan.engineLogprobs, s.tok.EOS())
		if e != nil {
			return writeError(c, e)
		}
		sp.PromptLogprobs = completionPromptLogprobs(&req)
		sp.ContextShift = s.contextShift(p, 0)
		if o := thinkOptionsOf(&req.Params, false); o.budget != nil && s.cfg.ReasoningParser != nil { // the request's only: no split here
			text := ""
			if i < len(texts) {
				text = texts[i]
			} else {
				text = s.tok.Decode(p, false)
			}
			s.thinkTags(text, &sp, o)
		}
		gens = append(gens, &genRequest{
			internalID:  fmt.Sprintf("%s-%d-%s", id, i, randomHex(4)),
			externalID:  fmt.Sprintf("%s-%d", id, i),
			prompt:      p,
			params:      sp,
			n:           n,
			firstIndex:  i * n,
			sessionID:   cm.sessionID,
			source:      cm.source,
			cacheSalt:   req.CacheSalt,
			priority:    req.Priority,
			rank:        cm.rank,
			slot:        cm.slot,
			stops:       req.Stop,
			includeStop: req.IncludeStopStr,
			skipSpecial: req.SkipSpecial(),
			lora:        cm.lora,
		})
	}
	created := nowUnix()
	// echoText is the prompt echoed before a choice, by the choice's
	// prompt index.
	echoText := func(promptIndex int) string {
		if !req.Echo {
			return ""
		}
		return texts[promptIndex]
	}
	src := s.sourceFor(&req.Params, req.Logprobs)
	if req.Stream {
		st := &completionStreamer{id: id, created: created, model: s.cfg.ServedModelName, fingerprint: s.fingerprint,
			echo: func(choice int) string { return echoText(choice / n) }, logprobs: req.Logprobs != nil,
			started: map[int]bool{}, sent: map[int]int{}}
		if req.Echo && req.Logprobs != nil {
			asIDs := s.tokensAsIDs(&req.Params)
			st.echoLogprobs = func(choice int, lp *wire.Logprobs) *openai.CompletionLogprobs {
				return s.echoedLogprobs(prompts[choice/n], lp, asIDs)
			}
		}
		if req.ReturnTokenIDs {
			st.promptIDs = func(choice int) []int32 { return prompts[choice/n] }
			st.sentPrompt = map[int]bool{}
		}
		opts := s.streamOptionsOf(&req.Params)
		opts.metrics = s.cfg.EnablePerRequestMetrics && len(gens) == 1 && n == 1
		return s.stream(c, gens, src, st, opts)
	}
	res, err := s.collect(c.Request().Context(), gens, src, s.tokensAsIDs(&req.Params))
	if err != nil {
		return respondCollected(c, nil, err)
	}
	usage := usageOf(gens, res)
	res = plan.pick(gens, res)
	out := openai.Completion{ID: id, Object: openai.ObjectTextCompletion, Created: created, Model: s.cfg.ServedModelName,
		Usage: usage, SystemFingerprint: s.fingerprint, Metrics: s.requestMetrics(gens, res)}
	if req.TimingsPerToken {
		out.Timings = requestTimings(gens, res)
	}
	for i, r := range res {
		prefix := echoText(i / plan.numReturned)
		ch := openai.CompletionChoice{Index: i, Text: prefix + r.text.String(), FinishReason: r.finish, StopReason: r.stopReason}
		if req.Logprobs != nil {
			ch.Logprobs = completionLogprobs(r.logprobs, len(prefix))
			if req.Echo { // vLLM: the echoed prompt's tokens come first, the first with null
				ch.Logprobs = appendLogprobs(s.echoedLogprobs(prompts[i/plan.numReturned], r.promptLogprobs, s.tokensAsIDs(&req.Params)), ch.Logprobs)
			}
		}
		ch.PromptLogprobs = s.promptLogprobsOf(r.promptLogprobs)
		if req.ReturnTokenIDs {
			ch.PromptTokenIDs, ch.TokenIDs = nonNilIDs(prompts[i/plan.numReturned]), nonNilIDs(r.tokenIDs)
		}
		out.Choices = append(out.Choices, ch)
	}
	return respondCollected(c, out, nil)
}

// completionLogprobs writes logprobs in the completions form. As in
// OpenAI's API and vLLM, each position's top_logprobs holds the sampled
// token as well as the logprobs alternatives (so logprobs 0 gives the
// sampled token alone), and text_offset counts characters (Unicode code
// points, Python's len), not bytes.
func completionLogprobs(lps []tokenLogprob, offset int) *openai.CompletionLogprobs {
	out := &openai.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*openai.Logprob{}, TopLogprobs: []openai.TopLogprobs{}, TextOffset: []int{}}
	for _, l := range lps {
		lp := openai.Logprob(l.logprob)
		out.Tokens = append(out.Tokens, l.token)
		out.TokenLogprobs = append(out.TokenLogprobs, &lp)
		top := openai.TopLogprobsOf(1+len(l.top), func(i int) (string, openai.Logprob) {
			if i == 0 {
				return l.token, lp
			}
			return l.top[i-1].token, openai.Logprob(l.top[i-1].logprob)
		})
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += utf8.RuneCountInString(l.token)
	}
	return out
}

type completionStreamer struct {
	id          string
	created     int64
	model       string
	fingerprint string
	// echo is the prompt text a choice starts with ("" without echo),
	// sent with its first tokens as vLLM does; echoLogprobs, with echo
	// and logprobs, is that prompt's logprobs from the engine's prompt
	// logprobs (which come with the first tokens).
	echo         func(choice int) string
	echoLogprobs func(choice int, lp *wire.Logprobs) *openai.CompletionLogprobs
	logprobs     bool
	started      map[int]bool // choices whose first chunk is sent
	sent         map[int]int  // text characters sent per choice: the next text_offset
	// promptIDs, with return_token_ids, is a choice's prompt, sent on its
	// first chunk (sentPrompt); every chunk then carries its tokens.
	promptIDs  func(choice int) []int32
	sentPrompt map[int]bool
	heldIDs    map[int][]int32 // tokens of events that sent no chunk, for the next (chatStreamer's)
}

// withTokenIDs adds return_token_ids' fields to a chunk's choice.
func (cs *completionStreamer) withTokenIDs(choice *openai.CompletionChunkChoice, ids []int32) {
	if cs.promptIDs == nil {
		return
	}
	if !cs.sentPrompt[choice.Index] {
		cs.sentPrompt[choice.Index] = true
		choice.PromptTokenIDs = cs.promptIDs(choice.Index)
	}
	choice.TokenIDs = takeIDs(cs.heldIDs, choice.Index, ids)
}

func (cs *completionStreamer) base() openai.CompletionChunk {
	return openai.CompletionChunk{ID: cs.id, Object: openai.ObjectTextCompletion, Created: cs.created, Model: cs.model, SystemFingerprint: cs.fingerprint}
}

// first sends nothing: completions have no role chunk, and the echo goes
// with the first tokens.
func (cs *completionStreamer) first(int, *openai.Usage) any { return nil }

// progress: llama-server's completions stream sends no prompt_progress.
func (cs *completionStreamer) progress(int) any { return nil }

// chunk is a choice's next text and logprobs. A choice's first chunk
// starts with its echoed prompt and, with logprobs, the prompt's
// logprobs (the first token's null), as vLLM's; text_offset counts the
// choice's text sent before.
func (cs *completionStreamer) chunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	first := !cs.started[ev.index]
	echo := ""
	if first {
		echo = cs.echo(ev.index)
	}
	echoing := first && (echo != "" || cs.echoLogprobs != nil)
	if !echoing && ev.text == "" && ev.finish == "" && len(lps) == 0 {
		if cs.promptIDs != nil {
			cs.heldIDs = holdIDs(cs.heldIDs, ev.index, ev.tokenIDs)
		}
		return nil
	}
	cs.started[ev.index] = true
	offset := cs.sent[ev.index]
	text := echo + ev.text
	cs.sent[ev.index] += utf8.RuneCountInString(text)
	ch := cs.base()
	choice := openai.CompletionChunkChoice{Index: ev.index, Text: text}
	if cs.logprobs {
		choice.Logprobs = completionLogprobs(lps, offset+utf8.RuneCountInString(echo))
		if echoing && cs.echoLogprobs != nil {
			choice.Logprobs = appendLogprobs(cs.echoLogprobs(ev.index, ev.promptLogprobs), choice.Logprobs)
		}
	}
	if ev.finish != "" {
		f := ev.finish
		choice.FinishReason = &f
		choice.StopReason = stopReasonOf(ev.stopReason)
	}
	cs.withTokenIDs(&choice, ev.tokenIDs)
	ch.Choices = []openai.CompletionChunkChoice{choice}
	ch.Usage = u
	return ch
}

func (cs *completionStreamer) usage(u openai.Usage, m *openai.PerRequestMetrics) any {
	ch := cs.base()
	ch.Choices = []openai.CompletionChunkChoice{}
	ch.Usage = &u
	ch.Metrics = m
	return ch
}
