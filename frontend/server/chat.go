package server

import (
	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// chat serves POST /v1/chat/completions.
func (s *Server) chat(c echo.Context) error {
	var req openai.ChatCompletionRequest
	if e := readBody(c, &req); e != nil {
		return writeError(c, e)
	}
	if e := req.Validate(); e != nil {
		return writeError(c, e)
	}
	cm, e := s.resolveCommon(c, &req.Params)
	if e != nil {
		return writeError(c, e)
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content.Text}
	}
	text, err := s.tok.ChatTemplate().Render(msgs, req.AddGenPrompt(), req.ChatTemplateKwargs)
	if err != nil {
		return writeError(c, openai.BadRequest("messages", "chat template: %v", err))
	}
	if req.ContinueFinalMessage {
		// The template closed the last message; continue it instead.
		text = trimFinalTurnEnd(text, msgs)
	}
	prompt := s.tok.Encode(text, false)
	maxOut, set := req.MaxOutputTokens()
	maxTokens, e := s.checkLength(len(prompt), maxOut, set)
	if e != nil {
		return writeError(c, e)
	}
	var lp *int
	if req.Logprobs {
		k := 0
		if req.TopLogprobs != nil {
			k = *req.TopLogprobs
		}
		lp = &k
	}
	sp, e := samplingParams(&req.Params, maxTokens, lp, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	id := "chatcmpl-" + cm.baseID
	g := &genRequest{
		internalID:  id + "-" + randomHex(4),
		externalID:  id,
		prompt:      prompt,
		params:      sp,
		n:           req.NumChoices(),
		sessionID:   cm.sessionID,
		source:      cm.source,
		cacheSalt:   req.CacheSalt,
		priority:    req.Priority,
		rank:        cm.rank,
		stops:       req.Stop,
		includeStop: req.IncludeStopStr,
		skipSpecial: req.SkipSpecial(),
	}
	created := nowUnix()
	gens := []*genRequest{g}
	if req.Stream {
		return s.stream(c, gens, &chatStreamer{id: id, created: created, model: s.cfg.ServedModelName, logprobs: req.Logprobs}, req.IncludeUsage(), req.ContinuousUsage())
	}
	res, err := s.collect(c.Request().Context(), gens)
	if err != nil {
		return respondCollected(c, nil, err)
	}
	out := openai.ChatCompletion{ID: id, Object: openai.ObjectChatCompletion, Created: created, Model: s.cfg.ServedModelName, Usage: usageOf(gens, res)}
	for i, r := range res {
		ch := openai.ChatChoice{
			Index:        i,
			Message:      openai.AssistantMessage{Role: "assistant", Content: r.text.String()},
			FinishReason: r.finish,
			StopReason:   r.stopReason,
		}
		if req.Logprobs {
			ch.Logprobs = chatLogprobs(r.logprobs)
		}
		out.Choices = append(out.Choices, ch)
	}
	return respondCollected(c, out, nil)
}

// trimFinalTurnEnd removes what the template appended after the last
// message's content, so generation continues that message.
func trimFinalTurnEnd(text string, msgs []tokenizer.Message) string {
	last := msgs[len(msgs)-1].Content
	for i := len(text) - len(last); i >= 0; i-- {
		if text[i:i+len(last)] == last {
			return text[:i+len(last)]
		}
	}
	return text
}

func chatLogprobs(lps []tokenLogprob) *openai.ChatLogprobs {
	out := &openai.ChatLogprobs{Content: []openai.ChatTokenLogprob{}}
	for _, l := range lps {
		e := openai.ChatTokenLogprob{Token: l.token, Bytes: l.bytes, Logprob: openai.Logprob(l.logprob), TopLogprobs: []openai.ChatTopLogprob{}}
		for _, t := range l.top {
			e.TopLogprobs = append(e.TopLogprobs, openai.ChatTopLogprob{Token: t.token, Bytes: t.bytes, Logprob: openai.Logprob(t.logprob)})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

type chatStreamer struct {
	id       string
	created  int64
	model    string
	logprobs bool
}

func (cs *chatStreamer) base() openai.ChatCompletionChunk {
	return openai.ChatCompletionChunk{ID: cs.id, Object: openai.ObjectChatCompletionChunk, Created: cs.created, Model: cs.model}
}

func (cs *chatStreamer) first(index int) any {
	ch := cs.base()
	empty := ""
	ch.Choices = []openai.ChatChunkChoice{{Index: index, Delta: openai.ChatDelta{Role: "assistant", Content: &empty}}}
	return ch
}

func (cs *chatStreamer) chunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	if ev.text == "" && ev.finish == "" && len(lps) == 0 {
		return nil
	}
	ch := cs.base()
	choice := openai.ChatChunkChoice{Index: ev.index}
	if ev.text != "" || ev.finish == "" {
		t := ev.text
		choice.Delta.Content = &t
	}
	if cs.logprobs {
		choice.Logprobs = chatLogprobs(lps)
	}
	if ev.finish != "" {
		f := ev.finish
		choice.FinishReason = &f
		choice.StopReason = stopReasonOf(ev.stopReason)
	}
	ch.Choices = []openai.ChatChunkChoice{choice}
	ch.Usage = u
	return ch
}

func (cs *chatStreamer) usage(u openai.Usage) any {
	ch := cs.base()
	ch.Choices = []openai.ChatChunkChoice{}
	ch.Usage = &u
	return ch
}
