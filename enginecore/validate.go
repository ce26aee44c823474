package enginecore

import (
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/wire"
)

// Bounds on what one ADD may carry. The frontend checks tighter ones
// (frontend/openai); the engine trusts no peer and checks these itself.
const (
	maxIDBytes        = 1024 // request_id, external id, session id, cache salt
	maxStopTokenIDs   = 1024
	maxLogitBiasTerms = 1024
	maxLogprobs       = 20 // top logprobs per token, as vLLM's default max_logprobs
)

// validateRequest checks an ADD against the model (vocab token ids) the
// way the HTTP layer checks a request, so that a hostile or buggy peer
// gets a per-request error instead of a panic or an unbounded cost. The
// scheduler then checks the lengths against max_model_len and the cache.
func validateRequest(r *wire.EngineCoreRequest, vocab int32) error {
	for _, f := range []struct{ name, v string }{
		{"request_id", r.RequestID}, {"external_req_id", r.ExternalReqID}, {"session_id", r.SessionID}, {"cache_salt", r.CacheSalt},
	} {
		if len(f.v) > maxIDBytes {
			return fmt.Errorf("%s of %d bytes: at most %d", f.name, len(f.v), maxIDBytes)
		}
	}
	if r.RequestID == "" {
		return fmt.Errorf("request_id is empty")
	}
	if len(r.PromptTokenIDs) == 0 {
		return fmt.Errorf("the prompt is empty")
	}
	for _, t := range r.PromptTokenIDs {
		if t < 0 || t >= vocab {
			return fmt.Errorf("prompt token id %d out of range [0, %d)", t, vocab)
		}
	}
	p := &r.SamplingParams
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return fmt.Errorf("temperature %g: want a finite value ≥ 0", p.Temperature)
	case !(p.TopP > 0 && p.TopP <= 1):
		return fmt.Errorf("top_p %g: want (0, 1]", p.TopP)
	case p.TopK < -1:
		return fmt.Errorf("top_k %d: want -1, 0 (off) or ≥ 1", p.TopK)
	case !(p.MinP >= 0 && p.MinP <= 1):
		return fmt.Errorf("min_p %g: want [0, 1]", p.MinP)
	case !(p.PresencePenalty >= -2 && p.PresencePenalty <= 2):
		return fmt.Errorf("presence_penalty %g: want [-2, 2]", p.PresencePenalty)
	case !(p.FrequencyPenalty >= -2 && p.FrequencyPenalty <= 2):
		return fmt.Errorf("frequency_penalty %g: want [-2, 2]", p.FrequencyPenalty)
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty <= 0:
		return fmt.Errorf("repetition_penalty %g: want a finite value > 0", p.RepetitionPenalty)
	case p.MaxTokens < 1:
		return fmt.Errorf("max_tokens %d: want ≥ 1", p.MaxTokens)
	case p.MinTokens < 0 || p.MinTokens > p.MaxTokens:
		return fmt.Errorf("min_tokens %d: want [0, max_tokens %d]", p.MinTokens, p.MaxTokens)
	case p.Logprobs != nil && (*p.Logprobs < 0 || *p.Logprobs > maxLogprobs):
		return fmt.Errorf("logprobs %d: want [0, %d]", *p.Logprobs, maxLogprobs)
	case p.PromptLogprobs != nil:
		return fmt.Errorf("prompt_logprobs are not supported")
	case len(p.StopTokenIDs) > maxStopTokenIDs:
		return fmt.Errorf("%d stop_token_ids: at most %d", len(p.StopTokenIDs), maxStopTokenIDs)
	case len(p.LogitBias) > maxLogitBiasTerms:
		return fmt.Errorf("%d logit_bias entries: at most %d", len(p.LogitBias), maxLogitBiasTerms)
	case p.EOSTokenID != nil && *p.EOSTokenID < 0:
		return fmt.Errorf("_eos_token_id %d is negative", *p.EOSTokenID)
	case p.ConstraintPrefix < 0 || p.ConstraintPrefix >= len(r.PromptTokenIDs):
		return fmt.Errorf("_tandem_constraint_prefix %d: want [0, %d), fewer than the prompt's tokens", p.ConstraintPrefix, len(r.PromptTokenIDs))
	case p.ConstraintPrefix > 0 && p.StructuredOutputs == nil:
		return fmt.Errorf("_tandem_constraint_prefix needs structured_outputs")
	}
	for _, t := range p.StopTokenIDs {
		if t < 0 {
			return fmt.Errorf("stop_token_ids: %d is negative", t)
		}
	}
	for id, b := range p.LogitBias {
		if !finite(b) || b < -100 || b > 100 {
			return fmt.Errorf("logit_bias %g for token %d: want [-100, 100]", b, id)
		}
	}
	return nil
}
