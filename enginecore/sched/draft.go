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

// Slot is one request that may carry a draft next step, with the most
// tokens the draft may have (K).
type Slot struct {
	Req *Request
	K   int
}

// Drafting forgets the running requests' drafts and lists those that
// decode (all their tokens but the last computed, past min_tokens) and
// may carry one: K is NumSpeculativeTokens, less near max_tokens or
// max_model_len (a draft never runs past where the request must stop),
// at most the request's SpecMaxDraft. SetDraft gives them their drafts.
func (s *Scheduler) Drafting() []Slot {
	if s.cfg.NumSpeculativeTokens <= 0 {
		return nil
	}
	var out []Slot
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
		if k > 0 {
			out = append(out, Slot{r, k})
		}
	}
	return out
}

// SetDraft gives a slot its draft for the next Schedule: cut to K, and
// dropped when shorter than MinDraft or the request's SpecMinDraft.
func (s *Scheduler) SetDraft(sl Slot, d []int32) {
	minDraft := s.cfg.MinDraft
	if m := sl.Req.Params.SpecMinDraft; m != nil {
		minDraft = *m
	}
	if len(d) == 0 || len(d) < minDraft {
		return
	}
	n := min(len(d), sl.K)
	sl.Req.draft = d[:n:n]
}

// Draft is Drafting then SetDraft with propose's draft for each slot (nil
// skips the request: a structured-output constraint, say).
func (s *Scheduler) Draft(propose func(r *Request, k int) []int32) {
	for _, sl := range s.Drafting() {
		s.SetDraft(sl, propose(sl.Req, sl.K))
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
