package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/decisions"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// createDecisions serves POST /v1/decisions (vLLM 0.33's Decisions API;
// package decisions): one greedy one-token read per question, all
// submitted together, each scoring its labels through logprob_token_ids.
// The reads share the input's tokens, so the prefix cache prefills it once.
func (s *Server) createDecisions(c echo.Context) error {
	body, err := readAll(c.Request())
	if err != nil {
		return writeError(c, openai.BadRequest("", "reading request body: %v", err))
	}
	req, err := decisions.Decode(body)
	if err != nil {
		return writeError(c, openai.BadRequest("", "%v", err))
	}
	p := openai.Params{Model: req.Model}
	if req.CacheSalt != nil {
		p.CacheSalt = *req.CacheSalt
	}
	cm, e := s.resolveCommon(c, &p)
	if e != nil {
		return writeError(c, e)
	}
	labels, e := s.labelIDs()
	if e != nil {
		return writeError(c, e)
	}
	gens := make([]*genRequest, len(req.Questions))
	for i := range req.Questions {
		q := &req.Questions[i]
		chat := &openai.ChatCompletionRequest{ChatTemplateKwargs: map[string]any{"enable_thinking": false},
			Messages: []openai.ChatMessage{{Role: "user", Content: openai.Content{Text: decisions.Content(req.Input.Text, q)}}}}
		text, e := s.renderChat(chat)
		if e != nil {
			e.Param = ptr("input")
			return writeError(c, e)
		}
		prompt := s.tok.Encode(text, false)
		if !slices.Equal(prompt[max(len(prompt)-len(labels.tail), 0):], labels.tail) {
			return writeError(c, openai.BadRequest("input", "these chat options end the prompt differently, so the labels' tokens are unknown"))
		}
		if _, e := s.checkLength(len(prompt), 1, true); e != nil {
			return writeError(c, e)
		}
		n := q.NumLabels()
		sp := wire.DefaultSamplingParams()
		sp.MaxTokens, sp.Temperature, sp.Logprobs, sp.LogprobTokenIDs = 1, 0, &n, labels.ids[:n]
		sp.IgnoreEOS = true // the read is the first token, whatever it is
		gens[i] = &genRequest{internalID: fmt.Sprintf("decision-%s-%d-%s", cm.baseID, i, randomHex(4)), externalID: "decision-" + cm.baseID,
			prompt: prompt, params: sp, n: 1, firstIndex: i, sessionID: cm.sessionID, source: cm.source, cacheSalt: p.CacheSalt,
			rank: cm.rank, lora: cm.lora}
	}
	res, err := s.collect(c.Request().Context(), gens, s.startAll, false)
	if err != nil {
		return respondCollected(c, nil, err)
	}
	reads := make([]decisions.Read, len(res))
	for i, r := range res {
		if len(r.logprobs) == 0 || len(r.logprobs[0].top) != req.Questions[i].NumLabels() {
			return writeError(c, openai.Internal("decisions: the engine returned no label logprobs for question %d", i))
		}
		lps := make([]float64, len(r.logprobs[0].top))
		for j, t := range r.logprobs[0].top {
			lps[j] = t.logprob
		}
		reads[i] = decisions.Read{LabelLogprobs: lps, InputTokens: len(gens[i].prompt), OutputTokens: r.numTokens, CachedTokens: r.numCached}
	}
	return c.JSON(http.StatusOK, decisions.ResponseOf(s.cfg.ServedModelName, req, reads))
}

// decisionLabels are the token ids of the labels A to Z as a reply's first
// token, and the token ids every chat prompt ends with (its generation
// prompt), which the ids are valid after.
type decisionLabels struct {
	ids  []int32
	tail []int32
	err  *openai.Error
}

// labelIDs finds, once, the first reply token of each label: a probe chat
// prompt (one user message, thinking off) with each label appended must
// tokenize as the prompt plus one token of its own, as vLLM's
// reply_label_ids checks; else decisions are a 400 for this model.
func (s *Server) labelIDs() (*decisionLabels, *openai.Error) {
	s.labelsOnce.Do(func() {
		l := &decisionLabels{}
		s.labels = l
		kw := map[string]any{"enable_thinking": false}
		msgs := []openai.ChatMessage{{Role: "user", Content: openai.Content{Text: "x"}}}
		with, e := s.renderChat(&openai.ChatCompletionRequest{Messages: msgs, ChatTemplateKwargs: kw})
		if e != nil {
			l.err = e
			return
		}
		no := false
		without, e := s.renderChat(&openai.ChatCompletionRequest{Messages: msgs, ChatTemplateKwargs: kw, AddGenerationPrompt: &no})
		if e != nil {
			l.err = e
			return
		}
		base, head := s.tok.Encode(with, false), s.tok.Encode(without, false)
		if len(head) <= len(base) && slices.Equal(base[:len(head)], head) {
			l.tail = base[len(head):]
		}
		for _, r := range decisions.Labels {
			ext := s.tok.Encode(with+string(r), false)
			if len(ext) != len(base)+1 || !slices.Equal(ext[:len(base)], base) || slices.Contains(l.ids, ext[len(base)]) {
				l.err = openai.BadRequest("", "label %s is not one distinct token after this model's chat prompt", strconv.Quote(string(r)))
				return
			}
			l.ids = append(l.ids, ext[len(base)])
		}
	})
	return s.labels, s.labels.err
}
