package server

import (
	"crypto/rand"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// toolCallID is a new tool call id, as vLLM names them.
func toolCallID() string { return "chatcmpl-tool-" + randomHex(16) }

// shortToolCallID is a new tool call id of 9 letters and digits, the only
// ids Mistral's chat templates take back (as vLLM's Mistral ids).
func shortToolCallID() string { return randomAlnum(9) }

// randomAlnum is n random letters and digits.
func randomAlnum(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// toolIDs returns the call id maker for the server's tool-call format.
func (s *Server) toolIDs() func() string {
	if f := s.cfg.ToolParser; f != nil && f.ShortIDs {
		return shortToolCallID
	}
	return toolCallID
}

// autoTools returns the parser format that reads calls out of a request's
// answers: the server's, when tool_choice is "auto" (or absent, with
// tools); nil when the answers stay text.
func (s *Server) autoTools(plan openai.ToolPlan) *toolparse.Format {
	if plan.Mode != openai.ToolsAuto {
		return nil
	}
	return s.cfg.ToolParser
}

// apiToolCalls gives parsed calls their ids.
func apiToolCalls(calls []toolparse.Call, newID func() string) []openai.ToolCall {
	out := make([]openai.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = openai.ToolCall{ID: newID(), Type: "function", Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

// withToolCalls makes a finished choice's message its calls read out of
// its text (under tool_choice "auto"; the first only with
// parallel_tool_calls false): content what is left (null when nothing),
// finish_reason tool_calls when it stopped (a call cut by max_tokens keeps
// "length"). It reports whether there were calls.
func withToolCalls(ch *openai.ChatChoice, f *toolparse.Format, plan openai.ToolPlan, echo, text string, newID func() string) bool {
	content, calls, ok := f.Extract(text, plan.Names)
	if !ok {
		return false
	}
	if plan.OneCall {
		calls = calls[:1]
	}
	ch.Message.Content = nil
	if c := echo + content; c != "" {
		ch.Message.Content = &c
	}
	ch.Message.ToolCalls = apiToolCalls(calls, newID)
	if ch.FinishReason == openai.FinishStop {
		ch.FinishReason, ch.StopReason = openai.FinishToolCalls, openai.StopReason{}
	}
	return true
}

// autoChunk streams a tool_choice "auto" answer through its choice's
// parser: content and call deltas as the parser lets them go (the first
// call's only with parallel_tool_calls false), each call delta in a chunk
// of its own (the first with id, type and name), and finish_reason
// tool_calls when the answer stopped after calls.
func (cs *chatStreamer) autoChunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	p := cs.parsers[ev.index]
	if p == nil {
		p = cs.auto.New(cs.tools.Names)
		cs.parsers[ev.index] = p
	}
	d := p.Push(ev.text)
	if ev.finish != "" {
		d.Append(p.Finish())
	}
	if cs.tools.OneCall {
		d.Calls = slices.DeleteFunc(d.Calls, func(c toolparse.CallDelta) bool { return c.Index > 0 }) // the first call only
	}
	var choices []openai.ChatChunkChoice
	switch {
	case d.Content != "":
		t := d.Content
		choices = append(choices, openai.ChatChunkChoice{Index: ev.index, Delta: openai.ChatDelta{Content: &t}})
	case len(d.Calls) == 0 && ev.finish == "" && len(lps) > 0: // logprobs of text held back: no empty content delta
		choices = append(choices, openai.ChatChunkChoice{Index: ev.index})
	}
	for _, c := range d.Calls {
		td := openai.ToolCallDelta{Index: c.Index, Function: openai.FunctionCallDelta{Name: c.Name, Arguments: c.Arguments}}
		if c.Name != "" {
			td.ID, td.Type = cs.newID(), "function"
			cs.called[ev.index] = true
		}
		choices = append(choices, openai.ChatChunkChoice{Index: ev.index, Delta: openai.ChatDelta{ToolCalls: []openai.ToolCallDelta{td}}})
	}
	if ev.finish != "" {
		if len(choices) == 0 {
			choices = append(choices, openai.ChatChunkChoice{Index: ev.index})
		}
		last := &choices[len(choices)-1]
		f := ev.finish
		if cs.called[ev.index] && f == openai.FinishStop {
			f = openai.FinishToolCalls
		} else {
			last.StopReason = stopReasonOf(ev.stopReason)
		}
		last.FinishReason = &f
	}
	if len(choices) == 0 {
		return nil
	}
	out := make(chunks, len(choices))
	for i := range choices {
		if cs.logprobs {
			choices[i].Logprobs = chatLogprobs(lps)
			lps = nil // with the first chunk
		}
		ch := cs.base()
		ch.Choices = choices[i : i+1]
		ch.Usage = u
		out[i] = ch
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

// cutToolAnswer is the message of a tool_choice named or "required"
// answer that max_tokens cut (finish_reason stays length), as vLLM's: a
// named call with its arguments so far (no call when there are none); for
// "required", whose answer vLLM parses only whole, no calls. The content is
// "" in place of the cut text.
func cutToolAnswer(ch *openai.ChatChoice, plan openai.ToolPlan, text string, newID func() string) {
	empty := ""
	ch.Message.Content = &empty
	if plan.Mode != openai.ToolsNamed || strings.TrimSpace(text) == "" {
		return
	}
	ch.Message.Content = nil
	ch.Message.ToolCalls, _ = plan.PartialToolCalls(text, newID)
}

// toolChunk keeps a tool-call answer's text (tool_choice required or
// named) until it ends, then sends its calls as one delta with
// finish_reason tool_calls ("stop" for a named call, as OpenAI and vLLM),
// or, cut by max_tokens, the calls so far with finish_reason length (vLLM
// streams a cut call's arguments as they come; nothing when not even a
// name is there, never the text as content).
func (cs *chatStreamer) toolChunk(ev *choiceEvent, u *openai.Usage) any {
	b := cs.calls[ev.index]
	if b == nil {
		b = &strings.Builder{}
		cs.calls[ev.index] = b
	}
	b.WriteString(ev.text)
	if ev.finish == "" {
		return nil
	}
	ch := cs.base()
	choice := openai.ChatChunkChoice{Index: ev.index}
	f := ev.finish
	if calls, ok := cs.tools.ToolCalls(b.String(), cs.newID); ok && ev.finish == openai.FinishStop {
		for i, c := range calls {
			choice.Delta.ToolCalls = append(choice.Delta.ToolCalls, openai.ToolCallDelta{Index: i, ID: c.ID, Type: c.Type,
				Function: openai.FunctionCallDelta{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
		if cs.tools.Mode == openai.ToolsRequired {
			f = openai.FinishToolCalls
		} else {
			choice.StopReason = stopReasonOf(ev.stopReason)
		}
	} else if ev.finish == openai.FinishLength {
		calls, _ := cs.tools.PartialToolCalls(b.String(), cs.newID)
		if cs.tools.Mode == openai.ToolsNamed && strings.TrimSpace(b.String()) == "" {
			calls = nil
		}
		for i, c := range calls {
			choice.Delta.ToolCalls = append(choice.Delta.ToolCalls, openai.ToolCallDelta{Index: i, ID: c.ID, Type: c.Type,
				Function: openai.FunctionCallDelta{Name: c.Function.Name, Arguments: c.Function.Arguments}})
		}
		choice.StopReason = stopReasonOf(ev.stopReason)
	} else {
		if t := b.String(); t != "" {
			choice.Delta.Content = &t
		}
		choice.StopReason = stopReasonOf(ev.stopReason)
	}
	choice.FinishReason = &f
	ch.Choices = []openai.ChatChunkChoice{choice}
	ch.Usage = u
	return ch
}
