package engineclient

import "github.com/tandem-llm/tandem/wire"

// Timing is what the engine told of one request's life, as vLLM's
// frontend keeps it (RequestStateStats): the first QUEUED and SCHEDULED
// events and the OUTPUTS timestamps of its first and latest tokens, all
// on the serving engine's clock (unix seconds; 0 = not seen yet), so
// differences between them never compare two machines' clocks.
type Timing struct {
	Queued         float64 // QUEUED: the engine took the request in
	Scheduled      float64 // first SCHEDULED (preemptions do not move it)
	FirstToken     float64 // the OUTPUTS that brought its first token
	LastToken      float64 // the OUTPUTS that brought its latest token
	NumPreemptions int     // PREEMPTED events
	NumGenerated   int     // tokens received
	Spec           SpecDecode
}

// SpecDecode sums a request's verified drafts (speculative decoding),
// from its outputs' spec_decode.
type SpecDecode struct {
	NumSpecTokens  int   // the engine's k
	NumDraftTokens int   // tokens drafted (llama-server's draft_n)
	NumAccepted    int   // of those, kept (draft_n_accepted)
	Histogram      []int // [k+1]: drafts by how many of their tokens were kept
}

// NumSteps is how many drafts the request verified.
func (s SpecDecode) NumSteps() int {
	n := 0
	for _, c := range s.Histogram {
		n += c
	}
	return n
}

func (s *SpecDecode) observe(sd *wire.SpecDecodeStep) {
	s.NumSpecTokens = max(s.NumSpecTokens, sd.NumSpecTokens, sd.NumDraftTokens)
	s.NumDraftTokens += sd.NumDraftTokens
	s.NumAccepted += sd.NumAcceptedTokens
	for len(s.Histogram) <= s.NumSpecTokens {
		s.Histogram = append(s.Histogram, 0)
	}
	if a := sd.NumAcceptedTokens; a >= 0 && a < len(s.Histogram) {
		s.Histogram[a]++
	}
}

// observe folds in one output of an OUTPUTS stamped ts.
func (t *Timing) observe(o *wire.EngineCoreOutput, ts float64) {
	for _, ev := range o.Events {
		switch ev.Type {
		case wire.EventQueued:
			t.Queued = ev.Timestamp
		case wire.EventScheduled:
			if t.Scheduled == 0 {
				t.Scheduled = ev.Timestamp
			}
		case wire.EventPreempted:
			t.NumPreemptions++
		}
	}
	if o.SpecDecode != nil {
		t.Spec.observe(o.SpecDecode)
	}
	if len(o.NewTokenIDs) > 0 {
		if t.NumGenerated == 0 {
			t.FirstToken = ts
		}
		t.LastToken = ts
		t.NumGenerated += len(o.NewTokenIDs)
	}
}

// Known reports whether the engine sent the events the phase times need
// (an engine older than them sends none).
func (t Timing) Known() bool { return t.Queued > 0 && t.Scheduled > 0 && t.FirstToken > 0 }

// Timing is what the engine told of the request so far.
func (s *Stream) Timing() Timing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timing
}

// OnIteration has fn called after each OUTPUTS from an engine that
// brought tokens, with the engine's index and the tokens that step
// computed for this client's requests: the prompt tokens of the
// prefills it completed (less those the prefix cache served) plus the
// tokens it generated (vLLM's iteration_tokens_total). fn runs on the
// engine's reader goroutine and must not block.
func (c *Client) OnIteration(fn func(engine, tokens int)) { c.onIteration.Store(&fn) }
