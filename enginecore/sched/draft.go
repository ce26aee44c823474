package sched

// Speculative decoding (see enginecore/spec): after a step, Draft asks a
// proposer for each decoding request's next tokens; the next Schedule
// gives the request 1+len(draft) tokens of its budget (the last real token
// and the drafts), and Update keeps what the runner verified. vLLM's
// rule still holds: num_computed_tokens catches up with the tokens, and a
// draft is tokens that may not stay.

// SpecStats are the engine's speculative decoding figures, cumulative
// (vLLM's SpecDecodingStats, summed over its steps).
type SpecStats struct {
	NumDrafts         int64   // verified drafts (one per drafted request per step)
	NumDraftTokens    int64   // their tokens
	NumAcceptedTokens int64   // of those, the tokens kept
	AcceptedPerPos    []int64 // [k]: drafts whose token at position i was kept
}

func (st *SpecStats) observe(drafted, accepted int) {
	st.NumDrafts++
	st.NumDraftTokens += int64(drafted)
	st.NumAcceptedTokens += int64(accepted)
	for len(st.AcceptedPerPos) < drafted {
		st.AcceptedPerPos = append(st.AcceptedPerPos, 0)
	}
	for i := range accepted {
		st.AcceptedPerPos[i]++
	}
}

// SpecStats returns a copy of the cumulative speculative decoding figures.
func (s *Scheduler) SpecStats() SpecStats {
	st := s.spec
	st.AcceptedPerPos = append([]int64(nil), st.AcceptedPerPos...)
	return st
}

// Draft proposes speculative tokens for the running requests that decode
// (all their tokens but the last computed, past min_tokens): propose gets
// each with the most tokens its draft may have (NumSpeculativeTokens, less
// near max_tokens or max_model_len, a draft never runs past where the
// request must stop; at most the request's SpecMaxDraft) and returns the
// draft (one shorter than MinDraft or the request's SpecMinDraft is
// dropped), or nil to skip the request
// (a structured-output constraint, say). The next Schedule uses them.
func (s *Scheduler) Draft(propose func(r *Request, k int) []int32) {
	if s.cfg.NumSpeculativeTokens <= 0 {
		return
	}
	for _, r := range s.running {
		r.draft = nil
		if r.numComputedTokens != len(r.tokens)-1 || r.numOutput() < r.Params.MinTokens {
			continue
		}
		k := min(s.cfg.NumSpeculativeTokens,
			r.Params.MaxTokens-r.numOutput()-1, // the token after the drafts is sampled too
			s.cfg.MaxModelLen-len(r.tokens)-1)
		if m := r.Params.SpecMaxDraft; m != nil {
			k = min(k, *m)
		}
		if k <= 0 {
			continue
		}
		d := propose(r, k)
		minDraft := s.cfg.MinDraft
		if m := r.Params.SpecMinDraft; m != nil {
			minDraft = *m
		}
		if len(d) < minDraft {
			continue
		}
		if len(d) > 0 {
			r.draft = d[:min(len(d), k):min(len(d), k)]
		}
	}
}

// draftLen is how many draft tokens r's next step may carry.
func (s *Scheduler) draftLen(r *Request) int {
	if r.numComputedTokens != len(r.tokens)-1 {
		return 0
	}
	return len(r.draft)
}

// Tokens are the request's tokens so far, prompt then outputs (read-only).
func (r *Request) Tokens() []int32 { return r.tokens }
