package openai

import (
	"encoding/json"
)

// Values of the "object" and "type" fields of the Responses API.
const (
	ObjectResponse        = "response"
	ObjectResponseDeleted = "response.deleted"

	ResponseStatusCompleted  = "completed"
	ResponseStatusIncomplete = "incomplete"
	ResponseStatusInProgress = "in_progress"
	ResponseStatusFailed     = "failed"
	ResponseStatusQueued     = "queued"    // background: accepted, not finished
	ResponseStatusCancelled  = "cancelled" // background: cancelled before it finished
)

// ResponsesRequest is the body of POST /v1/responses. The shared Params
// carry the sampling fields (temperature, top_p, top_k, seed, stop, …) and
// vLLM's extras (session_id, request_id, priority, cache_salt, vllm_xargs).
type ResponsesRequest struct {
	Params
	Input              ResponseInput       `json:"input"`
	Instructions       string              `json:"instructions,omitempty"`      // a system message; not carried to follow-ups
	MaxOutputTokens    *int                `json:"max_output_tokens,omitempty"` // wins over max_tokens
	Store              *bool               `json:"store,omitempty"`             // nil = true: keep for previous_response_id and GET
	PreviousResponseID string              `json:"previous_response_id,omitempty"`
	Metadata           map[string]string   `json:"metadata,omitempty"`
	Text               *ResponseTextConfig `json:"text,omitempty"`
	TopLogprobs        *int                `json:"top_logprobs,omitempty"` // alternatives per output token; output_text.logprobs
	Tools              json.RawMessage     `json:"tools,omitempty"`        // passed to the chat template
	ToolChoice         json.RawMessage     `json:"tool_choice,omitempty"`
	ParallelToolCalls  *bool               `json:"parallel_tool_calls,omitempty"`
	Background         bool                `json:"background,omitempty"` // answer at once with status queued and generate on; needs store
	Truncation         string              `json:"truncation,omitempty"` // "disabled" (default) or "auto"
	Conversation       json.RawMessage     `json:"conversation,omitempty"`
	// Reasoning's effort is the chat template's reasoning_effort, as
	// chat's; the response echoes it.
	Reasoning *ResponseReasoning `json:"reasoning,omitempty"`
	// EnableResponseMessages (vLLM) adds input_messages and
	// output_messages to the response: the prompt and the answer as text
	// and token ids.
	EnableResponseMessages bool `json:"enable_response_messages,omitempty"`
}

// ResponseTextConfig is text: the output format.
type ResponseTextConfig struct {
	Format *ResponseFormat `json:"format,omitempty"`
}

// ResponseInput is input: a string (one user message) or a list of items.
type ResponseInput struct {
	Text  *string // set when input was a string
	Items []ResponseInputItem
}

// UnmarshalJSON accepts a string, an array of items, or null.
func (in *ResponseInput) UnmarshalJSON(b []byte) error {
	*in = ResponseInput{}
	switch firstByte(b) {
	case 'n':
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		in.Text = &s
		return nil
	case '[':
		var items []ResponseInputItem
		if err := json.Unmarshal(b, &items); err != nil {
			return err
		}
		in.Items = nonNil(items)
		return nil
	default:
		return typeError[ResponseInput](b)
	}
}

// MarshalJSON renders the input in its original form.
func (in ResponseInput) MarshalJSON() ([]byte, error) {
	if in.Text != nil {
		return json.Marshal(*in.Text)
	}
	if in.Items == nil {
		return []byte("null"), nil
	}
	return json.Marshal(in.Items)
}

// ResponseInputItem is one input item: a message (type "message", or
// absent as in OpenAI's easy input message: Role, Content), a function
// call the model made (ItemFunctionCall: CallID, Name, Arguments) or its
// result (ItemFunctionCallOutput: CallID, Output).
type ResponseInputItem struct {
	Type      string           `json:"type,omitempty"`
	Role      string           `json:"role,omitempty"`
	Content   ResponseContent  `json:"content"`
	ID        string           `json:"id,omitempty"`
	Status    string           `json:"status,omitempty"`
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Namespace string           `json:"namespace,omitempty"` // a function_call of a namespace tool's function
	Arguments string           `json:"arguments,omitempty"` // JSON text
	Output    *ResponseContent `json:"output,omitempty"`    // a string or text parts
	// Summary and EncryptedContent are a reasoning item's (its text is
	// content's reasoning_text parts, else the summary's first part).
	Summary          []ResponseContentPart `json:"summary,omitempty"`
	EncryptedContent *string               `json:"encrypted_content,omitempty"`
}

