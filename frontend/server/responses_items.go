package server

import (
	"fmt"
	"strings"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/responses"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// outputItems turns a response's answer into its output items as the text
// arrives, one item after the other as OpenAI sends them: text is a
// message item, each call a function_call item. Calls are read by the
// tool-call parser under tool_choice "auto", and out of the constrained
// answer of "required" and a named function as it is generated (the first
// only with parallel_tool_calls false): a call's item is added once its
// name is read, and its arguments stream as they come; a forced answer
// cut before its first call's name is text. When no calls are read (no
// tools, tool_choice "none", or "auto" without a parser) the answer is
// one message, opened at once, empty or not; otherwise an empty message
// is left out. Streaming (w set), it sends each item's events as it goes.
//
// Not streamed, the whole answer is one piece, so its text comes first,
// in one message, and the calls after it; streamed, text the model writes
// after a call is a message of its own after that call.
type outputItems struct {
	call   *responseCall
	w      *responseStream     // nil when not streaming
	parser toolparse.Parser    // tool_choice auto, required or named; nil otherwise
	think  *reasoning.Splitter // splits the reasoning off the answer (a reasoning item first); nil: none

	items       []openai.ResponseOutputItem
	numMessages int                       // message items among them
	open        bool                      // the last item is still being written
	buf         strings.Builder           // the open item's text or arguments so far
	pending     []openai.ChatTokenLogprob // logprobs of tokens whose text has not come out yet
	err         error                     // the first failed send: the client left
}

// newOutput starts call's output items, sending to w when it is set.
func (call *responseCall) newOutput(w *responseStream) *outputItems {
	o := &outputItems{call: call, w: w, think: call.think.splitter()}
	switch {
	case call.auto != nil:
		o.parser = call.auto.NewTyped(call.plan.Names, call.plan.Types)
	case call.plan.Forced():
		o.parser = forcedParser(call.plan)
	case o.think == nil: // with a reasoning split, the message opens after the reasoning
		o.openMessage()
	}
	return o
}

// text takes the next piece of the answer and the logprobs of its tokens
// (nil unless asked for).
func (o *outputItems) text(s string, lps []openai.ChatTokenLogprob) {
	o.pending = append(o.pending, lps...)
	if o.think != nil {
		var r string
		r, s = o.think.Push(s)
		o.reasoning(r)
	}
	o.answer(s)
}

// answer takes the next piece of the answer's content.
func (o *outputItems) answer(s string) {
	if o.parser != nil {
		o.apply(o.parser.Push(s))
		return
	}
	o.apply(toolparse.Delta{Content: s})
}

// end finishes the answer, whose finish reason is finish, and returns the
// items: the last is completed, or incomplete when max_output_tokens cut
// it; the others are completed.
func (o *outputItems) end(finish string) []openai.ResponseOutputItem {
	if o.think != nil {
		r, s := o.think.Finish()
		o.reasoning(r)
		o.answer(s)
		if o.parser == nil && o.numMessages == 0 {
			o.openMessage() // the answer is a message, empty or not
		}
	}
	if o.parser != nil {
		o.apply(o.parser.Finish())
	}
	o.close(responseStatus(finish))
	return o.items
}

// apply adds a parser's delta: its text, then its calls.
func (o *outputItems) apply(d toolparse.Delta) {
	if d.Content != "" {
		o.content(d.Content)
	}
	for _, c := range d.Calls {
		if c.Index > 0 && o.call.plan.OneCall {
			continue // parallel_tool_calls false: the first call only
		}
		if c.Name != "" {
			o.openCall(c.Name)
		}
		if c.Arguments != "" {
			o.arguments(c.Arguments)
		}
	}
}

// last is the open item, or nil.
func (o *outputItems) last() *openai.ResponseOutputItem {
	if !o.open {
		return nil
	}
	return &o.items[len(o.items)-1]
}

func (o *outputItems) content(s string) {
	if it := o.last(); it == nil || it.Type != openai.ItemMessage {
		o.openMessage()
	}
	it := o.last()
	lps := o.pending
	o.pending = nil
	it.Content[0].Logprobs = append(it.Content[0].Logprobs, lps...)
	o.buf.WriteString(s)
	index := len(o.items) - 1
	o.send("response.output_text.delta", func(typ string, seq int) any {
		return openai.ResponseTextDeltaEvent{Type: typ, SequenceNumber: seq, ItemID: it.ID,
			OutputIndex: index, ContentIndex: 0, Delta: s, Logprobs: lps}
	})
}

// reasoning adds the next piece of the reasoning to a reasoning item,
// rs_<id>, opened before the answer's first item.
func (o *outputItems) reasoning(s string) {
	if s == "" {
		return
	}
	o.pending = nil // the reasoning's tokens are no text's
	if it := o.last(); it == nil || it.Type != openai.ItemReasoning {
		o.close(openai.ResponseStatusCompleted)
		index := len(o.items)
		item := openai.ResponseOutputItem{Type: openai.ItemReasoning, ID: "rs_" + o.call.baseID, Status: openai.ResponseStatusInProgress}
		o.send("response.output_item.added", func(typ string, seq int) any {
			return openai.ResponseOutputItemEvent{Type: typ, SequenceNumber: seq, OutputIndex: index, Item: item}
		})
		item.Content = []openai.ResponseOutputText{{Type: "reasoning_text"}}
		o.items = append(o.items, item)
		o.open = true
	}
	it := o.last()
	o.buf.WriteString(s)
	index := len(o.items) - 1
	o.send("response.reasoning_text.delta", func(typ string, seq int) any {
		return openai.ResponseReasoningTextDeltaEvent{Type: typ, SequenceNumber: seq, ItemID: it.ID, OutputIndex: index, Delta: s}
	})
}

func (o *outputItems) arguments(s string) {
	it := o.last()
	if it == nil || it.Type != openai.ItemFunctionCall {
		return // a parser's arguments always follow their call's name
	}
	o.buf.WriteString(s)
	index := len(o.items) - 1
	o.send("response.function_call_arguments.delta", func(typ string, seq int) any {
		return openai.ResponseFunctionCallArgumentsDeltaEvent{Type: typ, SequenceNumber: seq,
			ItemID: it.ID, OutputIndex: index, Delta: s}
	})
}

// openMessage closes the open item and opens a message: the first is
// msg_<id>, a later one msg_<id>_<output index>.
func (o *outputItems) openMessage() {
	o.close(openai.ResponseStatusCompleted)
	id := "msg_" + o.call.baseID
	if o.numMessages > 0 {
		id = fmt.Sprintf("%s_%d", id, len(o.items))
	}
	o.numMessages++
	index := len(o.items)
	item := openai.ResponseOutputItem{Type: openai.ItemMessage, ID: id, Status: openai.ResponseStatusInProgress, Role: "assistant"}
	o.send("response.output_item.added", func(typ string, seq int) any {
		return openai.ResponseOutputItemEvent{Type: typ, SequenceNumber: seq, OutputIndex: index, Item: item}
	})
	o.send("response.content_part.added", func(typ string, seq int) any {
		return openai.ResponseContentPartEvent{Type: typ, SequenceNumber: seq, ItemID: id,
			OutputIndex: index, ContentIndex: 0, Part: openai.ResponseOutputText{Type: "output_text"}}
	})
	item.Content = []openai.ResponseOutputText{{Type: "output_text"}}
	o.items = append(o.items, item)
	o.open = true
}

// openCall closes the open item and opens a function call, fc_<id>_<output
// index>, with a new call id.
func (o *outputItems) openCall(name string) {
	o.close(openai.ResponseStatusCompleted)
	o.pending = nil // the call's tokens are no text's
	index := len(o.items)
	n, ok := o.call.names[name]
	if !ok {
		n = openai.ToolCallName{Name: name}
	}
	item := openai.ResponseOutputItem{Type: openai.ItemFunctionCall, ID: fmt.Sprintf("fc_%s_%d", o.call.baseID, index),
		Status: openai.ResponseStatusInProgress, CallID: o.call.newCallID(), Name: n.Name, Namespace: n.Namespace}
	o.send("response.output_item.added", func(typ string, seq int) any {
		return openai.ResponseOutputItemEvent{Type: typ, SequenceNumber: seq, OutputIndex: index, Item: item}
	})
	o.items = append(o.items, item)
	o.open = true
}

// close finishes the open item with status.
func (o *outputItems) close(status string) {
	it := o.last()
	if it == nil {
		return
	}
	o.open = false
	it.Status = status
	index := len(o.items) - 1
	switch it.Type {
	case openai.ItemMessage:
		part := &it.Content[0]
		part.Text = o.buf.String()
		part.Logprobs = append(part.Logprobs, o.pending...)
		o.pending = nil
		p := *part
		o.send("response.output_text.done", func(typ string, seq int) any {
			return openai.ResponseTextDoneEvent{Type: typ, SequenceNumber: seq, ItemID: it.ID,
				OutputIndex: index, ContentIndex: 0, Text: p.Text, Logprobs: p.Logprobs}
		})
		o.send("response.content_part.done", func(typ string, seq int) any {
			return openai.ResponseContentPartEvent{Type: typ, SequenceNumber: seq, ItemID: it.ID,
				OutputIndex: index, ContentIndex: 0, Part: p}
		})
	case openai.ItemReasoning:
		it.Content[0].Text = o.buf.String()
		text := it.Content[0].Text
		o.send("response.reasoning_text.done", func(typ string, seq int) any {
			return openai.ResponseReasoningTextDoneEvent{Type: typ, SequenceNumber: seq, ItemID: it.ID, OutputIndex: index, Text: text}
		})
	case openai.ItemFunctionCall:
		it.Arguments = o.buf.String()
		o.send("response.function_call_arguments.done", func(typ string, seq int) any {
			return openai.ResponseFunctionCallArgumentsDoneEvent{Type: typ, SequenceNumber: seq,
				ItemID: it.ID, OutputIndex: index, Name: it.Name, Arguments: it.Arguments}
		})
	}
	o.buf.Reset()
	item := *it
	o.send("response.output_item.done", func(typ string, seq int) any {
		return openai.ResponseOutputItemEvent{Type: typ, SequenceNumber: seq, OutputIndex: index, Item: item}
	})
}

// send sends the event of type typ that ev makes, with the next sequence
// number, when streaming and the client is still there.
func (o *outputItems) send(typ string, ev func(typ string, seq int) any) {
	if o.w == nil || o.err != nil {
		return
	}
	v := ev(typ, o.w.next())
	if o.w.decorate != nil {
		v = o.w.decorate(typ, v)
	}
	o.err = o.w.out.sendEvent(typ, v)
}

// responseStatus is the status of a response (and of its last item) that
// finished with finish.
func responseStatus(finish string) string {
	if finish == openai.FinishLength {
		return openai.ResponseStatusIncomplete
	}
	return openai.ResponseStatusCompleted
}

// assistantTurn is the stored conversation's turn for a response's output:
// its messages' text, and its calls.
func assistantTurn(items []openai.ResponseOutputItem) responses.Message {
	m := responses.Message{Role: "assistant"}
	for _, it := range items {
		switch it.Type {
		case openai.ItemMessage:
			m.Content += it.Content[0].Text
		case openai.ItemReasoning:
			m.Reasoning += it.Content[0].Text
		case openai.ItemFunctionCall:
			name := openai.ToolCallName{Name: it.Name, Namespace: it.Namespace}.Flat() // as the model wrote it
			m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: it.CallID, Type: "function",
				Function: openai.FunctionCall{Name: name, Arguments: it.Arguments}})
		}
	}
	return m
}
