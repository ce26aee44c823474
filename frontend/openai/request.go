package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
)

// Params are the request fields chat and completions requests share. Pointer
// fields are nil when absent, where absent differs from the zero value.
type Params struct {
	Model string `json:"model"`

	// ThinkingTokenBudget (vLLM's) and ReasoningBudgetTokens
	// (llama-server's, also as thinking_budget_tokens) bound the tokens a
	// thinking model samples in its think block, with a reasoning parser
	// (ThinkingBudget); -1 = unset. ReasoningBudgetMessage (llama-server's)
	// is forced before the end tag when the budget is spent, instead of the
	// server's --reasoning-budget-message.
	ThinkingTokenBudget    *int    `json:"thinking_token_budget,omitempty"`
	ReasoningBudgetTokens  *int    `json:"reasoning_budget_tokens,omitempty"`
	ThinkingBudgetTokens   *int    `json:"thinking_budget_tokens,omitempty"`
	ReasoningBudgetMessage *string `json:"reasoning_budget_message,omitempty"`

	MaxTokens         *int               `json:"max_tokens,omitempty"`  // output tokens; nil = endpoint default
	Temperature       *float64           `json:"temperature,omitempty"` // nil = 1.0; 0 = greedy
	TopP              *float64           `json:"top_p,omitempty"`       // nil = 1.0
	TopK              int                `json:"top_k,omitempty"`       // 0 or -1 = off
	MinP              float64            `json:"min_p,omitempty"`       // 0 = off
	Seed              *int64             `json:"seed,omitempty"`        // nil = random
	N                 *int               `json:"n,omitempty"`           // choices; nil = 1
	Stop              Stop               `json:"stop,omitempty"`
	StopTokenIDs      []int32            `json:"stop_token_ids,omitempty"`
	IncludeStopStr    bool               `json:"include_stop_str_in_output,omitempty"`
	IgnoreEOS         bool               `json:"ignore_eos,omitempty"`
	MinTokens         int                `json:"min_tokens,omitempty"`
	SkipSpecialTokens *bool              `json:"skip_special_tokens,omitempty"` // nil = true
	PresencePenalty   float64            `json:"presence_penalty,omitempty"`
	FrequencyPenalty  float64            `json:"frequency_penalty,omitempty"`
	RepetitionPenalty *float64           `json:"repetition_penalty,omitempty"` // nil = 1.0
	LogitBias         map[string]float64 `json:"logit_bias,omitempty"`         // token id (decimal string) → bias
	Echo              bool               `json:"echo,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
	StreamOptions     *StreamOptions     `json:"stream_options,omitempty"`
	ResponseFormat    *ResponseFormat    `json:"response_format,omitempty"`
	// vLLM's structured outputs: structured_outputs, and the guided_*
	// fields it still accepts (docs/api.md; Constraint resolves them).
	StructuredOutputs       *StructuredOutputsParam `json:"structured_outputs,omitempty"`
	GuidedJSON              json.RawMessage         `json:"guided_json,omitempty"` // a schema object, or its JSON text as a string
	GuidedRegex             string                  `json:"guided_regex,omitempty"`
	GuidedChoice            []string                `json:"guided_choice,omitempty"`
	GuidedGrammar           string                  `json:"guided_grammar,omitempty"`
	GuidedWhitespacePattern string                  `json:"guided_whitespace_pattern,omitempty"`
	GuidedDecodingBackend   string                  `json:"guided_decoding_backend,omitempty"` // accepted; LLGuidance serves every backend name
	// llama.cpp's own constraint fields on its OpenAI routes: a GBNF
	// grammar, and a JSON Schema (Constraint resolves them).
	Grammar    string          `json:"grammar,omitempty"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
	// TimingsPerToken is llama.cpp's: its timings object on the answer
	// (a stream's usage chunk).
	TimingsPerToken bool `json:"timings_per_token,omitempty"`
	// IDSlot is llama.cpp's id_slot: run on that slot's engine and
	// remember the tokens there, for slot save (nil or -1: any).
	IDSlot *int `json:"id_slot,omitempty"`
	// ReturnProgress is llama.cpp's: a stream reports prompt_progress
	// while the prompt is computed (the Responses API's stream).
	ReturnProgress bool `json:"return_progress,omitempty"`
	// Verbose is llama.cpp's: the __verbose object (the rendered prompt)
	// on a chat answer; the server's --verbose sets it for every request.
	Verbose        bool     `json:"verbose,omitempty"`
	UseBeamSearch  bool     `json:"use_beam_search,omitempty"`
	BestOf         *int     `json:"best_of,omitempty"`         // candidates per prompt (≥ n); beam width with use_beam_search
	LengthPenalty  *float64 `json:"length_penalty,omitempty"`  // beam score = cumulative logprob / length^length_penalty; nil = 1
	PromptLogprobs *int     `json:"prompt_logprobs,omitempty"` // top logprobs per prompt token; -1 = the vocabulary
	// AllowedTokenIDs restricts sampling to these ids (nil = any; [] is
	// refused, as vLLM).
	AllowedTokenIDs []int32 `json:"allowed_token_ids,omitempty"`
	// LogprobTokenIDs reports logprobs of exactly these ids instead of the
	// top ones (vLLM; at most MaxLogprobTokenIDs, needs logprobs).
	LogprobTokenIDs []int32 `json:"logprob_token_ids,omitempty"`
	// KVTransferParams are vLLM's disaggregated-prefill hand-over (a KV
	// connector's keys, which Tandem has no connector for and ignores);
	// its prompt_token_ids, when set, are the prompt as the prefill side
	// tokenized it, used verbatim instead of the messages (vLLM's
	// decode-side token reuse).
	KVTransferParams *KVTransferParams `json:"kv_transfer_params,omitempty"`
	// TruncatePromptTokens keeps only the last k prompt tokens; -1 keeps
	// the last max_model_len - 1.
	TruncatePromptTokens *int `json:"truncate_prompt_tokens,omitempty"`
	// TruncationSide is the side truncate_prompt_tokens cuts: "left" (the
	// default: the last k stay) or "right" (the first k stay).
	TruncationSide   *string `json:"truncation_side,omitempty"`
	AddSpecialTokens *bool   `json:"add_special_tokens,omitempty"`

	User      string         `json:"user,omitempty"`
	RequestID string         `json:"request_id,omitempty"`
	Priority  int            `json:"priority,omitempty"`
	CacheSalt string         `json:"cache_salt,omitempty"`
	SessionID string         `json:"session_id,omitempty"` // resolve with package session, not directly
	VLLMXArgs map[string]any `json:"vllm_xargs,omitempty"`
	// LoRA is llama-server's per-request adapter list: the ids of GET
	// /lora-adapters at these scales, the others at 0; nil: the server's
	// global scales (vLLM's way is a model naming an adapter).
	LoRA []LoRAScale `json:"lora,omitempty"`

	// ReturnTokensAsTokenIDs writes logprobs' tokens as "token_id:N";
	// nil = the server's --return-tokens-as-token-ids.
	ReturnTokensAsTokenIDs *bool `json:"return_tokens_as_token_ids,omitempty"`
	// ReturnTokenIDs adds prompt_token_ids and token_ids to the answer.
	ReturnTokenIDs bool `json:"return_token_ids,omitempty"`
}

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage         bool `json:"include_usage,omitempty"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

// ResponseFormat is response_format: "text", "json_object", or
// "json_schema" with json_schema {name, schema, strict, description}. The
// Responses API's text.format flattens the json_schema object into it
// (name, schema, strict at the top).
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *JSONSchemaSpec `json:"json_schema,omitempty"`
	// The Responses API's flat form of json_schema.
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
	Strict *bool           `json:"strict,omitempty"`
	// vLLM's structural_tag response format: tool calls between triggers
	// inside free text (enginecore/structured's structtag.go).
	Structures json.RawMessage `json:"structures,omitempty"`
	Triggers   json.RawMessage `json:"triggers,omitempty"`
	Format     json.RawMessage `json:"format,omitempty"`
}

// JSONSchemaSpec is response_format.json_schema.
type JSONSchemaSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// StructuredOutputsParam is vLLM's structured_outputs request field.
type StructuredOutputsParam struct {
	JSON                        json.RawMessage `json:"json,omitempty"` // a schema object, or its JSON text
	Regex                       string          `json:"regex,omitempty"`
	Choice                      []string        `json:"choice,omitempty"`
	Grammar                     string          `json:"grammar,omitempty"`
	JSONObject                  bool            `json:"json_object,omitempty"`
	DisableAnyWhitespace        bool            `json:"disable_any_whitespace,omitempty"`
	DisableAdditionalProperties bool            `json:"disable_additional_properties,omitempty"`
	WhitespacePattern           string          `json:"whitespace_pattern,omitempty"`
	StructuralTag               json.RawMessage `json:"structural_tag,omitempty"`
}

// NumChoices returns n, default 1.
func (p *Params) NumChoices() int {
	if p.N == nil {
		return 1
	}
	return *p.N
}

// NumCandidates returns how many candidates are generated per prompt:
// best_of when set, else n. With use_beam_search it is the beam width.
func (p *Params) NumCandidates() int {
	if p.BestOf != nil {
		return max(*p.BestOf, p.NumChoices())
	}
	return p.NumChoices()
}

// LengthPenaltyOrDefault returns length_penalty, default 1.
func (p *Params) LengthPenaltyOrDefault() float64 {
	if p.LengthPenalty == nil {
		return 1
	}
	return *p.LengthPenalty
}

// AddSpecial returns add_special_tokens, defaulting to def (true for
// completions, false for chat, whose template adds them).
func (p *Params) AddSpecial(def bool) bool {
	if p.AddSpecialTokens == nil {
		return def
	}
	return *p.AddSpecialTokens
}

// SkipSpecial returns skip_special_tokens, default true.
func (p *Params) SkipSpecial() bool { return p.SkipSpecialTokens == nil || *p.SkipSpecialTokens }

// IncludeUsage reports whether a stream ends with a usage chunk.
func (p *Params) IncludeUsage() bool { return p.StreamOptions != nil && p.StreamOptions.IncludeUsage }

// ContinuousUsage reports whether every stream chunk carries usage.
func (p *Params) ContinuousUsage() bool {
	return p.StreamOptions != nil && p.StreamOptions.ContinuousUsageStats
}

// ChatCompletionRequest is the body of POST /v1/chat/completions.
type ChatCompletionRequest struct {
	Params
	Messages             []ChatMessage  `json:"messages"`
	MaxCompletionTokens  *int           `json:"max_completion_tokens,omitempty"` // wins over max_tokens
	Logprobs             bool           `json:"logprobs,omitempty"`
	TopLogprobs          *int           `json:"top_logprobs,omitempty"`
	AddGenerationPrompt  *bool          `json:"add_generation_prompt,omitempty"` // nil = true unless continue_final_message
	ContinueFinalMessage bool           `json:"continue_final_message,omitempty"`
	ChatTemplateKwargs   map[string]any `json:"chat_template_kwargs,omitempty"`
	// ChatTemplate is a per-request template; refused (like vLLM without
	// --trust-request-chat-template): the server's template is used.
	ChatTemplate      *string         `json:"chat_template,omitempty"`
	Tools             json.RawMessage `json:"tools,omitempty"`       // passed to the chat template as tools
	ToolChoice        json.RawMessage `json:"tool_choice,omitempty"` // "none", "auto", "required" or a named function (ToolPlanOf)
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty"`
	// Functions and FunctionCall are OpenAI's deprecated function
	// calling, served as tools (adoptFunctions, in Validate), which sets
	// LegacyFunctions: the answer's call goes back as function_call.
	Functions       json.RawMessage `json:"functions,omitempty"`
	FunctionCall    json.RawMessage `json:"function_call,omitempty"`
	LegacyFunctions bool            `json:"-"`
	// IncludeReasoning false drops the reasoning the reasoning parser
	// splits off (vLLM's); absent, it is returned.
	IncludeReasoning *bool `json:"include_reasoning,omitempty"`
	// ReasoningEffort (one of ReasoningEfforts) reaches the chat template
	// as reasoning_effort, and as enable_thinking (false for "none")
	// unless chat_template_kwargs sets it, as vLLM renders it.
	ReasoningEffort *string `json:"reasoning_effort,omitempty"`
	// ReasoningFormat is llama-server's reasoning_format (ReasoningFormats;
	// "" = the server's --reasoning-format): how the reasoning comes back.
	ReasoningFormat string `json:"reasoning_format,omitempty"`
}

