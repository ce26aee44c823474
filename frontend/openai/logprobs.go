package openai

// MaxLogprobTokenIDs is the most logprob_token_ids one request may name
// (vLLM's MAX_LOGPROB_TOKEN_IDS).
const MaxLogprobTokenIDs = 128

// validateLogprobFields checks prompt_logprobs, allowed_token_ids and
// logprob_token_ids with vLLM's rules and messages (its request models'
// check_logprobs and SamplingParams' checks). What needs the vocabulary
// or the engines' max logprobs (ids in range, counts against the max)
// the server checks.
func (p *Params) validateLogprobFields() *Error {
	if v := p.PromptLogprobs; v != nil {
		if p.Stream && (*v > 0 || *v == -1) {
			return BadRequest("prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`.")
		}
		if *v < -1 {
			return BadRequest("prompt_logprobs", "`prompt_logprobs` must be a positive value or -1.")
		}
	}
	if p.AllowedTokenIDs != nil && len(p.AllowedTokenIDs) == 0 {
		return BadRequest("allowed_token_ids", "allowed_token_ids is not None and empty!")
	}
	if n := len(p.LogprobTokenIDs); n > 0 {
		if p.UseBeamSearch {
			return BadRequest("logprob_token_ids", "`logprob_token_ids` is not supported with beam search.")
		}
		if n > MaxLogprobTokenIDs {
			return BadRequest("logprob_token_ids", "Requested logprob_token_ids of length %d, which is greater than max allowed: %d", n, MaxLogprobTokenIDs)
		}
	}
	return nil
}
