package ollama

import (
	"encoding/json"
	"time"
)

// Values of done_reason.
const (
	DoneStop   = "stop"   // EOS, a stop string, or the calls
	DoneLength = "length" // num_predict or the context's end
	DoneLoad   = "load"   // a request with no messages (or prompt): Ollama's way to load the model
)

// Stats are the durations (nanoseconds) and counts of a finished answer,
// on its last object only.
type Stats struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// ChatResponse is an /api/chat answer, or one object of its stream.
type ChatResponse struct {
	Model      string  `json:"model"`
	CreatedAt  string  `json:"created_at"`
	Message    Message `json:"message"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason,omitempty"`
	// Logprobs are this object's tokens' (with logprobs).
	Logprobs []Logprob `json:"logprobs,omitempty"`
	*Stats
}

// Logprob is one generated token's log probability and, with
// top_logprobs, the most likely tokens at its position.
type Logprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes,omitempty"`
	TopLogprobs []TokenLogprob `json:"top_logprobs,omitempty"`
}

// TokenLogprob is one alternative of a Logprob.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// GenerateResponse is an /api/generate answer, or one object of its
// stream. Context, on the last, is the prompt's and the answer's tokens,
// which a later request may send back to continue.
type GenerateResponse struct {
	Model      string    `json:"model"`
	CreatedAt  string    `json:"created_at"`
	Response   string    `json:"response"`
	Thinking   string    `json:"thinking,omitempty"`
	Done       bool      `json:"done"`
	DoneReason string    `json:"done_reason,omitempty"`
	Context    []int32   `json:"context,omitempty"`
	Logprobs   []Logprob `json:"logprobs,omitempty"`
	*Stats
}

// Timestamp is created_at's form (RFC 3339 with nanoseconds, UTC).
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// DoneReason maps a finish reason (OpenAI's names) to done_reason.
func DoneReason(finish string) string {
	if finish == "length" {
		return DoneLength
	}
	return DoneStop
}

// NewToolCall is a call of the answer: arguments is the call's JSON text
// as parsed out of the answer, sent as the object it is ({} when it is
// not an object's JSON: a call cut short).
func NewToolCall(index int, name, arguments string) ToolCall {
	args := json.RawMessage(arguments)
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		args = json.RawMessage("{}")
	}
	return ToolCall{Function: CallFunction{Index: index, Name: name, Arguments: args}}
}

// Error is Ollama's error body.
type Error struct {
	Error string `json:"error"`
}

// ModelDetails describes a model in /api/tags, /api/show and /api/ps.
type ModelDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ListModel is one model of /api/tags.
type ListModel struct {
	Name       string       `json:"name"`
	Model      string       `json:"model"`
	ModifiedAt string       `json:"modified_at"`
	Size       int64        `json:"size"`
	Digest     string       `json:"digest"`
	Details    ModelDetails `json:"details"`
}

// ListResponse is GET /api/tags' answer.
type ListResponse struct {
	Models []ListModel `json:"models"`
}

// RunningModel is one model of /api/ps.
type RunningModel struct {
	ListModel
	ExpiresAt     string `json:"expires_at"`
	SizeVRAM      int64  `json:"size_vram"`
	ContextLength int    `json:"context_length"`
}

// ProcessResponse is GET /api/ps' answer.
type ProcessResponse struct {
	Models []RunningModel `json:"models"`
}

// ShowResponse is POST /api/show's answer.
type ShowResponse struct {
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters"`
	Template     string         `json:"template"`
	Details      ModelDetails   `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   string         `json:"modified_at"`
}

// ShowRequest is POST /api/show's body (model, or the older name).
type ShowRequest struct {
	Model string `json:"model"`
	Name  string `json:"name"`
}