// MaxOutputTokens returns max_completion_tokens, else max_tokens; ok is false
// when neither is set (generate until the context is full).
func (r *ChatCompletionRequest) MaxOutputTokens() (n int, ok bool) {
	switch {
	case r.MaxCompletionTokens != nil:
		return *r.MaxCompletionTokens, true
	case r.MaxTokens != nil:
		return *r.MaxTokens, true
	default:
		return 0, false
	}
}

// KVTransferParams is the part of vLLM's kv_transfer_params Tandem reads.
type KVTransferParams struct {
	PromptTokenIDs []int32 `json:"prompt_token_ids,omitempty"`
}

// SampleLogprobs is the alternatives per sampled token the engine must
// return: top_logprobs (0 when unset) with logprobs, nil without.
func (r *ChatCompletionRequest) SampleLogprobs() *int {
	if !r.Logprobs {
		return nil
	}
	k := 0
	if r.TopLogprobs != nil {
		k = *r.TopLogprobs
	}
	return &k
}

// AddGenPrompt returns add_generation_prompt: its value when set, else true
// unless continue_final_message is set.
func (r *ChatCompletionRequest) AddGenPrompt() bool {
	if r.AddGenerationPrompt != nil {
		return *r.AddGenerationPrompt
	}
	return !r.ContinueFinalMessage
}

