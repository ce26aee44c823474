package enginecore

import (
	"cmp"
	"fmt"
	"github.com/tandem-llm/tandem/enginecore/model"
	"math"

	"github.com/tandem-llm/tandem/wire"
)

// Bounds on what one ADD may carry. The frontend checks tighter ones
// (frontend/openai); the engine trusts no peer and checks these itself.
const (
	maxIDBytes        = 1024 // request_id, external id, session id, cache salt
	maxStopTokenIDs   = 1024
	maxLogitBiasTerms = 1024
	maxLogprobTokens  = 128 // logprob_token_ids, vLLM's MAX_LOGPROB_TOKEN_IDS
	maxAllowedTokens  = 1 << 20
)

// validateRequest checks an ADD against the model (vocab token ids) and
// max logprobs (-1: the vocabulary) the way the HTTP layer checks a request, so that a hostile or buggy peer
// gets a per-request error instead of a panic or an unbounded cost. The
// scheduler then checks the lengths against max_model_len and the cache.
func validateRequest(r *wire.EngineCoreRequest, vocab int32, maxLogprobs int) error {
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
	case p.ReasoningStart != "" && p.ReasoningEnd == "":
		return fmt.Errorf("_tandem_reasoning_start needs _tandem_reasoning_end")
	case len(p.ReasoningStart) > maxThinkTag || len(p.ReasoningEnd) > maxThinkTag:
		return fmt.Errorf("_tandem_reasoning_start and _tandem_reasoning_end: at most %d bytes each", maxThinkTag)
	case p.ReasoningEnd != "" && p.ConstraintPrefix > 0:
		return fmt.Errorf("_tandem_constraint_prefix continues a constrained answer: it takes no think tags")
	case p.ThinkingTokenBudget != nil && *p.ThinkingTokenBudget < 0:
		return fmt.Errorf("thinking_token_budget %d: want ≥ 0", *p.ThinkingTokenBudget)
	case len(p.ReasoningBudgetMessage) > wire.MaxReasoningBudgetMessage:
		return fmt.Errorf("_tandem_reasoning_budget_message of %d bytes: at most %d", len(p.ReasoningBudgetMessage), wire.MaxReasoningBudgetMessage)
	}
	if err := validateLogprobs(p, vocab, maxLogprobs); err != nil {
		return err
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

// validateLogprobs checks logprobs, prompt_logprobs, logprob_token_ids and
// allowed_token_ids with vLLM's rules and messages (SamplingParams'
// _validate_logprobs and _validate_allowed_token_ids): -1 stands for the
// whole vocabulary, in a request as in maxLogprobs (--max-logprobs, 20 by
// default, which then refuses a request's -1).
func validateLogprobs(p *wire.SamplingParams, vocab int32, maxLogprobs int) error {
	count := func(n int) int {
		if n == -1 {
			return int(vocab)
		}
		return n
	}
	maxLogprobs = count(maxLogprobs)
	if p.Logprobs != nil {
		if *p.Logprobs < -1 {
			return vllmErrorf("logprobs must be non-negative or -1, got %d.", *p.Logprobs)
		}
		if n := count(*p.Logprobs); n > maxLogprobs {
			return vllmErrorf("Requested sample logprobs of %d, which is greater than max allowed: %d", n, maxLogprobs)
		}
	}
	if ids := p.LogprobTokenIDs; ids != nil {
		n := len(ids)
		if n > maxLogprobTokens {
			return vllmErrorf("Requested logprob_token_ids of length %d, which is greater than max allowed: %d", n, maxLogprobTokens)
		}
		if bad := outOfVocab(ids, vocab); len(bad) > 0 {
			return vllmErrorf("token_id(s) %v in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: %d", bad, vocab)
		}
		if p.Logprobs != nil && *p.Logprobs != n {
			return vllmErrorf("When both logprobs and logprob_token_ids are set, logprobs must equal len(logprob_token_ids). Got logprobs=%d, len(logprob_token_ids)=%d.", *p.Logprobs, n)
		}
	}
	if p.PromptLogprobs != nil {
		if *p.PromptLogprobs < -1 {
			return vllmErrorf("prompt_logprobs must be non-negative or -1, got %d.", *p.PromptLogprobs)
		}
		if n := count(*p.PromptLogprobs); n > maxLogprobs {
			return vllmErrorf("Requested prompt logprobs of %d, which is greater than max allowed: %d", n, maxLogprobs)
		}
	}
	if ids := p.AllowedTokenIDs; ids != nil {
		switch {
		case len(ids) == 0:
			return vllmErrorf("allowed_token_ids is not None and empty!")
		case len(ids) > maxAllowedTokens:
			return fmt.Errorf("%d allowed_token_ids: at most %d", len(ids), maxAllowedTokens)
		case len(outOfVocab(ids, vocab)) > 0:
			return vllmErrorf("allowed_token_ids contains out-of-vocab token id!")
		}
	}
	return nil
}

// outOfVocab returns the ids outside [0, vocab), at most 16 of them.
func outOfVocab(ids []int32, vocab int32) []int32 {
	var bad []int32
	for _, id := range ids {
		if (id < 0 || id >= vocab) && len(bad) < 16 {
			bad = append(bad, id)
		}
	}
	return bad
}

// vllmError is an error worded exactly as vLLM words it (capitalised, with
// its punctuation), so clients that match vLLM's messages match these.
type vllmError string

func (e vllmError) Error() string { return string(e) }

func vllmErrorf(format string, a ...any) error { return vllmError(fmt.Sprintf(format, a...)) }

// pooling checks an embedding request's pooling parameters against the
// model and returns them with the engine's default pooling type filled in.
func (e *Engine) pooling(p *wire.PoolingParams) (*wire.PoolingParams, error) {
	dim := e.be.Model().Dim
	if dim == 0 {
		return nil, fmt.Errorf("this engine's backend (%s) computes no embeddings", e.be.Model().Arch)
	}
	out := *p
	if out.PoolingType == wire.PoolingDefault {
		out.PoolingType = cmp.Or(e.cfg.Pooling, e.be.Model().Pooling, wire.PoolingLast)
	}
	switch out.PoolingType {
	case wire.PoolingLast, wire.PoolingMean, wire.PoolingCLS, wire.PoolingNone:
	case wire.PoolingRank:
		if e.be.Model().Classifier == nil {
			return nil, fmt.Errorf("pooling_type RANK needs a model with a classification head (a reranker: cls.output.weight); %s has none", e.be.Model().Name)
		}
		out.Normalize, out.Dimensions = false, 0
	default:
		return nil, fmt.Errorf("pooling_type %q: want LAST, MEAN, CLS, NONE or RANK", out.PoolingType)
	}
	if out.Dimensions < 0 || out.Dimensions > dim {
		return nil, fmt.Errorf("dimensions %d: want 1 to the model's hidden size %d", out.Dimensions, dim)
	}
	return &out, nil
}

// classifierLabels names the head's classes for READY: the file's
// labels, else vLLM's LABEL_i; nil without a head.
func classifierLabels(c *model.Classifier) []string {
	if c == nil {
		return nil
	}
	if c.Labels != nil {
		return c.Labels
	}
	out := make([]string, c.NumClasses)
	for i := range out {
		out[i] = fmt.Sprintf("LABEL_%d", i)
	}
	return out
}
