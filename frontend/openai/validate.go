package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/wire"
)

// Limits on request fields.
const (
	MaxN               = 128 // most choices per request
	DefaultMaxLogprobs = 20  // most top logprobs per token unless the engines say (vLLM's default max_logprobs)
	MaxBeamWidth       = 10  // widest beam: each beam step asks for 2·width logprobs, at most DefaultMaxLogprobs

	// Bounds on what one request may cost (issue #14: one 5 KB body of
	// prompts × n became 128,000 engine requests; one 8 MB id grew the
	// engine by a GB).
	MaxRequestIDBytes = 256  // request_id and X-Request-Id, as session_id
	MaxPrompts        = 2048 // prompts in one completions request
	MaxSequences      = 2048 // prompts × max(n, best_of): engine requests from one request
	MaxStops          = 64   // stop strings
	MaxStopBytes      = 1024 // bytes per stop string
	MaxStopTokenIDs   = 1024
	MaxLogitBiasTerms = 1024 // logit_bias entries

	maxLogitBias = 100 // |logit_bias| bound, as OpenAI
	maxPenalty   = 2.0 // |presence_penalty|, |frequency_penalty| bound
)

// checkMessage refuses a message (at names it: "messages[3]") without a
// role or with a content part that is not text.
func checkMessage(m ChatMessage, at string) *Error {
	if m.Role == "" {
		return BadRequest(at+".role", "'%s.role' is required.", at)
	}
	for j, p := range m.Content.Parts {
		if p.Type != "text" {
			return BadRequest(fmt.Sprintf("%s.content[%d].type", at, j), "Content part type %q is not supported; only \"text\" is.", p.Type)
		}
	}
	return nil
}

// Validate checks a chat request. It returns the first problem found as a 400
// naming the field.
func (r *ChatCompletionRequest) Validate() *Error {
	if len(r.Messages) == 0 {
		return BadRequest("messages", "'messages' must contain at least one message.")
	}
	if e := r.adoptFunctions(); e != nil {
		return e
	}
	for i, m := range r.Messages {
		if e := checkMessage(m, fmt.Sprintf("messages[%d]", i)); e != nil {
			return e
		}
	}
	if n := len(r.Messages); n >= 2 && r.Messages[n-1].Role == "assistant" && r.Messages[n-2].Role == "assistant" {
		// A final assistant message is the answer's start (prefill);
		// two are ambiguous, and llama-server refuses them too.
		return BadRequest("messages", "Cannot have 2 or more assistant messages at the end of the list.")
	}
	if e := r.Params.validate(); e != nil {
		return e
	}
	if e := CheckEffort("reasoning_effort", r.ReasoningEffort); e != nil {
		return e
	}
	if r.ReasoningFormat != "" && !slices.Contains(ReasoningFormats, r.ReasoningFormat) {
		return BadRequest("reasoning_format", "'reasoning_format' must be one of %s, got %q.", strings.Join(ReasoningFormats, ", "), r.ReasoningFormat)
	}
	if r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1 {
		return BadRequest("max_completion_tokens", "'max_completion_tokens' must be at least 1, got %d.", *r.MaxCompletionTokens)
	}
	if r.TopLogprobs != nil {
		if *r.TopLogprobs < -1 { // the server checks the max logprobs
			return BadRequest("top_logprobs", "`top_logprobs` must be a positive value or -1.")
		}
		if *r.TopLogprobs != 0 && !r.Logprobs {
			return BadRequest("top_logprobs", "'top_logprobs' requires 'logprobs' to be true.")
		}
	}
	if len(r.LogprobTokenIDs) > 0 && !r.Logprobs {
		return BadRequest("logprob_token_ids", "when using `logprob_token_ids`, `logprobs` must be true.")
	}
	if r.ChatTemplate != nil {
		return BadRequest("chat_template", "A per-request 'chat_template' is not accepted; the server's template is used (start it with --chat-template to change it).")
	}
	plan, e := r.ToolPlanOf()
	if e != nil {
		return e
	}
	if plan.Constraint != nil && r.UseBeamSearch {
		return beamWithConstraint()
	}
	if plan.Constraint != nil {
		if so, _ := r.Params.Constraint(); so != nil {
			return BadRequest("tool_choice", "'tool_choice' %s and a response format both constrain the output; set one.", r.ToolChoice)
		}
	}
	if r.ContinueFinalMessage && r.AddGenerationPrompt != nil && *r.AddGenerationPrompt {
		return BadRequest("continue_final_message", "Cannot set both 'continue_final_message' and 'add_generation_prompt' to true.")
	}
	if maxOut, ok := r.MaxOutputTokens(); ok && r.MinTokens > maxOut {
		return BadRequest("min_tokens", "'min_tokens' must be less than or equal to the maximum output tokens (%d), got %d.", maxOut, r.MinTokens)
	}
	return nil
}