// ChatMessage is one element of messages. Raw keeps the message as sent,
// with every field (tool_calls, tool_call_id, reasoning_content, …), for
// chat templates that read them.
type ChatMessage struct {
	Role    string          `json:"role"`
	Content Content         `json:"content"`
	Name    string          `json:"name,omitempty"`
	Raw     json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the raw message.
func (m *ChatMessage) UnmarshalJSON(b []byte) error {
	type plain ChatMessage
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = ChatMessage(p)
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Content is a message's content: a string, an array of content parts, or
// null. Text holds it as one string (text parts joined with "\n", as vLLM
// does); Parts keeps the parts for validation when it was an array.
type Content struct {
	Text  string
	Parts []ContentPart // nil unless content was an array
}

// ContentPart is one element of an array content. Only type "text" is
// supported; Validate rejects the others.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// UnmarshalJSON accepts a string, an array of content parts, or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	switch firstByte(b) {
	case 'n':
		return nil
	case '"':
		return json.Unmarshal(b, &c.Text)
	case '[':
		var ok bool
		c.Text, c.Parts, ok = textParts(b, func(p ContentPart) (string, bool) { return p.Text, p.Type == "text" })
		if !ok {
			return typeError[Content](b)
		}
		return nil
	default:
		return typeError[Content](b)
	}
}

