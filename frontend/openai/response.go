package openai

import (
	"encoding/json"
	"math"
)

// Values of the "object" field.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion" // completions and their chunks
	ObjectList                = "list"
	ObjectModel               = "model"
	ObjectModelPermission     = "model_permission"
)

// OwnedBy is the owned_by of every served model.
const OwnedBy = "tandem"

// Values of finish_reason (vLLM's FinishReason names).
const (
	FinishStop   = "stop"   // EOS, a stop token or a stop string
	FinishLength = "length" // max_tokens or the context length
	FinishAbort  = "abort"
	FinishError  = "error"
	// FinishToolCalls: the answer ended (stop) with tool calls.
	FinishToolCalls = "tool_calls"
)

// Usage counts the tokens of a request.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails is usage.prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"` // prompt tokens served from the prefix cache
}

// StopReason is stop_reason: the stop string or stop token id that ended a
// choice, or null (EOS, length, or not finished). Build it with StopString or
// StopToken; the zero value is null.
type StopReason struct {
	Text    string // the stop string, when !IsToken
	TokenID int32  // the stop token id, when IsToken
	IsToken bool
}

// StopString returns the stop_reason of a matched stop string.
func StopString(s string) StopReason { return StopReason{Text: s} }

// StopToken returns the stop_reason of a matched stop token id.
func StopToken(id int32) StopReason { return StopReason{TokenID: id, IsToken: true} }

// IsZero reports whether r renders as null (used by omitzero).
func (r StopReason) IsZero() bool { return !r.IsToken && r.Text == "" }

// MarshalJSON renders an integer, a string or null.
func (r StopReason) MarshalJSON() ([]byte, error) {
	switch {
	case r.IsToken:
		return json.Marshal(r.TokenID)
	case r.Text != "":
		return json.Marshal(r.Text)
	default:
		return []byte("null"), nil
	}
}

// Logprob is a log probability. It marshals -Inf and NaN as -9999.0, as vLLM
// does, because JSON has no infinities.
type Logprob float64

// floorLogprob stands in for -Inf in JSON.
const floorLogprob = -9999.0

// MarshalJSON implements json.Marshaler.
func (l Logprob) MarshalJSON() ([]byte, error) {
	f := float64(l)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = floorLogprob
		if math.IsInf(float64(l), 1) {
			f = 0
		}
	}
	return json.Marshal(f)
}

// ByteValues returns the UTF-8 bytes of a token's text as integers, the form
// of the "bytes" field of chat logprobs.
func ByteValues(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

// ChatLogprobs is a chat choice's logprobs.
type ChatLogprobs struct {
	Content []ChatTokenLogprob `json:"content"` // one per generated token
}

// ChatTokenLogprob is the logprob of one generated token and its alternatives.
type ChatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     Logprob          `json:"logprob"`
	Bytes       []int            `json:"bytes"`        // UTF-8 bytes of Token; see ByteValues
	TopLogprobs []ChatTopLogprob `json:"top_logprobs"` // top_logprobs entries, most likely first; set [] for none
}

// ChatTopLogprob is one alternative in top_logprobs.
type ChatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob Logprob `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// CompletionLogprobs is a completions choice's logprobs; the four slices are
// parallel, one element per token.
type CompletionLogprobs struct {
	Tokens        []string      `json:"tokens"`
	TokenLogprobs []*Logprob    `json:"token_logprobs"` // nil element = null (first echoed prompt token)
	TopLogprobs   []TopLogprobs `json:"top_logprobs"`   // token text → logprob, sampled first; nil element = null
	TextOffset    []int         `json:"text_offset"`    // character (code point) offset of each token in the choice text
}

// ChatCompletion is the non-streaming chat response.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`  // ObjectChatCompletion
	Created           int64        `json:"created"` // Unix seconds
	Model             string       `json:"model"`
	Choices           []ChatChoice `json:"choices"`
	Usage             Usage        `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`
	// vLLM's fields beyond OpenAI's, null unless asked for.
	PromptLogprobs PromptLogprobs     `json:"prompt_logprobs"`
	PromptTokenIDs []int32            `json:"prompt_token_ids"`    // return_token_ids
	Metrics        *PerRequestMetrics `json:"metrics"`             // --enable-per-request-metrics
	Timings        any                `json:"timings,omitempty"`   // llama.cpp's, with timings_per_token
	Verbose        *Verbose           `json:"__verbose,omitempty"` // llama.cpp's, with verbose
}

