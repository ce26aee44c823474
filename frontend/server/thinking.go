package server

import (
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/toolparse"
	"github.com/tandem-llm/tandem/wire"
)

// thinker splits one request's answers into reasoning and content
// (the server's --reasoning-parser): the format, and whether the prompt
// opened the think block.
type thinker struct {
	f    *reasoning.Format
	open bool
}

// reasoningFormat is a chat request's reasoning_format, else the
// server's --reasoning-format ("auto" when unset).
func (s *Server) reasoningFormat(req string) string {
	switch {
	case req != "":
		return req
	case s.cfg.ReasoningFormat != "":
		return s.cfg.ReasoningFormat
	}
	return "auto"
}

// thinkOptions are a request's say over its think block.
type thinkOptions struct {
	beam    bool    // a beam search: expansions constrained from their first token, no budget, no split
	budget  *int    // the thinking budget; nil: --reasoning-budget's, if any
	message *string // forced before the end tag when the budget is spent; nil: --reasoning-budget-message
}

// thinkOptionsOf reads a request's thinking budget and message.
func thinkOptionsOf(p *openai.Params, beam bool) thinkOptions {
	return thinkOptions{beam: beam, budget: p.ThinkingBudget(), message: p.ReasoningBudgetMessage}
}

// thinkerFor returns the split for a request with this rendered prompt,
// nil when the server has no reasoning parser. The engine follows the
// answer through its think block when it must: sp then names the think
// tags (the start tag too when the answer may open the block), unless
// the prompt closed the block.
//   - A constrained request (structured outputs, forced tool calls)
//     thinks first, as with vLLM: the engine applies the constraint from
//     the token after the end tag (or from the first token when the
//     answer does not open the block).
//   - A thinking budget bounds the tokens of the block; then the engine
//     forces the budget message and the end tag.
func (s *Server) thinkerFor(prompt string, sp *wire.SamplingParams, o thinkOptions) *thinker {
	f := s.cfg.ReasoningParser
	if f == nil || sp.StructuredOutputs != nil && o.beam {
		return nil
	}
	if !o.beam {
		s.thinkTags(prompt, sp, o)
	}
	return &thinker{f: f, open: f.OpensInPrompt(prompt)}
}

// thinkTags names the think tags in sp when the engine must follow the
// answer through its think block (thinkerFor), with the budget and its
// message. /v1/completions, which splits nothing, uses it for a thinking
// budget.
func (s *Server) thinkTags(prompt string, sp *wire.SamplingParams, o thinkOptions) {
	f, budget, message := s.cfg.ReasoningParser, o.budget, s.cfg.ReasoningBudgetMsg
	if budget == nil {
		budget = s.cfg.ReasoningBudget
	}
	if o.message != nil {
		message = *o.message
	}
	if f == nil || sp.StructuredOutputs == nil && budget == nil || f.ClosedInPrompt(prompt) {
		return
	}
	sp.ReasoningEnd = f.End
	if !f.OpensInPrompt(prompt) {
		sp.ReasoningStart = f.Start
	}
	if budget != nil {
		sp.ThinkingTokenBudget, sp.ReasoningBudgetMessage = budget, message
	}
}

// keepSpecial reports whether the think tags are special tokens, which
// the detokenized answer must keep for the split to see them.
func (t *thinker) keepSpecial() bool { return t != nil && t.f.Special }

// skipSpecialOf is skip_special_tokens for an answer: the request's
// (requested), else false when the tool-call parser's markers (auto) or
// the think tags (think) are special tokens, which the parsers must see,
// as vLLM's parsers set it; else true.
func skipSpecialOf(requested *bool, auto *toolparse.Format, think *thinker) bool {
	if requested != nil {
		return *requested
	}
	return (auto == nil || !auto.KeepSpecial) && !think.keepSpecial()
}

// splitter is a Splitter for one answer, nil for a nil thinker.
func (t *thinker) splitter() *reasoning.Splitter {
	if t == nil {
		return nil
	}
	return t.f.New(t.open)
}

// split splits a whole answer; a nil thinker leaves it content.
func (t *thinker) split(answer string) (reasoning, content string) {
	if t == nil {
		return "", answer
	}
	return t.f.Split(answer, t.open)
}

// withReasoning puts reasoning on a message (both names), unless it is
// empty or the request set include_reasoning false.
func withReasoning(m *openai.AssistantMessage, reasoning string, include *bool) {
	if reasoning == "" || include != nil && !*include {
		return
	}
	m.Reasoning, m.ReasoningContent = &reasoning, &reasoning
}

// thinkChunk splits a streamed event: its reasoning goes out first in a
// chunk of its own (delta reasoning and reasoning_content, with the
// event's logprobs), then the content through contentChunk, the
// streamer's usual path. A splitter per choice holds back what may be a
// tag.
func (cs *chatStreamer) thinkChunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	sp := cs.splitters[ev.index]
	if sp == nil {
		sp = cs.think.splitter()
		cs.splitters[ev.index] = sp
	}
	r, c := sp.Next(ev.text, ev.finish != "")
	var out chunks
	if r != "" && cs.showReasoning {
		ch := cs.base()
		ch.Choices = []openai.ChatChunkChoice{{Index: ev.index, Delta: openai.ChatDelta{Reasoning: &r, ReasoningContent: &r}}}
		if cs.logprobs {
			ch.Choices[0].Logprobs = chatLogprobs(lps)
			lps = nil
		}
		ch.Usage = u
		out = append(out, ch)
	}
	rest := *ev
	rest.text = c
	switch more := cs.contentChunk(&rest, lps, u).(type) {
	case nil:
	case chunks:
		out = append(out, more...)
	default:
		out = append(out, more)
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}