// textParts decodes a content array into its parts (never nil) and the
// text of those text accepts, joined with "\n"; ok is false when b is not
// an array of parts.
func textParts[P any](b []byte, text func(P) (string, bool)) (joined string, parts []P, ok bool) {
	if err := json.Unmarshal(b, &parts); err != nil {
		return "", nil, false
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if t, isText := text(p); isText {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n"), nonNil(parts), true
}

// MarshalJSON renders the content as its string form.
func (c Content) MarshalJSON() ([]byte, error) { return json.Marshal(c.Text) }

// CompletionRequest is the body of POST /v1/completions.
type CompletionRequest struct {
	Params
	Prompt   Prompt  `json:"prompt"`
	Logprobs *int    `json:"logprobs,omitempty"` // top logprobs per token; nil = none
	Suffix   *string `json:"suffix,omitempty"`   // not supported
}

// defaultCompletionMaxTokens is max_tokens of a completions request that sets
// none, as in OpenAI and vLLM.
const defaultCompletionMaxTokens = 16

// MaxOutputTokens returns max_tokens, default 16.
func (r *CompletionRequest) MaxOutputTokens() (n int, ok bool) {
	if r.MaxTokens != nil {
		return *r.MaxTokens, true
	}
	return defaultCompletionMaxTokens, true
}

// Stop is stop: a string or an array of strings in JSON, always a list here.
type Stop []string

// UnmarshalJSON accepts a string, an array of strings, or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	switch firstByte(b) {
	case 'n':
		*s = nil
		return nil
	case '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Stop{one}
		return nil
	case '[':
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return typeError[Stop](b)
		}
		*s = list
		return nil
	default:
		return typeError[Stop](b)
	}
}

// PromptKind says which JSON form a completions prompt took.
type PromptKind int

// The prompt forms.
const (
	PromptNone         PromptKind = iota // absent or null
	PromptText                           // "prompt": "text"
	PromptTexts                          // "prompt": ["text", …] (also [])
	PromptTokens                         // "prompt": [1, 2, 3]
	PromptTokenBatches                   // "prompt": [[1, 2], [3]]
)