// Verbose is llama.cpp's __verbose object: what the model was given and
// what it wrote (tokens).
type Verbose struct {
	Prompt          string `json:"prompt"` // the chat template's output
	Content         string `json:"content"`
	TokensEvaluated int    `json:"tokens_evaluated"`
	TokensPredicted int    `json:"tokens_predicted"`
	Model           string `json:"model"`
}

// ChatChoice is one choice of a ChatCompletion.
type ChatChoice struct {
	Index        int              `json:"index"`
	Message      AssistantMessage `json:"message"`
	Logprobs     *ChatLogprobs    `json:"logprobs"` // null unless requested
	FinishReason string           `json:"finish_reason"`
	StopReason   StopReason       `json:"stop_reason"`
	TokenIDs     []int32          `json:"token_ids"` // the generated tokens with return_token_ids, else null
}

// PromptLogprobs is prompt_logprobs, vLLM's form: one entry per prompt
// token, null for the first (it has no context), else the token's and its
// alternatives' logprobs keyed by token id. A nil PromptLogprobs is null.
type PromptLogprobs []PromptLogprobsEntry

// PromptLogprob is one token of a PromptLogprobs entry (vLLM's Logprob).
type PromptLogprob struct {
	Logprob      Logprob `json:"logprob"`
	Rank         *int    `json:"rank"`          // 1 = most likely
	DecodedToken *string `json:"decoded_token"` // the token's text
}

// PerRequestMetrics is a response's "metrics" (vLLM's PerRequestMetrics):
// the timings of one sequence, in milliseconds on the engine's clock; a
// field the engine gave no timestamps for is null.
type PerRequestMetrics struct {
	TimeToFirstTokenMs *float64 `json:"time_to_first_token_ms"` // scheduled → first token
	GenerationTimeMs   *float64 `json:"generation_time_ms"`     // first token → last token
	QueueTimeMs        *float64 `json:"queue_time_ms"`          // queued → scheduled
	MeanITLMs          *float64 `json:"mean_itl_ms,omitempty"`  // mean gap between tokens; absent for one token, as vLLM
	TokensPerSecond    *float64 `json:"tokens_per_second"`      // tokens / (scheduled → last token)
	// SpeculativeDecoding is the request's draft acceptance, with
	// speculative decoding on (vLLM's, experimental there too).
	SpeculativeDecoding *SpeculativeDecodingMetrics `json:"speculative_decoding,omitempty"`
}

// SpeculativeDecodingMetrics are vLLM's per-request speculative decoding
// figures.
type SpeculativeDecodingMetrics struct {
	MeanAcceptanceLength   float64 `json:"mean_acceptance_length"` // 1 + accepted drafts per step (the bonus token included)
	DraftAcceptanceRate    float64 `json:"draft_acceptance_rate"`  // accepted ÷ drafted
	AcceptanceHistogram    []int   `json:"acceptance_histogram"`   // [k+1]: steps by drafts kept
	NumSpecSteps           int     `json:"num_spec_steps"`
	NumAcceptedDraftTokens int     `json:"num_accepted_draft_tokens"`
	NumDraftTokens         int     `json:"num_draft_tokens"`
	NumSpecTokens          int     `json:"num_spec_tokens"`
}

// AssistantMessage is the generated message of a ChatChoice.
type AssistantMessage struct {
	Role      string     `json:"role"`    // "assistant"
	Content   *string    `json:"content"` // null when the message is tool calls
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// FunctionCall is the call of a request that came with the
	// deprecated functions, in place of ToolCalls.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	// Reasoning is a thinking model's reasoning, split off the content by
	// the reasoning parser (vLLM's reasoning; ReasoningContent is its
	// older name, which llama-server and most clients read).
	Reasoning        *string `json:"reasoning,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// ChatCompletionChunk is one server-sent event of a streaming chat response.
// A nil Choices marshals as [] (the final usage chunk has "choices":[]).
type ChatCompletionChunk struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`  // ObjectChatCompletionChunk
	Created           int64              `json:"created"` // Unix seconds
	Model             string             `json:"model"`
	SystemFingerprint string             `json:"system_fingerprint,omitempty"`
	Choices           []ChatChunkChoice  `json:"choices"`
	Usage             *Usage             `json:"usage,omitempty"`
	PromptTokenIDs    []int32            `json:"prompt_token_ids,omitempty"` // first chunk, with return_token_ids
	Metrics           *PerRequestMetrics `json:"metrics,omitempty"`          // the usage chunk, with --enable-per-request-metrics
	Timings           any                `json:"timings,omitempty"`          // the usage chunk: llama.cpp's, with timings_per_token
}

