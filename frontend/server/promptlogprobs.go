package server

import (
	"unicode/utf8"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/wire"
)

// checkLogprobParams refuses, with vLLM's messages, what needs the
// vocabulary or the engines' max logprobs to check: allowed_token_ids and
// logprob_token_ids out of the vocabulary, and logprobs (the sampled
// tokens', logprobs in completions, top_logprobs in chat), prompt_logprobs
// and beam search's 2·width above the max logprobs, -1 counting as the
// whole vocabulary.
func (s *Server) checkLogprobParams(p *openai.Params, logprobs *int) *openai.Error {
	v := int32(s.tok.VocabSize())
	for _, id := range p.AllowedTokenIDs {
		if id < 0 || id >= v {
			return openai.BadRequest("allowed_token_ids", "allowed_token_ids contains out-of-vocab token id!")
		}
	}
	var bad []int32
	for _, id := range p.LogprobTokenIDs {
		if id < 0 || id >= v {
			bad = append(bad, id)
		}
	}
	if len(bad) > 0 {
		return openai.BadRequest("logprob_token_ids", "token_id(s) %v in logprob_token_ids contain out-of-vocab token ids. Vocabulary size: %d", bad, v)
	}
	if len(p.LogprobTokenIDs) == 0 { // with them, the engine reports exactly those
		if e := s.checkMaxLogprobs("logprobs", logprobs); e != nil {
			return e
		}
	}
	if p.UseBeamSearch {
		n := 2 * p.NumCandidates() // each beam step's candidates
		if e := s.checkMaxLogprobs("n", &n); e != nil {
			return e
		}
	}
	if k := p.PromptLogprobs; k != nil && s.logprobsCount(*k) > s.maxLogprobs() {
		return openai.BadRequest("prompt_logprobs", "Requested prompt logprobs of %d, which is greater than max allowed: %d", s.logprobsCount(*k), s.maxLogprobs())
	}
	return nil
}

// checkMaxLogprobs refuses a logprobs count (nil: none) above the max
// logprobs, with vLLM's message, naming param.
func (s *Server) checkMaxLogprobs(param string, logprobs *int) *openai.Error {
	if logprobs == nil {
		return nil
	}
	if n, limit := s.logprobsCount(*logprobs), s.maxLogprobs(); n > limit {
		return openai.BadRequest(param, "Requested sample logprobs of %d, which is greater than max allowed: %d", n, limit)
	}
	return nil
}

// maxLogprobs is the most logprobs per token the engines give
// (Config.MaxLogprobs, -1 standing for the vocabulary).
func (s *Server) maxLogprobs() int {
	if s.cfg.MaxLogprobs == nil {
		return openai.DefaultMaxLogprobs
	}
	return s.logprobsCount(*s.cfg.MaxLogprobs)
}

// logprobsCount is n logprobs per token, -1 being the whole vocabulary.
func (s *Server) logprobsCount(n int) int {
	if n == -1 {
		return s.vocabSize()
	}
	return n
}

// promptLogprobsOf writes the engine's prompt logprobs (rows for prompt
// positions 1..P-1) in vLLM's form: null for the first token, then per
// position the prompt token, then the top alternatives by rank (vLLM's
// dict order; the prompt token among them keeps its first place), each with
// its logprob, rank and text. A nil lp (none asked for) is null.
func (s *Server) promptLogprobsOf(lp *wire.Logprobs) openai.PromptLogprobs {
	if lp == nil {
		return nil
	}
	out := make(openai.PromptLogprobs, 1, len(lp.TokenIDs)+1)
	for p, ids := range lp.TokenIDs {
		entry := make(openai.PromptLogprobsEntry, 0, len(ids))
		for j, id := range ids {
			if j > 0 && id == ids[0] {
				continue
			}
			rank := j // the alternatives are in rank order
			if j == 0 {
				rank = int(lp.Ranks[p])
			}
			text, _ := tokenText(s.tok, id)
			entry = append(entry, openai.PromptLogprobKey{TokenID: id, PromptLogprob: openai.PromptLogprob{Logprob: openai.Logprob(lp.Logprobs[p][j]), Rank: &rank, DecodedToken: &text}})
		}
		out = append(out, entry)
	}
	return out
}

// echoedLogprobs is the completions logprobs of an echoed prompt (echo
// with logprobs, as vLLM): the first token has none (null), the others
// the prompt logprobs' entries; offsets count from the prompt's start.
// asIDs writes tokens as "token_id:N" (return_tokens_as_token_ids).
func (s *Server) echoedLogprobs(prompt []int32, lp *wire.Logprobs, asIDs bool) *openai.CompletionLogprobs {
	out := &openai.CompletionLogprobs{Tokens: []string{}, TokenLogprobs: []*openai.Logprob{}, TopLogprobs: []openai.TopLogprobs{}, TextOffset: []int{}}
	textOf := func(id int32) string {
		if asIDs {
			return tokenIDText(id)
		}
		t, _ := tokenText(s.tok, id)
		return t
	}
	offset := 0
	for i, id := range prompt {
		text := textOf(id)
		out.Tokens = append(out.Tokens, text)
		out.TextOffset = append(out.TextOffset, offset)
		offset += utf8.RuneCountInString(text)
		p := i - 1 // the prompt logprobs' row of position i
		if lp == nil || p < 0 || p >= len(lp.TokenIDs) {
			out.TokenLogprobs = append(out.TokenLogprobs, nil)
			out.TopLogprobs = append(out.TopLogprobs, nil)
			continue
		}
		l := openai.Logprob(lp.Logprobs[p][0])
		out.TokenLogprobs = append(out.TokenLogprobs, &l)
		top := openai.TopLogprobsOf(len(lp.TokenIDs[p]), func(j int) (string, openai.Logprob) {
			if j == 0 {
				return text, l
			}
			return textOf(lp.TokenIDs[p][j]), openai.Logprob(lp.Logprobs[p][j])
		})
		out.TopLogprobs = append(out.TopLogprobs, top)
	}
	return out
}

// appendLogprobs appends b's positions to a's. As vLLM computes them,
// offsets run on over the token strings: b's first token starts where
// a's last one ends, whatever offset b started from.
func appendLogprobs(a, b *openai.CompletionLogprobs) *openai.CompletionLogprobs {
	end := 0
	if n := len(a.Tokens); n > 0 {
		end = a.TextOffset[n-1] + utf8.RuneCountInString(a.Tokens[n-1])
	}
	a.Tokens = append(a.Tokens, b.Tokens...)
	a.TokenLogprobs = append(a.TokenLogprobs, b.TokenLogprobs...)
	a.TopLogprobs = append(a.TopLogprobs, b.TopLogprobs...)
	for _, o := range b.TextOffset {
		a.TextOffset = append(a.TextOffset, o-b.TextOffset[0]+end)
	}
	return a
}

// completionPromptLogprobs is the prompt_logprobs a completions request
// asks the engine for: its own, else with echo its logprobs (vLLM's
// to_sampling_params). A stream sends no prompt_logprobs (Validate
// refuses all but 0), so it asks only for what echo with logprobs shows.
func completionPromptLogprobs(req *openai.CompletionRequest) *int {
	switch {
	case req.Stream && (!req.Echo || req.Logprobs == nil):
		return nil
	case req.PromptLogprobs != nil:
		return req.PromptLogprobs
	case req.Echo:
		return req.Logprobs
	}
	return nil
}
