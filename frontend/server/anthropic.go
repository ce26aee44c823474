package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/anthropic"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens)
// on the chat pipeline: package anthropic turns the body into a chat
// request, which is rendered, tokenized and generated as a one-choice chat
// completion (tools, tool_choice and sessions as in chat), and the answer
// back into a message or its events (anthropic_stream.go). Errors on these
// routes take Anthropic's shape (writeError). See docs/api.md.

// mountAnthropic adds the Messages API's routes.
func (s *Server) mountAnthropic(e *echo.Echo) {
	e.POST("/v1/messages", s.messages)
	e.POST("/v1/messages/count_tokens", s.countMessageTokens)
}

// isAnthropicPath reports whether a path is the Messages API's, whose
// errors are Anthropic's.
func isAnthropicPath(p string) bool {
	return p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/")
}

// anthropicChat decodes a Messages body with decode and turns it into its
// chat request, checked as chat requests are.
func anthropicChat(c echo.Context, decode func([]byte) (*anthropic.Request, error)) (*anthropic.Request, *openai.ChatCompletionRequest, *openai.Error) {
	body, e := requestBody(c)
	if e != nil {
		return nil, nil, e
	}
	req, err := decode(body)
	if err != nil {
		var fe *anthropic.FieldError
		if errors.As(err, &fe) {
			return nil, nil, openai.BadRequest(fe.Path, "%s", fe.Error())
		}
		return nil, nil, openai.BadRequest("", "%v", err)
	}
	b, err := req.ChatBody()
	if err != nil {
		return nil, nil, openai.Internal("converting the request: %v", err)
	}
	var chat openai.ChatCompletionRequest
	if e := openai.Decode(b, &chat); e != nil {
		return nil, nil, e
	}
	if e := chat.Validate(); e != nil {
		return nil, nil, e
	}
	return req, &chat, nil
}

// countMessageTokens serves POST /v1/messages/count_tokens: the prompt
// tokens the request would run (system, messages and tools through the
// chat template), counted without running it.
func (s *Server) countMessageTokens(c echo.Context) error {
	_, chat, e := anthropicChat(c, anthropic.DecodeCountTokens)
	if e != nil {
		return writeError(c, e)
	}
	text, e := s.renderChat(chat)
	if e != nil {
		return writeError(c, e)
	}
	return c.JSON(http.StatusOK, map[string]int{"input_tokens": len(s.tok.Encode(text, false))})
}

// messageCall is one POST /v1/messages in flight.
type messageCall struct {
	resp      anthropic.Response // id, model and usage so far
	numPrompt int
	plan      openai.ToolPlan
	auto      *toolparse.Format   // reads calls out of tool_choice auto answers; nil: text
	parser    toolparse.Parser    // auto's, or a forced answer's (tool_choice any or tool), made at the first text
	newID     func() string       // tool_use ids
	think     *thinker            // splits the reasoning off as a thinking block; nil: none
	split     *reasoning.Splitter // think's, for a stream; nil: none
}

// messages serves POST /v1/messages.
func (s *Server) messages(c echo.Context) error {
	req, chat, e := anthropicChat(c, anthropic.DecodeMessages)
	if e != nil {
		return writeError(c, e)
	}
	cm, e := s.resolveCommon(c, &chat.Params) // any model name: Anthropic's clients send Claude's, as llama-server takes them
	if e != nil {
		return writeError(c, e)
	}
	text, e := s.renderChat(chat)
	if e != nil {
		return writeError(c, e)
	}
	prompt := s.tok.Encode(text, false)
	if len(prompt) >= s.cfg.MaxModelLen { // Anthropic's words, which clients such as Claude Code act on
		e := openai.BadRequest("messages", "prompt is too long: %d tokens > %d maximum", len(prompt), s.cfg.MaxModelLen-1)
		e.Code = openai.CodeContextLengthExceeded
		return writeError(c, e)
	}
	// max_tokens is a cap: the answer may run to the end of the context,
	// as llama-server's (clients send 32,000 and more).
	maxTokens, e := s.checkLength(len(prompt), min(*req.MaxTokens, s.cfg.MaxModelLen-len(prompt)), true)
	if e != nil {
		return writeError(c, e)
	}
	sp, e := samplingParams(&chat.Params, maxTokens, nil, s.tok.EOS())
	if e != nil {
		return writeError(c, e)
	}
	plan, e := chat.ToolPlanOf()
	if e != nil {
		return writeError(c, e)
	}
	if plan.Constraint != nil {
		sp.StructuredOutputs = plan.Constraint
	}
	call := &messageCall{numPrompt: len(prompt), plan: plan, auto: s.autoTools(plan), newID: s.toolUseIDs(), think: s.thinkerFor(text, &sp, thinkOptionsOf(&chat.Params, false))}
	id := "msg_" + cm.baseID
	call.resp = anthropic.NewResponse(id, s.cfg.ServedModelName, anthropic.UsageOf(len(prompt), 0, 0))
	g := cm.newGen(id, prompt, sp, &chat.Params, skipSpecialOf(nil, call.auto, call.think))
	if req.Stream {
		call.split = call.think.splitter()
		return s.streamMessage(c, g, call)
	}
	out, err := s.generateMessage(c.Request().Context(), g, call)
	return respondCollected(c, out, err)
}

