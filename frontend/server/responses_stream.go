package server

import (
	"github.com/labstack/echo/v4"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// responseStream writes the Responses API's streaming events with
// increasing sequence numbers.
type responseStream struct {
	out *sse
	seq int // next sequence number
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
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta…,
// response.output_text.done, response.content_part.done,
// response.output_item.done, response.completed (whose status is
// "incomplete" when max_output_tokens cut it short). A failure after the first event is an
// `error` event, which the SDKs raise.
func (s *Server) streamResponse(c echo.Context, gens []*genRequest, call *responseCall) error {
	ctx := c.Request().Context()
	events, cancel, err := s.startAll(ctx, gens)
	if err != nil {
		return writeError(c, engineError(err))
	}
	defer cancel()
	w := &responseStream{out: &sse{c: c}}
	const outputIndex, contentIndex = 0, 0
	steps := []func() error{
		func() error { return w.lifecycle("response.created", call.resp) },
		func() error { return w.lifecycle("response.in_progress", call.resp) },
		func() error {
			return w.out.sendEvent("response.output_item.added", openai.ResponseOutputItemEvent{Type: "response.output_item.added",
				SequenceNumber: w.next(), OutputIndex: outputIndex,
				Item: openai.ResponseOutputItem{Type: "message", ID: call.msgID, Status: openai.ResponseStatusInProgress, Role: "assistant"}})
		},
		func() error {
			return w.out.sendEvent("response.content_part.added", openai.ResponseContentPartEvent{Type: "response.content_part.added",
				SequenceNumber: w.next(), ItemID: call.msgID, OutputIndex: outputIndex, ContentIndex: contentIndex,
				Part: openai.ResponseOutputText{Type: "output_text"}})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil
		}
	}
	res := []*choiceResult{{}}
	r := res[0]
	for r.finish == "" {
		var ev choiceEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			return nil // the client left; cancel aborts the request
		}
		if ev.err != nil {
			e := engineError(ev.err)
			code := e.Type
			if sc, ok := e.Code.(string); ok {
				code = sc
			}
			_ = w.out.sendEvent("error", openai.ResponseErrorEvent{Type: "error", SequenceNumber: w.next(), Code: &code, Message: e.Message, Param: e.Param})
			return nil
		}
		lps := s.decodeLogprobs(ev.logprobs)
		r.text.WriteString(ev.text)
		r.numTokens += len(ev.tokenIDs)
		r.numCached = max(r.numCached, ev.numCached)
		r.logprobs = append(r.logprobs, lps...)
		if ev.finish != "" {
			r.finish, r.stopReason = ev.finish, stopReasonOf(ev.stopReason)
		}
		if ev.text == "" {
			continue
		}
		delta := openai.ResponseTextDeltaEvent{Type: "response.output_text.delta", SequenceNumber: w.next(), ItemID: call.msgID,
			OutputIndex: outputIndex, ContentIndex: contentIndex, Delta: ev.text}
		if call.logprobs {
			delta.Logprobs = chatTokenLogprobs(lps)
		}
		if err := w.out.sendEvent(delta.Type, delta); err != nil {
			return nil
		}
	}
	s.finishResponse(call, r, usageOf(gens, res))
	item := call.resp.Output[0]
	part := item.Content[0]
	steps = []func() error{
		func() error {
			return w.out.sendEvent("response.output_text.done", openai.ResponseTextDoneEvent{Type: "response.output_text.done",
				SequenceNumber: w.next(), ItemID: call.msgID, OutputIndex: outputIndex, ContentIndex: contentIndex,
				Text: part.Text, Logprobs: part.Logprobs})
		},
		func() error {
			return w.out.sendEvent("response.content_part.done", openai.ResponseContentPartEvent{Type: "response.content_part.done",
				SequenceNumber: w.next(), ItemID: call.msgID, OutputIndex: outputIndex, ContentIndex: contentIndex, Part: part})
		},
		func() error {
			return w.out.sendEvent("response.output_item.done", openai.ResponseOutputItemEvent{Type: "response.output_item.done",
				SequenceNumber: w.next(), OutputIndex: outputIndex, Item: item})
		},
		// Always response.completed, with status "incomplete" when cut
		// short, as vLLM does: the SDKs' stream helpers only finish on it.
		func() error { return w.lifecycle("response.completed", call.resp) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil
		}
	}
	return nil
}