// ReasoningText is a reasoning item's text: its content's first part, else
// its summary's first part, as vLLM reads it.
func (it ResponseInputItem) ReasoningText() string {
	if len(it.Content.Parts) > 0 {
		return it.Content.Parts[0].Text
	}
	if it.Content.Text != "" {
		return it.Content.Text
	}
	if len(it.Summary) > 0 {
		return it.Summary[0].Text
	}
	return ""
}

// ResponseContent is an input message's content: a string or a list of
// parts. Text joins the text parts (input_text, output_text) with "\n".
type ResponseContent struct {
	Text  string
	Parts []ResponseContentPart // nil unless content was an array
}

// ResponseContentPart is one content part of an input message.
type ResponseContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// UnmarshalJSON accepts a string, an array of parts, or null.
func (c *ResponseContent) UnmarshalJSON(b []byte) error {
	*c = ResponseContent{}
	switch firstByte(b) {
	case 'n':
		return nil
	case '"':
		return json.Unmarshal(b, &c.Text)
	case '[':
		var ok bool
		c.Text, c.Parts, ok = textParts(b, func(p ResponseContentPart) (string, bool) { return p.Text, isTextPart(p.Type) })
		if !ok {
			return typeError[ResponseContent](b)
		}
		return nil
	default:
		return typeError[ResponseContent](b)
	}
}

// MarshalJSON renders the content as its string form.
func (c ResponseContent) MarshalJSON() ([]byte, error) { return json.Marshal(c.Text) }

func isTextPart(t string) bool { return t == "input_text" || t == "output_text" || t == "text" }

// responseRoles are the roles an input message may have.
var responseRoles = map[string]bool{"user": true, "system": true, "developer": true, "assistant": true}

// MaxOutput returns max_output_tokens, else max_tokens; ok is false when
// neither is set.
func (r *ResponsesRequest) MaxOutput() (n int, ok bool) {
	switch {
	case r.MaxOutputTokens != nil:
		return *r.MaxOutputTokens, true
	case r.MaxTokens != nil:
		return *r.MaxTokens, true
	default:
		return 0, false
	}
}

// Stored returns store, default true.
func (r *ResponsesRequest) Stored() bool { return r.Store == nil || *r.Store }

// Validate checks a responses request. It returns the first problem found
// as a 400 naming the field.
func (r *ResponsesRequest) Validate() *Error {
	if r.Input.Text == nil && r.Input.Items == nil {
		return BadRequest("input", "'input' is required.")
	}
	for i, it := range r.Input.Items {
		if e := validateItem(i, it); e != nil {
			return e
		}
	}
	if e := r.Params.validate(); e != nil {
		return e
	}
	if r.Reasoning != nil {
		if e := CheckEffort("reasoning.effort", r.Reasoning.Effort); e != nil {
			return e
		}
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return BadRequest("max_output_tokens", "'max_output_tokens' must be at least 1, got %d.", *r.MaxOutputTokens)
	}
	if r.NumChoices() != 1 || r.UseBeamSearch || r.Echo || r.NumCandidates() != 1 {
		return BadRequest("n", "The Responses API generates one output; 'n', 'best_of', 'echo' and 'use_beam_search' are not supported.")
	}
	if r.TopLogprobs != nil && *r.TopLogprobs < 0 { // the server checks the max logprobs
		return BadRequest("top_logprobs", "'top_logprobs' must be at least 0, got %d.", *r.TopLogprobs)
	}
	if r.Text != nil && r.Text.Format != nil {
		if r.ResponseFormat != nil {
			return BadRequest("text.format", "Set 'text.format' or 'response_format', not both.")
		}
		// text.format is the Responses API's response_format (json_schema
		// flattened into it); Params.Constraint reads it from there.
		r.ResponseFormat = r.Text.Format
		if _, e := r.Params.Constraint(); e != nil {
			e.Param = ptrStr("text.format")
			return e
		}
	}
	if r.Background && !r.Stored() {
		return BadRequest("background", "background can only be used when `store` is true")
	}
	if len(r.Conversation) > 0 && string(r.Conversation) != "null" {
		return BadRequest("conversation", "'conversation' is not supported; use 'previous_response_id'.")
	}
	switch r.Truncation {
	case "", "disabled", "auto":
	default:
		return BadRequest("truncation", "'truncation' must be \"auto\" or \"disabled\", got %q.", r.Truncation)
	}
	if maxOut, ok := r.MaxOutput(); ok && r.MinTokens > maxOut {
		return BadRequest("min_tokens", "'min_tokens' must be less than or equal to 'max_output_tokens' (%d), got %d.", maxOut, r.MinTokens)
	}
	return r.validateTools()
}