// generateMessage generates the whole answer as a message.
func (s *Server) generateMessage(ctx context.Context, g *genRequest, call *messageCall) (anthropic.Response, error) {
	gens := []*genRequest{g}
	res, err := s.collect(ctx, gens, s.startAll, false)
	if err != nil {
		return anthropic.Response{}, err
	}
	r := res[0]
	var b anthropic.Builder
	thought, answer := call.think.split(r.text.String())
	b.Thinking(thought)
	call.write(&b, answer, r.finish)
	reason, stop := anthropic.StopReasonOf(r.finish, stopSequence(r.finish, r.stopReason), b.ToolUsed())
	call.resp.Usage = anthropic.UsageOf(call.numPrompt, r.numCached, r.numTokens)
	return call.resp.Finished(b.Blocks(), reason, stop), nil
}

// answerWriter takes an answer piece by piece: an anthropic.Builder (the
// whole message) or an anthropic.Stream (its events).
type answerWriter interface {
	Text(s string)
	ToolUse(id, name string)
	InputJSON(partial string)
}

// write writes the next piece of the answer's text (finish set on the
// last): as text; under tool_choice auto, as the text and calls the
// server's tool-call parser reads out of it (the first call only with
// disable_parallel_tool_use); under any or tool, as the calls the
// constrained answer is, each streamed as it is written, as chat's (a
// call cut by max_tokens keeps the arguments it has, {} when they are not
// an object yet; a cut answer's text that is no call yet is dropped).
func (call *messageCall) write(w answerWriter, text, finish string) {
	forced := call.plan.Forced()
	if !forced && call.auto == nil {
		w.Text(text)
		return
	}
	if call.parser == nil {
		if forced {
			call.parser = forcedParser(call.plan)
		} else {
			call.parser = call.auto.NewTyped(call.plan.Names, call.plan.Types)
		}
	}
	d := call.parser.Push(text)
	if finish != "" {
		d.Append(call.parser.Finish())
	}
	if !forced || finish != openai.FinishLength {
		w.Text(d.Content) // forced: only an answer that is no call, which the constraint does not let happen
	}
	for _, cd := range d.Calls {
		if call.plan.OneCall && cd.Index > 0 {
			continue
		}
		if cd.Name != "" {
			w.ToolUse(call.newID(), cd.Name)
		}
		w.InputJSON(cd.Arguments)
	}
}

// stopSequence is the stop sequence that ended a choice, nil for none.
func stopSequence(finish string, r openai.StopReason) *string {
	if finish != openai.FinishStop || r.IsToken || r.Text == "" {
		return nil
	}
	return &r.Text
}

// toolUseIDs returns the tool_use id maker: toolu_ and 24 letters and
// digits, as Anthropic's look, or the 9-character ids of a tool-call
// format whose templates take only those (Mistral's).
func (s *Server) toolUseIDs() func() string {
	if f := s.cfg.ToolParser; f != nil && f.ShortIDs {
		return shortToolCallID
	}
	return func() string { return "toolu_" + randomAlnum(24) }
}

// anthropicError is an API error as Anthropic's, for a stream's error
// event.
func anthropicError(e *openai.Error) anthropic.Error {
	return anthropic.NewError(e.Status, e.Message)
}
