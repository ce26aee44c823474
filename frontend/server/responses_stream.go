package server

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// eventSink takes a stream's named events: the HTTP response (sse) or
// a streamed background response's log (eventLog).
type eventSink interface {
	sendEvent(name string, v any) error
}

// responseStream writes the Responses API's streaming events with
// increasing sequence numbers.
type responseStream struct {
	out eventSink
	seq int // next sequence number
	// decorate, when set, adds to an output item's event (llama.cpp's
	// timings on text deltas).
	decorate func(typ string, ev any) any
}

func (w *responseStream) next() int {
	n := w.seq
	w.seq++
	return n
}

// lifecycle sends response.created, .in_progress or .completed with a
// snapshot of r.
func (w *responseStream) lifecycle(typ string, r openai.Response) error {
	return w.out.sendEvent(typ, openai.ResponseLifecycleEvent{Type: typ, SequenceNumber: w.next(), Response: &r})
}

// streamResponse runs a response and streams it in OpenAI's event order:
// response.created, response.in_progress, each output item's events
// (outputItems), response.completed (whose status is "incomplete" when
// max_output_tokens cut it short). A failure after the first event is an
// `error` event, which the SDKs raise.
func (s *Server) streamResponse(c echo.Context, gens []*genRequest, call *responseCall) error {
	ctx := c.Request().Context()
	events, cancel, err := s.startAll(ctx, gens)
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	s.sendResponse(ctx, events, gens, call, &sse{c: c})
	return nil
}

// sendResponse streams a started response's events to sink until it
// ends, the context ends, or sink fails; it returns the engine's error
// (which it sent as an `error` event), if any.
func (s *Server) sendResponse(ctx context.Context, events <-chan choiceEvent, gens []*genRequest, call *responseCall, sink eventSink) error {
	w := &responseStream{out: sink}
	if w.lifecycle("response.created", call.resp) != nil || w.lifecycle("response.in_progress", call.resp) != nil {
		return nil
	}
	out := call.newOutput(w)
	res := []*choiceResult{{}}
	r := res[0]
	tele := newRespTelemetry(gens[0], call, r)
	if tele.timings {
		w.decorate = tele.decorate
	}
	for r.finish == "" && out.err == nil {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil // the client left (or a cancel); cancel aborts the request
		}
		if ev.err != nil {
			e := engineError(ev.err)
			code := e.Type
			if sc, ok := e.Code.(string); ok {
				code = sc
			}
			_ = w.out.sendEvent("error", openai.ResponseErrorEvent{Type: "error", SequenceNumber: w.next(), Code: &code, Message: e.Message, Param: e.Param})
			return e
		}
		r.numTokens += len(ev.tokenIDs)
		call.outTokens = append(call.outTokens, ev.tokenIDs...)
		call.outText.WriteString(ev.text)
		r.numCached = max(r.numCached, ev.numCached)
		if ev.finish != "" {
			r.finish, r.stopReason, r.timing = ev.finish, stopReasonOf(ev.stopReason), ev.timing
		}
		if tele.observe(&ev, w, call.resp) != nil {
			return nil
		}
		var lps []openai.ChatTokenLogprob
		if call.logprobs {
			lps = chatTokenLogprobs(s.decodeLogprobs(ev.logprobs, false))
		}
		out.text(ev.text, lps)
	}
	items := out.end(r.finish)
	if out.err != nil {
		return nil
	}
	s.finishResponse(call, items, r.finish, usageOf(gens, res))
	// Always response.completed, with status "incomplete" when cut short,
	// as vLLM does: the SDKs' stream helpers only finish on it.
	if tele.timings {
		_ = w.out.sendEvent("response.completed", withField(openai.ResponseLifecycleEvent{Type: "response.completed", SequenceNumber: w.next(), Response: &call.resp},
			"timings", requestTimings(gens, res)))
		return nil
	}
	_ = w.lifecycle("response.completed", call.resp)
	return nil
}
