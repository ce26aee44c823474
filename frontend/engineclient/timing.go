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