// Response is a Responses API response object.
type Response struct {
	ID                 string               `json:"id"` // resp_…
	Object             string               `json:"object"`
	CreatedAt          int64                `json:"created_at"` // Unix seconds
	Status             string               `json:"status"`
	Error              *ResponseError       `json:"error"`
	IncompleteDetails  *IncompleteDetails   `json:"incomplete_details"`
	Instructions       *string              `json:"instructions"`
	MaxOutputTokens    *int                 `json:"max_output_tokens"`
	Model              string               `json:"model"`
	Output             []ResponseOutputItem `json:"output"`
	ParallelToolCalls  bool                 `json:"parallel_tool_calls"`
	PreviousResponseID *string              `json:"previous_response_id"`
	Reasoning          *ResponseReasoning   `json:"reasoning"`
	Store              bool                 `json:"store"`
	Temperature        *float64             `json:"temperature"`
	Text               ResponseTextConfig   `json:"text"`
	ToolChoice         json.RawMessage      `json:"tool_choice"`
	Tools              json.RawMessage      `json:"tools"`
	TopLogprobs        *int                 `json:"top_logprobs"`
	TopP               *float64             `json:"top_p"`
	Truncation         string               `json:"truncation"`
	Usage              *ResponseUsage       `json:"usage"`
	User               *string              `json:"user"`
	Metadata           map[string]string    `json:"metadata"`
	Background         bool                 `json:"background"`
	// InputMessages and OutputMessages are vLLM's, with
	// enable_response_messages (else null): the prompt and the answer.
	InputMessages  []RawMessageTokens `json:"input_messages"`
	OutputMessages []RawMessageTokens `json:"output_messages"`
}

// RawMessageTokens is vLLM's ResponseRawMessageAndToken: text as the model
// saw or wrote it, and its token ids (the source of truth).
type RawMessageTokens struct {
	Type    string  `json:"type"` // "raw_message_tokens"
	Message string  `json:"message"`
	Tokens  []int32 `json:"tokens"`
}

// MarshalJSON renders nil slices and maps as [] and {}.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	p := plain(r)
	p.Output = nonNil(p.Output)
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	if len(p.ToolChoice) == 0 {
		p.ToolChoice = json.RawMessage(`"auto"`)
	}
	if len(p.Tools) == 0 {
		p.Tools = json.RawMessage(`[]`)
	}
	return json.Marshal(p)
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"` // "max_output_tokens"
}

// ResponseReasoning is reasoning: the request's effort (summary is not
// made).
type ResponseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ResponseOutputItem is one output item: an assistant message (Type
// ItemMessage: Role, Content) or a function call (ItemFunctionCall:
// CallID, Name, Arguments). Each type renders only its own fields.
type ResponseOutputItem struct {
	Type      string               `json:"type"`
	ID        string               `json:"id"` // msg_… or fc_…
	Status    string               `json:"status"`
	Role      string               `json:"role,omitempty"` // "assistant"
	Content   []ResponseOutputText `json:"content,omitempty"`
	CallID    string               `json:"call_id,omitempty"` // call_…: what a function_call_output answers
	Name      string               `json:"name,omitempty"`
	Namespace string               `json:"namespace,omitempty"` // the namespace tool Name belongs to
	Arguments string               `json:"arguments,omitempty"` // JSON text
}

// MarshalJSON renders a message (with a nil Content as []) or a function
// call, in OpenAI's field order.
func (o ResponseOutputItem) MarshalJSON() ([]byte, error) {
	if o.Type == ItemFunctionCall {
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{o.Type, o.ID, o.CallID, o.Name, o.Namespace, o.Arguments, o.Status})
	}
	if o.Type == ItemReasoning { // Content[0].Text is the reasoning
		parts := []ResponseReasoningText{}
		for _, c := range o.Content {
			parts = append(parts, ResponseReasoningText{Type: "reasoning_text", Text: c.Text})
		}
		return json.Marshal(struct {
			Type    string                  `json:"type"`
			ID      string                  `json:"id"`
			Summary []any                   `json:"summary"`
			Content []ResponseReasoningText `json:"content"`
			Status  string                  `json:"status"`
		}{o.Type, o.ID, []any{}, parts, o.Status})
	}
	return json.Marshal(struct {
		Type    string               `json:"type"`
		ID      string               `json:"id"`
		Status  string               `json:"status"`
		Role    string               `json:"role"`
		Content []ResponseOutputText `json:"content"`
	}{o.Type, o.ID, o.Status, o.Role, nonNil(o.Content)})
}