// Validate checks a completions request. It returns the first problem found
// as a 400 naming the field.
func (r *CompletionRequest) Validate() *Error {
	if e := r.validatePrompt(); e != nil {
		return e
	}
	if e := r.Params.validate(); e != nil {
		return e
	}
	if r.Logprobs != nil {
		if *r.Logprobs < -1 { // the server checks the max logprobs
			return BadRequest("logprobs", "`logprobs` must be a positive value or -1.")
		}
	}
	if len(r.LogprobTokenIDs) > 0 && r.Logprobs == nil {
		return BadRequest("logprob_token_ids", "when using `logprob_token_ids`, `logprobs` must be set.")
	}
	if r.Suffix != nil && *r.Suffix != "" {
		return BadRequest("suffix", "'suffix' is not supported.")
	}
	if maxOut, _ := r.MaxOutputTokens(); r.MinTokens > maxOut {
		return BadRequest("min_tokens", "'min_tokens' must be less than or equal to 'max_tokens' (%d), got %d.", maxOut, r.MinTokens)
	}
	return nil
}

func (r *CompletionRequest) validatePrompt() *Error {
	p := r.Prompt
	// vLLM's wording, for a missing prompt, "" and [] alike.
	if p.Kind == PromptNone || p.Len() == 0 || p.Kind == PromptText && p.Texts[0] == "" {
		return BadRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	if n := p.Len(); n > MaxPrompts {
		return BadRequest("prompt", "'prompt' holds %d prompts; at most %d per request.", n, MaxPrompts)
	}
	if n := p.Len() * r.NumCandidates(); n > MaxSequences {
		return BadRequest("n", "%d prompts × %d choices is %d sequences; at most %d per request.", p.Len(), r.NumCandidates(), n, MaxSequences)
	}
	for i, ids := range p.Tokens {
		if len(ids) == 0 {
			return BadRequest("prompt", "'prompt' must not contain an empty token list (prompt[%d]).", i)
		}
		for _, id := range ids {
			if id < 0 {
				return BadRequest("prompt", "'prompt' token ids must be non-negative: Input should be greater than or equal to 0, got %d.", id)
			}
		}
	}
	return nil
}

// validate checks the shared fields, in a fixed order.
func (p *Params) validate() *Error {
	for _, l := range p.LoRA {
		if e := l.Validate(); e != nil {
			return e
		}
	}
	if p.ThinkingTokenBudget != nil && *p.ThinkingTokenBudget < -1 {
		return BadRequest("thinking_token_budget", "'thinking_token_budget' must be -1 (unlimited) or at least 0, got %d.", *p.ThinkingTokenBudget)
	}
	if p.ReasoningBudgetTokens != nil && *p.ReasoningBudgetTokens < -1 {
		return BadRequest("reasoning_budget_tokens", "'reasoning_budget_tokens' must be -1 (unrestricted) or at least 0, got %d.", *p.ReasoningBudgetTokens)
	}
	if p.ThinkingBudgetTokens != nil && *p.ThinkingBudgetTokens < -1 {
		return BadRequest("thinking_budget_tokens", "'thinking_budget_tokens' must be -1 (unrestricted) or at least 0, got %d.", *p.ThinkingBudgetTokens)
	}
	if p.ReasoningBudgetMessage != nil && len(*p.ReasoningBudgetMessage) > wire.MaxReasoningBudgetMessage {
		return BadRequest("reasoning_budget_message", "'reasoning_budget_message' of %d bytes: at most %d.", len(*p.ReasoningBudgetMessage), wire.MaxReasoningBudgetMessage)
	}
	if p.MaxTokens != nil && *p.MaxTokens < 1 {
		return BadRequest("max_tokens", "'max_tokens' must be at least 1, got %d.", *p.MaxTokens)
	}
	if p.Temperature != nil && !(*p.Temperature >= 0) {
		return BadRequest("temperature", "'temperature' must be non-negative, got %g.", *p.Temperature)
	}
	if p.TopP != nil && !(*p.TopP > 0 && *p.TopP <= 1) {
		return BadRequest("top_p", "'top_p' must be in (0, 1], got %g.", *p.TopP)
	}
	if p.TopK < -1 {
		return BadRequest("top_k", "'top_k' must be 0 or -1 (disabled), or at least 1, got %d.", p.TopK)
	}
	if !(p.MinP >= 0 && p.MinP <= 1) {
		return BadRequest("min_p", "'min_p' must be in [0, 1], got %g.", p.MinP)
	}
	if p.N != nil && (*p.N < 1 || *p.N > MaxN) {
		return BadRequest("n", "'n' must be between 1 and %d, got %d.", MaxN, *p.N)
	}
	if !(p.PresencePenalty >= -maxPenalty && p.PresencePenalty <= maxPenalty) {
		return BadRequest("presence_penalty", "'presence_penalty' must be in [-2, 2], got %g.", p.PresencePenalty)
	}
	if !(p.FrequencyPenalty >= -maxPenalty && p.FrequencyPenalty <= maxPenalty) {
		return BadRequest("frequency_penalty", "'frequency_penalty' must be in [-2, 2], got %g.", p.FrequencyPenalty)
	}
	if p.RepetitionPenalty != nil && !(*p.RepetitionPenalty > 0) {
		return BadRequest("repetition_penalty", "'repetition_penalty' must be greater than 0, got %g.", *p.RepetitionPenalty)
	}
	if p.MinTokens < 0 {
		return BadRequest("min_tokens", "'min_tokens' must be non-negative, got %d.", p.MinTokens)
	}
	if len(p.RequestID) > MaxRequestIDBytes {
		return BadRequest("request_id", "'request_id' is %d bytes; at most %d.", len(p.RequestID), MaxRequestIDBytes)
	}
	if len(p.Stop) > MaxStops {
		return BadRequest("stop", "'stop' holds %d strings; at most %d.", len(p.Stop), MaxStops)
	}
	for _, s := range p.Stop {
		if s == "" {
			return BadRequest("stop", "'stop' must not contain an empty string.")
		}
		if len(s) > MaxStopBytes {
			return BadRequest("stop", "a stop string of %d bytes; at most %d.", len(s), MaxStopBytes)
		}
	}
	if len(p.StopTokenIDs) > MaxStopTokenIDs {
		return BadRequest("stop_token_ids", "'stop_token_ids' holds %d ids; at most %d.", len(p.StopTokenIDs), MaxStopTokenIDs)
	}
	if len(p.LogitBias) > MaxLogitBiasTerms {
		return BadRequest("logit_bias", "'logit_bias' holds %d entries; at most %d.", len(p.LogitBias), MaxLogitBiasTerms)
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 {
			return BadRequest("stop_token_ids", "'stop_token_ids' must be non-negative, got %d.", id)
		}
	}
	var badKeys []string // every one, as vLLM names them all
	for _, k := range slices.Sorted(maps.Keys(p.LogitBias)) {
		if id, err := strconv.ParseInt(k, 10, 32); err != nil || id < 0 {
			badKeys = append(badKeys, strconv.Quote(k))
		}
	}
	if len(badKeys) > 0 {
		return BadRequest("logit_bias", "'logit_bias' keys must be token ids (non-negative integers), got %s.", strings.Join(badKeys, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(p.LogitBias)) {
		v := p.LogitBias[k]
		if !(v >= -maxLogitBias && v <= maxLogitBias) {
			return BadRequest("logit_bias", "'logit_bias' values must be in [-100, 100], got %g for token %s.", v, k)
		}
	}
	if p.StreamOptions != nil && !p.Stream {
		return BadRequest("stream_options", "'stream_options' can only be set when 'stream' is true.")
	}
	if _, e := p.Constraint(); e != nil {
		return e
	}
	if k := p.TruncatePromptTokens; k != nil && *k < 1 && *k != -1 {
		return BadRequest("truncate_prompt_tokens", "'truncate_prompt_tokens' must be -1 or at least 1, got %d.", *k)
	}
	if side := p.TruncationSide; side != nil && *side != "left" && *side != "right" {
		return BadRequest("truncation_side", "`truncation_side` must be either 'left' or 'right'.")
	}
	if e := p.validateLogprobFields(); e != nil {
		return e
	}
	return p.validateCandidates()
}

// beamWithConstraint refuses beam search with a tool_choice that forces
// calls: beam answers do not go through the tool-call reading.
func beamWithConstraint() *Error {
	return BadRequest("use_beam_search", "'use_beam_search' cannot be combined with a tool_choice that forces calls.")
}

// validateCandidates checks best_of, use_beam_search and length_penalty.
func (p *Params) validateCandidates() *Error {
	if p.BestOf != nil {
		if v := *p.BestOf; v < 1 || v > MaxN {
			return BadRequest("best_of", "'best_of' must be between 1 and %d, got %d.", MaxN, v)
		}
		if *p.BestOf < p.NumChoices() {
			return BadRequest("best_of", "'best_of' (%d) must be greater than or equal to 'n' (%d).", *p.BestOf, p.NumChoices())
		}
	}
	if p.LengthPenalty != nil && math.IsNaN(*p.LengthPenalty) {
		return BadRequest("length_penalty", "'length_penalty' must be a number.")
	}
	if p.UseBeamSearch {
		if w := p.NumCandidates(); w > MaxBeamWidth {
			return BadRequest("n", "Beam search takes a beam width ('n' or 'best_of') of at most %d, got %d.", MaxBeamWidth, w)
		}
		return nil
	}
	if p.Stream && p.NumCandidates() > p.NumChoices() {
		return BadRequest("best_of", "'best_of' greater than 'n' cannot be used with 'stream'.")
	}
	return nil
}

// unsupportedFields are vLLM request fields Tandem does not implement yet.
// Ignoring them like unknown fields would silently change what the client
// asked for, so a non-empty value is a 400 naming the field.
var unsupportedFields = []string{
	"bad_words", "prompt_embeds", "mm_processor_kwargs", "documents", "repetition_detection",
}

// CheckUnsupported returns a 400 when the JSON object body sets a field of
// a vLLM feature Tandem does not have yet (null, false, "", [] and {} count
// as unset).
func CheckUnsupported(body []byte) *Error {
	// Only the named fields are decoded (a struct of them, not a map of
	// every field): a 16 MB prompt is skipped, not copied.
	v := reflect.New(unsupportedStruct)
	if json.Unmarshal(body, v.Interface()) != nil {
		return nil // Decode reports malformed bodies
	}
	for i, name := range unsupportedFields {
		switch raw := string(bytes.TrimSpace(v.Elem().Field(i).Bytes())); raw {
		case "", "null", "false", `""`, "[]", "{}":
		default:
			return BadRequest(name, "'%s' is not supported yet.", name)
		}
	}
	return nil
}

// unsupportedStruct has one json.RawMessage field per unsupportedFields
// entry, tagged with its name.
var unsupportedStruct = func() reflect.Type {
	fields := make([]reflect.StructField, len(unsupportedFields))
	for i, name := range unsupportedFields {
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: reflect.TypeFor[json.RawMessage](), Tag: reflect.StructTag(`json:"` + name + `"`)}
	}
	return reflect.StructOf(fields)
}()

// Validate checks the shared fields of a request built by another
// dialect (llama.cpp's native routes) as the OpenAI routes check theirs.
func (p *Params) Validate() *Error { return p.validate() }
