package server

import (
	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/anthropic"
)

// streamMessage runs the answer and streams it as Anthropic's events
// (anthropic.Stream). message_start waits for the engine's first output,
// which says how much of the prompt the prefix cache held (usage splits
// it off as cache_read_input_tokens), as llama-server's does; a failure
// before it is an HTTP error, one after it an `event: error`, which the
// SDKs raise.
func (s *Server) streamMessage(c echo.Context, g *genRequest, call *messageCall) error {
	ctx := c.Request().Context()
	events, cancel, err := s.startAll(ctx, []*genRequest{g})
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	out := &sse{c: c}
	var st anthropic.Stream
	started := false
	numTokens, numCached := 0, 0
	for {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil // the client left; cancel aborts the request
		}
		if ev.err != nil {
			e := engineError(ev.err)
			if !started {
				return writeError(c, e)
			}
			_ = out.sendEvent(anthropic.EventError, anthropicError(e))
			return nil
		}
		numTokens += len(ev.tokenIDs)
		numCached = max(numCached, ev.numCached)
		if !started {
			call.resp.Usage = anthropic.UsageOf(call.numPrompt, numCached, 0)
			st.Start(call.resp)
			started = true
		}
		text := ev.text
		if call.split != nil {
			var thought string
			thought, text = call.split.Next(text, ev.finish != "")
			st.Thinking(thought)
		}
		call.write(&st, text, ev.finish)
		if ev.finish != "" {
			reason, stop := anthropic.StopReasonOf(ev.finish, stopSequence(ev.finish, stopReasonOf(ev.stopReason)), st.ToolUsed())
			st.Finish(reason, stop, anthropic.UsageOf(call.numPrompt, numCached, numTokens))
		}
		for _, e := range st.Take() {
			if out.writeEvent(e.Name, e.Data) != nil {
				return nil
			}
		}
		if ev.finish != "" {
			out.flush()
			return nil
		}
		if len(events) == 0 { // nothing more ready: send what is written
			out.flush()
		}
	}
}
