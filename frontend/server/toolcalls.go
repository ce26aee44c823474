package server

import (
	"crypto/rand"
	"encoding/json"
	"slices"

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
	content, calls, ok := toolparse.ExtractWith(f.NewTyped(plan.Names, plan.Types), text)
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

// forcedParser reads the calls of a forced answer (tool_choice required
// or named) as it arrives.
func forcedParser(plan openai.ToolPlan) toolparse.Parser {
	if plan.Mode == openai.ToolsNamed {
		return toolparse.Named(plan.Name)
	}
	return toolparse.Required(plan.Names)
}

// autoChunk streams a tool_choice "auto" answer through its choice's
// parser: content and call deltas as the parser lets them go (see
// callChunks), and finish_reason tool_calls when the answer stopped after
// calls.
func (cs *chatStreamer) autoChunk(ev *choiceEvent, lps []tokenLogprob, u *openai.Usage) any {
	p := cs.parsers[ev.index]
	if p == nil {
		p = cs.auto.NewTyped(cs.tools.Names, cs.tools.Types)
		cs.parsers[ev.index] = p
	}
	d := p.Push(ev.text)
	if ev.finish != "" {
		d.Append(p.Finish())
	}
	return cs.callChunks(ev, d, lps, u, true)
}

// toolChunk streams a forced answer (tool_choice required or named) call
// by call as it is generated, as vLLM does: each call's first delta has
// its id, type and name, the later ones its arguments (compact) as they
// come. finish_reason is tool_calls for "required" and stays "stop" for a
// named call (as OpenAI and vLLM report it); cut by max_tokens, it is
// length, after the deltas of the calls so far (never the text as
// content: a call cut before its name is not sent).
func (cs *chatStreamer) toolChunk(ev *choiceEvent, u *openai.Usage) any {
	p := cs.parsers[ev.index]
	if p == nil {
		p = forcedParser(cs.tools)
		cs.parsers[ev.index] = p
	}
	d := p.Push(ev.text)
	if ev.finish != "" {
		last := p.Finish()
		if ev.finish == openai.FinishLength {
			last.Content = ""
		}
		d.Append(last)
	}
	return cs.callChunks(ev, d, nil, u, cs.tools.Mode != openai.ToolsNamed)
}

// callChunks sends a parser's delta: its content, then each call delta in
// a chunk of its own (the first of a call with a new id, type and name;
// the first call's only with parallel_tool_calls false), the finish
// reason on the last, tool_calls when toolCalls is set and the answer
// stopped after calls. Logprobs go with the first chunk.
func (cs *chatStreamer) callChunks(ev *choiceEvent, d toolparse.Delta, lps []tokenLogprob, u *openai.Usage, toolCalls bool) any {
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
		if toolCalls && cs.called[ev.index] && f == openai.FinishStop {
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
		if cs.legacy {
			openai.LegacyDelta(&choices[i])
		}
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
// answer that max_tokens cut (finish_reason stays length): a named call
// with its arguments so far, as streamed (compact; as vLLM returns it);
// for "required", the calls that were whole (vLLM gives none at all,
// though its stream has sent them, so an agent's turn loses the calls it
// could run; the cut one's arguments are not JSON, and an agent
// framework would report it as a failed call). No call (when the cut
// came before one was whole) leaves content "" in place of the cut text.
func cutToolAnswer(ch *openai.ChatChoice, plan openai.ToolPlan, text string, newID func() string) {
	empty := ""
	ch.Message.Content = &empty
	_, calls, ok := toolparse.ExtractWith(forcedParser(plan), text)
	if !ok {
		return
	}
	if plan.Mode != openai.ToolsNamed {
		calls = slices.DeleteFunc(calls, func(c toolparse.Call) bool { return !json.Valid([]byte(c.Arguments)) })
	}
	if plan.OneCall && len(calls) > 1 {
		calls = calls[:1]
	}
	if len(calls) == 0 {
		return
	}
	ch.Message.Content, ch.Message.ToolCalls = nil, apiToolCalls(calls, newID)
}