// ChatChunkChoice is one choice of a ChatCompletionChunk.
type ChatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        ChatDelta     `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`      // null unless requested
	FinishReason *string       `json:"finish_reason"` // null until the choice's last chunk
	StopReason   StopReason    `json:"stop_reason,omitzero"`
	TokenIDs     []int32       `json:"token_ids,omitempty"` // this chunk's tokens, with return_token_ids
}

// ChatRoleChunk is a choice's first chunk: its role and "content": null
// (written out: llama-server's clients read the key), or the echoed text.
// Its Choices replace the embedded chunk's.
type ChatRoleChunk struct {
	ChatCompletionChunk
	Choices []ChatRoleChoice `json:"choices"`
}

// MarshalJSON implements json.Marshaler (the embedded chunk's would drop
// Choices).
func (c ChatRoleChunk) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionChunk
	return json.Marshal(struct {
		plain
		Choices []ChatRoleChoice `json:"choices"`
	}{plain(c.ChatCompletionChunk), nonNil(c.Choices)})
}

// AppendJSON appends c's JSON to b (one chunk per stream: no fast path).
func (c ChatRoleChunk) AppendJSON(b []byte) ([]byte, error) { return appendMarshal(b, c) }

// ChatRoleChoice is the one choice of a ChatRoleChunk.
type ChatRoleChoice struct {
	Index        int           `json:"index"`
	Delta        ChatRoleDelta `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// ChatRoleDelta is the delta of a ChatRoleChunk.
type ChatRoleDelta struct {
	Role    string  `json:"role"`
	Content *string `json:"content"` // null unless echoing
}

// ChatDelta is the new part of the message. A choice's first chunk is a
// ChatRoleChunk; a delta never has an empty Content.
type ChatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
	// FunctionCall: the deprecated functions' call delta, in place of
	// ToolCalls.
	FunctionCall *FunctionCallDelta `json:"function_call,omitempty"`
	// Reasoning and ReasoningContent: the next piece of the reasoning
	// (AssistantMessage's).
	Reasoning        *string `json:"reasoning,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// ToolCallDelta is a part of one call in a streamed delta, as OpenAI
// streams them: the call's first carries its id, type and name with
// arguments "", the later ones the next fragment of its arguments only.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"` // "function" in the first
	Function FunctionCallDelta `json:"function"`
}