// Prompt is a completions prompt in one of its four forms.
type Prompt struct {
	Kind   PromptKind
	Texts  []string  // PromptText (one element) and PromptTexts
	Tokens [][]int32 // PromptTokens (one element) and PromptTokenBatches; token ids
}

// Len returns the number of prompts (each yields its own choices).
func (p Prompt) Len() int {
	switch p.Kind {
	case PromptText, PromptTexts:
		return len(p.Texts)
	case PromptTokens, PromptTokenBatches:
		return len(p.Tokens)
	default:
		return 0
	}
}

// UnmarshalJSON accepts a string, an array of strings, an array of integers,
// an array of arrays of integers, or null. Token ids must fit in int32.
func (p *Prompt) UnmarshalJSON(b []byte) error {
	*p = Prompt{}
	switch firstByte(b) {
	case 'n':
		return nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = Prompt{Kind: PromptText, Texts: []string{s}}
		return nil
	case '[':
	default:
		return typeError[Prompt](b)
	}
	// The first element's first byte picks the form; each form's decoder
	// checks the rest (no copy of the elements: prompts may be 16 MB).
	inner := bytes.TrimLeft(b, " \t\r\n")[1:]
	switch c := firstByte(inner); {
	case c == ']':
		if err := json.Unmarshal(b, new([]json.RawMessage)); err != nil {
			return typeError[Prompt](b)
		}
		*p = Prompt{Kind: PromptTexts, Texts: []string{}}
	case c == '"':
		var texts []string
		if err := json.Unmarshal(b, &texts); err != nil {
			return typeError[Prompt](b)
		}
		*p = Prompt{Kind: PromptTexts, Texts: texts}
	case c == '-' || (c >= '0' && c <= '9'):
		var ids []int32
		if err := json.Unmarshal(b, &ids); err != nil {
			return typeError[Prompt](b)
		}
		*p = Prompt{Kind: PromptTokens, Tokens: [][]int32{ids}}
	case c == '[':
		var batches [][]int32
		if err := json.Unmarshal(b, &batches); err != nil {
			return typeError[Prompt](b)
		}
		*p = Prompt{Kind: PromptTokenBatches, Tokens: batches}
	default:
		return typeError[Prompt](b)
	}
	return nil
}

// MarshalJSON renders the prompt in the form it was decoded from.
func (p Prompt) MarshalJSON() ([]byte, error) {
	switch p.Kind {
	case PromptText:
		if len(p.Texts) == 1 {
			return json.Marshal(p.Texts[0])
		}
		return json.Marshal(p.Texts)
	case PromptTexts:
		return json.Marshal(p.Texts)
	case PromptTokens:
		if len(p.Tokens) == 1 {
			return json.Marshal(p.Tokens[0])
		}
		return json.Marshal(p.Tokens)
	case PromptTokenBatches:
		return json.Marshal(p.Tokens)
	default:
		return []byte("null"), nil
	}
}

// firstByte returns the first non-space byte of a JSON value.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// typeError reports that JSON value b does not fit T; encoding/json adds the
// field path, so Decode can name the param.
func typeError[T any](b []byte) error {
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[T]()}
}

// jsonKind names the kind of JSON value b, for error messages, with the
// element kinds of an array ("array of numbers").
func jsonKind(b []byte) string {
	if firstByte(b) == '[' {
		if kinds := arrayKinds(b); kinds != "" {
			return "array of " + kinds
		}
	}
	return shallowKind(b)
}

// shallowKind names the kind of JSON value b.
func shallowKind(b []byte) string {
	switch c := firstByte(b); {
	case c == '"':
		return "string"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	default:
		return "number"
	}
}

// arrayKinds names the element kinds of a JSON array ("numbers", "mixed
// values"), or "" when b is not an array of scalars or arrays.
func arrayKinds(b []byte) string {
	var elems []json.RawMessage
	if json.Unmarshal(b, &elems) != nil || len(elems) == 0 {
		return ""
	}
	kind := shallowKind(elems[0])
	for _, e := range elems[1:] {
		if shallowKind(e) != kind {
			return "mixed values"
		}
	}
	if kind == "number" {
		// Flag the usual culprit: non-integers or ids beyond int32.
		for _, e := range elems {
			var f float64
			if json.Unmarshal(e, &f) == nil && (f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32) {
				return "numbers that are not int32 integers"
			}
		}
	}
	return kind + "s"
}
