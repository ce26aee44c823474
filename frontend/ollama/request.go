package ollama

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Options are the sampling options of a request (Ollama's runner
// options); the ones with no meaning here (num_ctx, num_thread, num_gpu,
// mirostat, …) are accepted and ignored, as the server's own settings
// decide them.
type Options struct {
	Temperature      *float64 `json:"temperature"`
	TopK             *int     `json:"top_k"`
	TopP             *float64 `json:"top_p"`
	MinP             *float64 `json:"min_p"`
	Seed             *int64   `json:"seed"`
	NumPredict       *int     `json:"num_predict"` // tokens to generate; -1 and -2 (and absent): until EOS or the context's end
	Stop             Stops    `json:"stop"`
	RepeatPenalty    *float64 `json:"repeat_penalty"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
}

// Stops is options.stop: a list of strings, or one string.
type Stops []string

// UnmarshalJSON implements json.Unmarshaler.
func (s *Stops) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = Stops{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("stop must be a string or a list of strings")
	}
	*s = list
	return nil
}

// Message is one message of a chat request, or the answer's.
type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	Images    []string   `json:"images,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	ToolName  string     `json:"tool_name,omitempty"` // a tool result's tool
	// ToolCallID is the call a tool result answers, when the client
	// sends it (LangChain's ChatOllama does).
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one call of an assistant message: arguments are a JSON
// object, not JSON text as in OpenAI's API.
type ToolCall struct {
	ID       string       `json:"id,omitempty"` // a client's own id for the call (in requests)
	Function CallFunction `json:"function"`
}

// CallFunction is a ToolCall's function.
type CallFunction struct {
	Index     int             `json:"index,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	Model     string          `json:"model"`
	Messages  []Message       `json:"messages"`
	Tools     json.RawMessage `json:"tools,omitempty"`  // OpenAI's form: [{"type": "function", "function": {…}}]
	Format    json.RawMessage `json:"format,omitempty"` // "json" or a JSON Schema
	Options   Options         `json:"options"`
	Stream    *bool           `json:"stream,omitempty"` // absent: true
	KeepAlive json.RawMessage `json:"keep_alive,omitempty"`
	Think     json.RawMessage `json:"think,omitempty"` // true, false, or an effort ("high", "medium", "low")
	Logprobs  bool            `json:"logprobs,omitempty"`
	// TopLogprobs is the alternatives per token (0-20); set, it turns
	// logprobs on, as Ollama's clients expect.
	TopLogprobs *int `json:"top_logprobs,omitempty"`
}

// GenerateRequest is the body of POST /api/generate.
type GenerateRequest struct {
	Model       string          `json:"model"`
	Prompt      string          `json:"prompt"`
	Suffix      string          `json:"suffix,omitempty"`
	System      string          `json:"system,omitempty"`
	Template    string          `json:"template,omitempty"`
	Images      []string        `json:"images,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"`
	Options     Options         `json:"options"`
	Stream      *bool           `json:"stream,omitempty"`
	Raw         bool            `json:"raw,omitempty"`     // the prompt as it is, no chat template
	Context     []int32         `json:"context,omitempty"` // a previous answer's context: its tokens go first
	KeepAlive   json.RawMessage `json:"keep_alive,omitempty"`
	Think       json.RawMessage `json:"think,omitempty"`
	Logprobs    bool            `json:"logprobs,omitempty"`
	TopLogprobs *int            `json:"top_logprobs,omitempty"`
}

// Streams reports whether the answer is streamed (Ollama's default).
func (r *ChatRequest) Streams() bool { return r.Stream == nil || *r.Stream }

// Streams reports whether the answer is streamed (Ollama's default).
func (r *GenerateRequest) Streams() bool { return r.Stream == nil || *r.Stream }

// Decode reads a request body into v (a *ChatRequest or
// *GenerateRequest); errors name what is wrong.
func Decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("invalid %s: expected %s", te.Field, te.Type)
		}
		return fmt.Errorf("invalid request body: %w", err)
	}
	return nil
}

// chatRequest is the OpenAI chat request an Ollama request runs as (the
// fields of frontend/openai's ChatCompletionRequest that it sets).
type chatRequest struct {
	Messages          []chatMessage   `json:"messages"`
	Tools             json.RawMessage `json:"tools,omitempty"`
	ResponseFormat    any             `json:"response_format,omitempty"`
	MaxTokens         *int            `json:"max_tokens,omitempty"`
	Temperature       *float64        `json:"temperature,omitempty"`
	TopK              *int            `json:"top_k,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	MinP              *float64        `json:"min_p,omitempty"`
	Seed              *int64          `json:"seed,omitempty"`
	Stop              []string        `json:"stop,omitempty"`
	RepetitionPenalty *float64        `json:"repetition_penalty,omitempty"`
	PresencePenalty   *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64        `json:"frequency_penalty,omitempty"`
	Logprobs          bool            `json:"logprobs,omitempty"`
	TopLogprobs       *int            `json:"top_logprobs,omitempty"`
	TemplateKwargs    map[string]any  `json:"chat_template_kwargs,omitempty"`
	ReasoningEffort   string          `json:"reasoning_effort,omitempty"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	Name             string         `json:"name,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"` // "function"
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // JSON text
	} `json:"function"`
}

// ChatBody is the request as an OpenAI chat completions body (without
// model and stream, which the server handles): the messages with their
// calls given ids and each tool result answering its call (by tool_name,
// else the oldest call not yet answered), the tools as they are, format
// as response_format and the options as sampling parameters.
func (r *ChatRequest) ChatBody() ([]byte, error) {
	msgs, err := chatMessages(r.Messages)
	if err != nil {
		return nil, err
	}
	body, err := params(r.Options, r.Format)
	if err != nil {
		return nil, err
	}
	body.Messages, body.Tools = msgs, r.Tools
	body.Logprobs, body.TopLogprobs = r.Logprobs || r.TopLogprobs != nil, r.TopLogprobs
	if body.TemplateKwargs, body.ReasoningEffort, err = thinking(r.Think); err != nil {
		return nil, err
	}
	return json.Marshal(body)
}

// thinking maps think onto the chat template's enable_thinking, which
// the templates of thinking models (Qwen3, …) read: true or an effort
// turns it on, false off, absent leaves the template's default. An
// effort is also the request's reasoning_effort (gpt-oss's templates read
// it).
func thinking(think json.RawMessage) (kwargs map[string]any, effort string, err error) {
	t := bytes.TrimSpace(think)
	if len(t) == 0 || string(t) == "null" {
		return nil, "", nil
	}
	var on bool
	if json.Unmarshal(t, &on) == nil {
		return map[string]any{"enable_thinking": on}, "", nil
	}
	if json.Unmarshal(t, &effort) == nil && (effort == "high" || effort == "medium" || effort == "low") {
		return map[string]any{"enable_thinking": true}, effort, nil
	}
	return nil, "", fmt.Errorf("think: must be true, false, \"high\", \"medium\" or \"low\", got %s", t)
}

// ChatBody is a generate request (not raw) as a chat body: the system
// message and the prompt as the user's.
func (r *GenerateRequest) ChatBody() ([]byte, error) {
	if r.Template != "" {
		return nil, errors.New("template: a per-request template is not accepted; the server's chat template is used (start it with --chat-template to change it)")
	}
	if r.Suffix != "" {
		return nil, errors.New("suffix: fill-in-the-middle is not supported on /api/generate; use llama.cpp's /infill")
	}
	if len(r.Images) > 0 {
		return nil, errors.New("images: the model takes no image input")
	}
	var msgs []Message
	if r.System != "" {
		msgs = append(msgs, Message{Role: "system", Content: r.System})
	}
	msgs = append(msgs, Message{Role: "user", Content: r.Prompt})
	chat := ChatRequest{Messages: msgs, Format: r.Format, Options: r.Options, Think: r.Think, Logprobs: r.Logprobs, TopLogprobs: r.TopLogprobs}
	return chat.ChatBody()
}

// params maps options and format onto a chat body.
func params(o Options, format json.RawMessage) (chatRequest, error) {
	body := chatRequest{Temperature: o.Temperature, TopK: o.TopK, TopP: o.TopP, MinP: o.MinP, Seed: o.Seed,
		Stop: o.Stop, RepetitionPenalty: o.RepeatPenalty, PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty}
	if o.NumPredict != nil && *o.NumPredict > 0 {
		body.MaxTokens = o.NumPredict
	}
	switch f := bytes.TrimSpace(format); {
	case len(f) == 0 || string(f) == "null" || string(f) == `""`:
	case string(f) == `"json"`:
		body.ResponseFormat = map[string]string{"type": "json_object"}
	case f[0] == '{':
		body.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "format", "schema": json.RawMessage(f)}}
	default:
		return chatRequest{}, fmt.Errorf("format: must be \"json\" or a JSON Schema object, got %s", f)
	}
	return body, nil
}

// chatMessages converts the conversation.
func chatMessages(in []Message) ([]chatMessage, error) {
	out := make([]chatMessage, 0, len(in))
	var open []chatToolCall // calls not yet answered, oldest first
	for i, m := range in {
		if len(m.Images) > 0 {
			return nil, fmt.Errorf("messages[%d].images: the model takes no image input", i)
		}
		if m.Role == "" {
			return nil, fmt.Errorf("messages[%d].role is required", i)
		}
		content := m.Content
		cm := chatMessage{Role: m.Role, Content: &content, ReasoningContent: m.Thinking}
		for j, tc := range m.ToolCalls {
			if tc.Function.Name == "" {
				return nil, fmt.Errorf("messages[%d].tool_calls[%d].function.name is required", i, j)
			}
			args := bytes.TrimSpace(tc.Function.Arguments)
			var text string
			switch {
			case len(args) == 0 || string(args) == "null":
				args = []byte("{}")
			case json.Unmarshal(args, &text) == nil: // arguments sent as JSON text
				args = []byte(text)
			}
			call := chatToolCall{ID: tc.ID, Type: "function"}
			if call.ID == "" {
				call.ID = fmt.Sprintf("call_%d_%d", i, j)
			}
			call.Function.Name, call.Function.Arguments = tc.Function.Name, string(args)
			cm.ToolCalls = append(cm.ToolCalls, call)
		}
		if len(cm.ToolCalls) > 0 {
			open = append(open[:0], cm.ToolCalls...)
			if strings.TrimSpace(content) == "" {
				cm.Content = nil
			}
		}
		if m.Role == "tool" {
			cm.Name = m.ToolName
			k := 0
			for j, c := range open {
				if m.ToolCallID != "" && c.ID == m.ToolCallID || m.ToolCallID == "" && m.ToolName != "" && c.Function.Name == m.ToolName {
					k = j
					break
				}
			}
			switch {
			case m.ToolCallID != "": // the client's own pairing
				cm.ToolCallID = m.ToolCallID
				if k < len(open) && open[k].ID == m.ToolCallID {
					open = append(open[:k], open[k+1:]...)
				}
			case k < len(open):
				cm.ToolCallID = open[k].ID
				open = append(open[:k], open[k+1:]...)
			default:
				cm.ToolCallID = fmt.Sprintf("call_%d", i)
			}
		}
		out = append(out, cm)
	}
	return out, nil
}
