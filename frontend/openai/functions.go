package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// FinishFunctionCall is the finish_reason of an answer that ended with a
// call under OpenAI's deprecated functions (tool_calls under tools).
const FinishFunctionCall = "function_call"

// adoptFunctions serves OpenAI's deprecated function calling (functions
// and function_call, still accepted by OpenAI and sent by older agents and
// libraries) through tools: each function becomes a function tool,
// function_call "none", "auto" or {"name": …} the same tool_choice, and at
// most one call is made, as functions had no parallel calls. Messages of
// the conversation so far are rewritten the same way (functionMessages).
// The answer goes back in the old shape (LegacyMessage, LegacyDelta). It
// is idempotent: adopted, the request has tools and no functions.
func (r *ChatCompletionRequest) adoptFunctions() *Error {
	fns := bytes.TrimSpace(r.Functions)
	hasFns := len(fns) > 0 && string(fns) != "null"
	call := bytes.TrimSpace(r.FunctionCall)
	hasCall := len(call) > 0 && string(call) != "null"
	if !hasFns {
		if hasCall {
			return BadRequest("function_call", "'function_call' is only allowed when 'functions' are specified.")
		}
		return nil
	}
	if t := bytes.TrimSpace(r.Tools); len(t) > 0 && string(t) != "null" {
		return BadRequest("functions", "'functions' and 'tools' cannot both be set; 'functions' is deprecated, use 'tools'.")
	}
	if t := bytes.TrimSpace(r.ToolChoice); len(t) > 0 && string(t) != "null" {
		return BadRequest("function_call", "'tool_choice' goes with 'tools'; with 'functions' set 'function_call'.")
	}
	var defs []FunctionDef
	if err := json.Unmarshal(fns, &defs); err != nil || len(defs) == 0 {
		return BadRequest("functions", "'functions' must be a non-empty list of {\"name\": …, \"parameters\": {…}} objects.")
	}
	tools := make([]Tool, len(defs))
	for i, d := range defs {
		if d.Name == "" {
			return BadRequest(fmt.Sprintf("functions[%d].name", i), "'functions[%d]' must have a name.", i)
		}
		tools[i] = Tool{Type: "function", Function: d}
	}
	r.Tools, _ = json.Marshal(tools)
	if hasCall {
		var mode string
		var named struct {
			Name string `json:"name"`
		}
		switch {
		case json.Unmarshal(call, &mode) == nil && (mode == "none" || mode == "auto"):
			r.ToolChoice = json.RawMessage(call)
		case json.Unmarshal(call, &named) == nil && named.Name != "":
			r.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
		default:
			return BadRequest("function_call", "'function_call' must be \"none\", \"auto\" or {\"name\": …}.")
		}
	}
	one := false
	r.ParallelToolCalls = &one
	msgs, e := functionMessages(r.Messages)
	if e != nil {
		return e
	}
	r.Messages = msgs
	r.Functions, r.FunctionCall, r.LegacyFunctions = nil, nil, true
	return nil
}

// functionMessages rewrites the deprecated forms of a conversation for
// the chat template, which knows tool calls: an assistant message's
// function_call becomes its one tool call, with an id, and a
// {"role": "function", "name": …} result a tool message answering the
// latest call (by that id; a result with no call before it gets an id of
// its own).
func functionMessages(msgs []ChatMessage) ([]ChatMessage, *Error) {
	out := make([]ChatMessage, len(msgs))
	lastID := ""
	for i, m := range msgs {
		out[i] = m
		if m.Role != "assistant" && m.Role != "function" {
			continue // nothing of the old form: left as sent
		}
		var fields map[string]json.RawMessage
		if len(m.Raw) > 0 && json.Unmarshal(m.Raw, &fields) != nil {
			fields = nil
		}
		switch {
		case m.Role == "assistant" && len(fields["function_call"]) > 0 && string(fields["function_call"]) != "null":
			var fc struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(fields["function_call"], &fc); err != nil || fc.Name == "" {
				return nil, BadRequest(fmt.Sprintf("messages[%d].function_call", i), "'messages[%d].function_call' must be {\"name\": …, \"arguments\": \"…\"}.", i)
			}
			args := ""
			if json.Unmarshal(fc.Arguments, &args) != nil {
				args = string(fc.Arguments) // sent as an object
			}
			lastID = fmt.Sprintf("call_fn_%d", i)
			delete(fields, "function_call")
			fields["tool_calls"], _ = json.Marshal([]ToolCall{{ID: lastID, Type: "function", Function: FunctionCall{Name: fc.Name, Arguments: args}}})
			out[i].Raw = orderedMessage(fields)
		case m.Role == "function":
			id := lastID
			if id == "" {
				id = fmt.Sprintf("call_fn_%d", i)
			}
			fields = ensure(fields)
			fields["role"], _ = json.Marshal("tool")
			fields["tool_call_id"], _ = json.Marshal(id)
			fields["content"], _ = json.Marshal(m.Content.Text)
			out[i].Role = "tool"
			out[i].Raw = orderedMessage(fields)
		}
	}
	return out, nil
}

func ensure(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return map[string]json.RawMessage{}
	}
	return m
}

// orderedMessage writes a message's fields with role and content first,
// then the others in sorted order.
func orderedMessage(fields map[string]json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(k string, v json.RawMessage) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kq, _ := json.Marshal(k)
		b.Write(kq)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, k := range []string{"role", "content"} {
		if v, ok := fields[k]; ok {
			write(k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k != "role" && k != "content" {
			write(k, fields[k])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// LegacyMessage turns a finished choice's one tool call into the
// deprecated function_call (its finish_reason tool_calls into
// function_call), for a request that came with functions.
func LegacyMessage(ch *ChatChoice) {
	if len(ch.Message.ToolCalls) == 0 {
		return
	}
	fc := ch.Message.ToolCalls[0].Function
	ch.Message.FunctionCall, ch.Message.ToolCalls = &fc, nil
	if ch.FinishReason == FinishToolCalls {
		ch.FinishReason = FinishFunctionCall
	}
}

// LegacyDelta turns a streamed chunk's tool call delta into the
// deprecated function_call delta (name and arguments "" first, then the
// arguments' fragments), and finish_reason tool_calls into function_call.
func LegacyDelta(ch *ChatChunkChoice) {
	if len(ch.Delta.ToolCalls) > 0 {
		fc := ch.Delta.ToolCalls[0].Function
		ch.Delta.FunctionCall, ch.Delta.ToolCalls = &fc, nil
	}
	if ch.FinishReason != nil && *ch.FinishReason == FinishToolCalls {
		f := FinishFunctionCall
		ch.FinishReason = &f
	}
}