// ResponseReasoningText is a reasoning item's content part.
type ResponseReasoningText struct {
	Type string `json:"type"` // "reasoning_text"
	Text string `json:"text"`
}

// ResponseReasoningTextDeltaEvent is response.reasoning_text.delta: the
// next piece of a reasoning item's text.
type ResponseReasoningTextDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
}

// ResponseReasoningTextDoneEvent is response.reasoning_text.done.
type ResponseReasoningTextDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Text           string `json:"text"`
}

// ResponseOutputText is an output_text content part.
type ResponseOutputText struct {
	Type        string             `json:"type"` // "output_text"
	Text        string             `json:"text"`
	Annotations []any              `json:"annotations"`
	Logprobs    []ChatTokenLogprob `json:"logprobs"`
}

// MarshalJSON renders nil slices as [].
func (t ResponseOutputText) MarshalJSON() ([]byte, error) {
	type plain ResponseOutputText
	p := plain(t)
	p.Annotations = nonNil(p.Annotations)
	p.Logprobs = nonNil(p.Logprobs)
	return json.Marshal(p)
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails is usage.input_tokens_details.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails is usage.output_tokens_details.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// ResponseDeleted is the answer of DELETE /v1/responses/{id}.
type ResponseDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // ObjectResponseDeleted
	Deleted bool   `json:"deleted"`
}

// Streaming events of the Responses API, in the order they are sent:
// response.created, response.in_progress, then for each output item in
// turn response.output_item.added, its own events and
// response.output_item.done, then response.completed (also when the
// response's status is "incomplete", as vLLM sends it: the SDKs' stream
// helpers finish on it). A message's own events are
// response.content_part.added, response.output_text.delta…,
// response.output_text.done and response.content_part.done; a function
// call's, response.function_call_arguments.delta… and
// response.function_call_arguments.done. Every event carries a sequence
// number, counting from 0, and is sent as `event: <type>` + `data: <json>`.

// ResponseLifecycleEvent is response.created, response.in_progress or
// response.completed.
type ResponseLifecycleEvent struct {
	Type           string    `json:"type"`
	SequenceNumber int       `json:"sequence_number"`
	Response       *Response `json:"response"`
}

// ResponseOutputItemEvent is response.output_item.added or .done.
type ResponseOutputItemEvent struct {
	Type           string             `json:"type"`
	SequenceNumber int                `json:"sequence_number"`
	OutputIndex    int                `json:"output_index"`
	Item           ResponseOutputItem `json:"item"`
}

// ResponseContentPartEvent is response.content_part.added or .done.
type ResponseContentPartEvent struct {
	Type           string             `json:"type"`
	SequenceNumber int                `json:"sequence_number"`
	ItemID         string             `json:"item_id"`
	OutputIndex    int                `json:"output_index"`
	ContentIndex   int                `json:"content_index"`
	Part           ResponseOutputText `json:"part"`
}

// ResponseTextDeltaEvent is response.output_text.delta.
type ResponseTextDeltaEvent struct {
	Type           string             `json:"type"`
	SequenceNumber int                `json:"sequence_number"`
	ItemID         string             `json:"item_id"`
	OutputIndex    int                `json:"output_index"`
	ContentIndex   int                `json:"content_index"`
	Delta          string             `json:"delta"`
	Logprobs       []ChatTokenLogprob `json:"logprobs"`
}

// ResponseTextDoneEvent is response.output_text.done.
type ResponseTextDoneEvent struct {
	Type           string             `json:"type"`
	SequenceNumber int                `json:"sequence_number"`
	ItemID         string             `json:"item_id"`
	OutputIndex    int                `json:"output_index"`
	ContentIndex   int                `json:"content_index"`
	Text           string             `json:"text"`
	Logprobs       []ChatTokenLogprob `json:"logprobs"`
}

// ResponseErrorEvent is the error event of a stream that failed after it
// started.
type ResponseErrorEvent struct {
	Type           string  `json:"type"` // "error"
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

// MarshalJSON renders nil logprobs as [].
func (e ResponseTextDeltaEvent) MarshalJSON() ([]byte, error) {
	type plain ResponseTextDeltaEvent
	p := plain(e)
	p.Logprobs = nonNil(p.Logprobs)
	return json.Marshal(p)
}

// MarshalJSON renders nil logprobs as [].
func (e ResponseTextDoneEvent) MarshalJSON() ([]byte, error) {
	type plain ResponseTextDoneEvent
	p := plain(e)
	p.Logprobs = nonNil(p.Logprobs)
	return json.Marshal(p)
}
