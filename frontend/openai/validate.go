package openai

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Limits on request fields.
const (
	MaxN        = 128 // most choices per request
	MaxLogprobs = 20  // most top logprobs per token (vLLM's default max_logprobs)

	maxLogitBias = 100 // |logit_bias| bound, as OpenAI
	maxPenalty   = 2.0 // |presence_penalty|, |frequency_penalty| bound
)

// Validate checks a chat request. It returns the first problem found as a 400
// naming the field.
func (r *ChatCompletionRequest) Validate() *Error {
	if len(r.Messages) == 0 {
		return BadRequest("messages", "'messages' must contain at least one message.")
	}
	for i, m := range r.Messages {
		if m.Role == "" {
			return BadRequest(fmt.Sprintf("messages[%d].role", i), "'messages[%d].role' is required.", i)
		}
		for j, p := range m.Content.Parts {
			if p.Type != "text" {
				return BadRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j),
					"Content part type %q is not supported; only \"text\" is.", p.Type)
			}
		}
	}
	if e := r.Params.validate(); e != nil {
		return e
	}
	if r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1 {
		return BadRequest("max_completion_tokens", "'max_completion_tokens' must be at least 1, got %d.", *r.MaxCompletionTokens)
	}
	if r.TopLogprobs != nil {
		if v := *r.TopLogprobs; v < 0 || v > MaxLogprobs {
			return BadRequest("top_logprobs", "'top_logprobs' must be between 0 and %d, got %d.", MaxLogprobs, v)
		}
		if *r.TopLogprobs > 0 && !r.Logprobs {
			return BadRequest("top_logprobs", "'top_logprobs' requires 'logprobs' to be true.")
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
		if v := *r.Logprobs; v < 0 || v > MaxLogprobs {
			return BadRequest("logprobs", "'logprobs' must be between 0 and %d, got %d.", MaxLogprobs, v)
		}
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
	if p.Kind == PromptNone {
		return BadRequest("prompt", "'prompt' is required.")
	}
	if p.Len() == 0 {
		return BadRequest("prompt", "'prompt' must not be empty.")
	}
	for i, ids := range p.Tokens {
		if len(ids) == 0 {
			return BadRequest("prompt", "'prompt' must not contain an empty token list (prompt[%d]).", i)
		}
		for _, id := range ids {
			if id < 0 {
				return BadRequest("prompt", "'prompt' token ids must be non-negative, got %d.", id)
			}
		}
	}
	return nil
}

// validate checks the shared fields, in a fixed order.
func (p *Params) validate() *Error {
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
	for _, s := range p.Stop {
		if s == "" {
			return BadRequest("stop", "'stop' must not contain an empty string.")
		}
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 {
			return BadRequest("stop_token_ids", "'stop_token_ids' must be non-negative, got %d.", id)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.LogitBias)) {
		v := p.LogitBias[k]
		if id, err := strconv.ParseInt(k, 10, 32); err != nil || id < 0 {
			return BadRequest("logit_bias", "'logit_bias' keys must be token ids (non-negative integers), got %q.", k)
		}
		if !(v >= -maxLogitBias && v <= maxLogitBias) {
			return BadRequest("logit_bias", "'logit_bias' values must be in [-100, 100], got %g for token %s.", v, k)
		}
	}
	if p.StreamOptions != nil && !p.Stream {
		return BadRequest("stream_options", "'stream_options' can only be set when 'stream' is true.")
	}
	if f := p.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json_object", "json_schema", "structural_tag":
			return BadRequest("response_format", "'response_format' of type %q is not supported yet.", f.Type)
		default:
			return BadRequest("response_format", "Unknown 'response_format' type %q.", f.Type)
		}
	}
	if p.UseBeamSearch {
		return BadRequest("use_beam_search", "Beam search is not supported yet.")
	}
	return nil
}
