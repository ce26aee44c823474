package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
)

// chatRequest is the OpenAI chat request a Messages request runs as (the
// fields of frontend/openai's ChatCompletionRequest that it sets).
type chatRequest struct {
	Messages           []chatMessage   `json:"messages"`
	MaxTokens          *int            `json:"max_tokens,omitempty"`
	Stop               []string        `json:"stop,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	TopK               *int            `json:"top_k,omitempty"`
	Tools              []chatTool      `json:"tools,omitempty"`
	ToolChoice         any             `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls,omitempty"`
	ResponseFormat     *responseFormat `json:"response_format,omitempty"`
	ChatTemplateKwargs map[string]any  `json:"chat_template_kwargs,omitempty"`
	SessionID          string          `json:"session_id,omitempty"`
	// ThinkingBudget is thinking.budget_tokens (type enabled).
	ThinkingBudget *int `json:"thinking_token_budget,omitempty"`
	// ReasoningEffort is output_config.effort, or "none" for thinking
	// disabled (vLLM's mapping).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
}

// chatMessage is one chat message as the chat template sees it. An
// assistant turn with calls and no text has content null; reasoning goes
// under both names templates read (vLLM's reasoning, the older
// reasoning_content).
type chatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Reasoning        string     `json:"reasoning,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text of the input object
}

type chatTool struct {
	Type     string      `json:"type"` // "function"
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type namedChoice struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string `json:"type"` // "json_schema"
	JSONSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

// ChatBody is the request as an OpenAI chat completions body (without
// model and stream, which the server handles), as vLLM and llama-server
// convert it:
//   - system (and system-role messages) is the first message; a request
//     with neither system nor messages is one empty user message (vLLM
//     and llama-server take it, and chat templates need a message);
//   - a user turn's text blocks are a user message, each tool_result a
//     "tool" message with tool_call_id, in the blocks' order (Anthropic
//     puts results first, so they follow the calls' turn);
//   - an assistant turn's text is its content, its tool_use blocks its
//     tool_calls (the input as arguments' JSON text), its thinking its
//     reasoning; redacted_thinking is dropped;
//   - tools become functions with input_schema as parameters; tool_choice
//     auto, any, tool and none become "auto", "required", the named
//     function and "none"; disable_parallel_tool_use is
//     parallel_tool_calls false;
//   - max_tokens, stop_sequences (stop), temperature, top_p and top_k
//     carry over; thinking sets the template's enable_thinking, and its
//     budget_tokens (type enabled) is thinking_token_budget; thinking
//     disabled is reasoning_effort "none", output_config.effort the
//     effort;
//     output_config.format is a json_schema response_format.
func (r *Request) ChatBody() ([]byte, error) {
	c := chatRequest{MaxTokens: r.MaxTokens, Stop: r.StopSequences, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK,
		SessionID: r.SessionID, Messages: []chatMessage{}}
	if r.SystemText != "" {
		c.Messages = append(c.Messages, chatMessage{Role: "system", Content: ptr(r.SystemText)})
	}
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			c.Messages = append(c.Messages, assistantMessage(m.Blocks))
		} else {
			c.Messages = append(c.Messages, userMessages(m.Blocks)...)
		}
	}
	if len(c.Messages) == 0 { // vLLM and llama-server take an empty conversation; chat templates need a message
		c.Messages = append(c.Messages, chatMessage{Role: "user", Content: ptr("")})
	}
	for _, t := range r.Tools {
		c.Tools = append(c.Tools, chatTool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: objectSchema(t.InputSchema)}})
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "none":
			c.ToolChoice = tc.Type
		case "any":
			c.ToolChoice = "required"
		case "tool":
			var named namedChoice
			named.Type, named.Function.Name = "function", tc.Name
			c.ToolChoice = named
		}
		if tc.DisableParallelToolUse {
			c.ParallelToolCalls = ptr(false)
		}
	}
	c.ChatTemplateKwargs = r.ChatTemplateKwargs
	if t := r.Thinking; t != nil {
		if t.Type == "enabled" && t.BudgetTokens > 0 {
			c.ThinkingBudget = ptr(t.BudgetTokens)
		}
		if t.Type == "disabled" {
			c.ReasoningEffort = "none"
		}
		if _, set := c.ChatTemplateKwargs["enable_thinking"]; !set {
			kw := map[string]any{"enable_thinking": t.Type != "disabled"}
			for k, v := range r.ChatTemplateKwargs {
				kw[k] = v
			}
			c.ChatTemplateKwargs = kw
		}
	}
	if oc := r.OutputConfig; oc != nil && oc.Effort != "" {
		c.ReasoningEffort = oc.Effort
	}
	if f := r.outputFormat(); f != nil {
		rf := &responseFormat{Type: "json_schema"}
		rf.JSONSchema.Name, rf.JSONSchema.Schema, rf.JSONSchema.Strict = "output", f.Schema, true
		c.ResponseFormat = rf
	}
	return json.Marshal(c)
}

// userMessages is a user turn as chat messages: runs of text blocks as
// user messages, each tool_result as a tool message, in order. A turn of
// no blocks is no message.
func userMessages(blocks []Block) []chatMessage {
	var out []chatMessage
	var texts []string
	flush := func() {
		if len(texts) > 0 {
			out = append(out, chatMessage{Role: "user", Content: ptr(strings.Join(texts, "\n"))})
			texts = nil
		}
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_result":
			flush()
			out = append(out, chatMessage{Role: "tool", Content: ptr(b.ResultText), ToolCallID: b.ToolUseID})
		}
	}
	flush()
	return out
}

// assistantMessage is an assistant turn as one chat message.
func assistantMessage(blocks []Block) chatMessage {
	m := chatMessage{Role: "assistant"}
	var texts, thoughts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "thinking":
			thoughts = append(thoughts, b.Thinking)
		case "tool_use":
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: b.ID, Type: "function", Function: functionCall{Name: b.Name, Arguments: arguments(b.Input)}})
		}
	}
	if len(texts) > 0 || len(m.ToolCalls) == 0 {
		m.Content = ptr(strings.Join(texts, "\n"))
	}
	m.Reasoning = strings.Join(thoughts, "\n")
	m.ReasoningContent = m.Reasoning
	return m
}

// arguments is a tool_use input as compact JSON text, "{}" when absent.
func arguments(input json.RawMessage) string {
	var b bytes.Buffer
	if len(input) == 0 || string(input) == "null" || json.Compact(&b, input) != nil {
		return "{}"
	}
	return b.String()
}

// objectSchema is an input_schema with "type": "object" when it has no
// type (as vLLM defaults it), the rest kept as sent.
func objectSchema(schema json.RawMessage) json.RawMessage {
	var keys map[string]json.RawMessage
	if json.Unmarshal(schema, &keys) != nil {
		return schema
	}
	if _, ok := keys["type"]; ok {
		return schema
	}
	rest := bytes.TrimSpace(schema)[1:] // after '{'
	if len(keys) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return append(json.RawMessage(`{"type":"object",`), rest...)
}

func ptr[T any](v T) *T { return &v }