// FunctionCallDelta is the function part of a ToolCallDelta.
type FunctionCallDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Completion is the non-streaming completions response.
type Completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`  // ObjectTextCompletion
	Created           int64              `json:"created"` // Unix seconds
	Model             string             `json:"model"`
	Choices           []CompletionChoice `json:"choices"`
	Usage             Usage              `json:"usage"`
	SystemFingerprint string             `json:"system_fingerprint,omitempty"`
	Metrics           *PerRequestMetrics `json:"metrics"`           // --enable-per-request-metrics
	Timings           any                `json:"timings,omitempty"` // llama.cpp's, with timings_per_token
}

// CompletionChoice is one choice of a Completion. The last three fields
// are vLLM's, null unless asked for.
type CompletionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogprobs `json:"logprobs"` // null unless requested
	FinishReason   string              `json:"finish_reason"`
	StopReason     StopReason          `json:"stop_reason"`
	TokenIDs       []int32             `json:"token_ids"` // return_token_ids
	PromptLogprobs PromptLogprobs      `json:"prompt_logprobs"`
	PromptTokenIDs []int32             `json:"prompt_token_ids"` // return_token_ids
}

// CompletionChunk is one server-sent event of a streaming completions
// response. A nil Choices marshals as [].
type CompletionChunk struct {
	ID                string                  `json:"id"`
	Object            string                  `json:"object"`  // ObjectTextCompletion
	Created           int64                   `json:"created"` // Unix seconds
	Model             string                  `json:"model"`
	SystemFingerprint string                  `json:"system_fingerprint,omitempty"`
	Choices           []CompletionChunkChoice `json:"choices"`
	Usage             *Usage                  `json:"usage,omitempty"`
	Metrics           *PerRequestMetrics      `json:"metrics,omitempty"` // the usage chunk, with --enable-per-request-metrics
	Timings           any                     `json:"timings,omitempty"` // the usage chunk: llama.cpp's, with timings_per_token
}

// CompletionChunkChoice is one choice of a CompletionChunk.
type CompletionChunkChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *CompletionLogprobs `json:"logprobs"`      // null unless requested
	FinishReason *string             `json:"finish_reason"` // null until the choice's last chunk
	StopReason   StopReason          `json:"stop_reason,omitzero"`
	// With return_token_ids: the prompt's tokens (first chunk of the
	// choice) and this chunk's.
	PromptTokenIDs []int32 `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int32 `json:"token_ids,omitempty"`
}

// ModelList is the response of GET /v1/models.
type ModelList struct {
	Object string  `json:"object"` // ObjectList
	Data   []Model `json:"data"`
}

// Model describes one served model: vLLM's ModelCard, whose root,
// parent and permission the OpenAI SDKs read back.
type Model struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`  // ObjectModel
	Created     int64             `json:"created"` // Unix seconds
	OwnedBy     string            `json:"owned_by"`
	Root        *string           `json:"root"`                    // the model path or name it was loaded from; null when unknown
	Parent      *string           `json:"parent"`                  // the base model of an adapter; null for a base model
	MaxModelLen int               `json:"max_model_len,omitempty"` // tokens
	Permission  []ModelPermission `json:"permission"`
	// Aliases and Tags are llama-server's: every name the model answers
	// to (the id first) and its labels; absent without --alias or --tags.
	Aliases []string `json:"aliases,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

// ModelPermission is one entry of a model card's permission list, with
// the values vLLM sends.
type ModelPermission struct {
	ID                 string  `json:"id"`     // "modelperm-…"
	Object             string  `json:"object"` // ObjectModelPermission
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

// DefaultPermission is vLLM's ModelPermission() with the given id and
// creation time.
func DefaultPermission(id string, created int64) ModelPermission {
	return ModelPermission{ID: id, Object: ObjectModelPermission, Created: created, AllowSampling: true, AllowLogprobs: true,
		AllowView: true, Organization: "*"}
}

// The MarshalJSON methods below render nil slices as [] rather than null.

// MarshalJSON implements json.Marshaler.
func (c ChatCompletion) MarshalJSON() ([]byte, error) {
	type plain ChatCompletion
	p := plain(c)
	p.Choices = nonNil(p.Choices)
	return json.Marshal(p)
}

// MarshalJSON implements json.Marshaler.
func (c ChatCompletionChunk) MarshalJSON() ([]byte, error) {
	type plain ChatCompletionChunk
	p := plain(c)
	p.Choices = nonNil(p.Choices)
	return json.Marshal(p)
}

// MarshalJSON implements json.Marshaler.
func (c Completion) MarshalJSON() ([]byte, error) {
	type plain Completion
	p := plain(c)
	p.Choices = nonNil(p.Choices)
	return json.Marshal(p)
}

// MarshalJSON implements json.Marshaler.
func (c CompletionChunk) MarshalJSON() ([]byte, error) {
	type plain CompletionChunk
	p := plain(c)
	p.Choices = nonNil(p.Choices)
	return json.Marshal(p)
}

// MarshalJSON implements json.Marshaler.
func (m Model) MarshalJSON() ([]byte, error) {
	type plain Model
	p := plain(m)
	p.Permission = nonNil(p.Permission)
	return json.Marshal(p)
}

// MarshalJSON implements json.Marshaler.
func (l ModelList) MarshalJSON() ([]byte, error) {
	type plain ModelList
	p := plain(l)
	p.Data = nonNil(p.Data)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
