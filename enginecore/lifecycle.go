package enginecore

import (
	"time"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/wire"
)

// lifecycles keeps, per request key, the events its next output carries
// (vLLM's Request.events and take_events): QUEUED when the scheduler takes
// the request, SCHEDULED when a step schedules it (the first time, and
// again after each preemption), PREEMPTED when the scheduler takes its
// KV blocks back. A frontend turns them into queue, prefill, decode and
// inference times (docs/metrics.md). Timestamps are unix seconds on the
// engine's clock, like EngineCoreOutputs.Timestamp.
type lifecycles struct {
	byKey          map[string]*lifecycle
	numPreemptions int64 // the scheduler's count when preemptions were last looked for
}

type lifecycle struct {
	running     bool // scheduled since it was queued or last preempted
	preemptions int  // its sched.Request.NumPreemptions when last looked at
	pending     []wire.EngineCoreEvent
}

func newLifecycles() *lifecycles { return &lifecycles{byKey: map[string]*lifecycle{}} }

// queued records that the scheduler took request key at t.
func (l *lifecycles) queued(key string, t float64) {
	l.byKey[key] = &lifecycle{pending: []wire.EngineCoreEvent{{Type: wire.EventQueued, Timestamp: t}}}
}

// scheduled records the step of b, scheduled at t: PREEMPTED for each
// request of s preempted since the last look (the scheduler's count
// says whether to look), then SCHEDULED for each of b's requests not
// running before.
func (l *lifecycles) scheduled(s *sched.Scheduler, b *batch.Batch, t float64) {
	if n := s.NumPreemptions(); n != l.numPreemptions {
		l.numPreemptions = n
		s.Requests(func(r *sched.Request) {
			lc := l.byKey[r.ID]
			if lc == nil || r.NumPreemptions == lc.preemptions {
				return
			}
			for range r.NumPreemptions - lc.preemptions {
				lc.pending = append(lc.pending, wire.EngineCoreEvent{Type: wire.EventPreempted, Timestamp: t})
			}
			lc.preemptions, lc.running = r.NumPreemptions, false
		})
	}
	for i := range b.Items {
		lc := l.byKey[b.Items[i].RequestID]
		if lc == nil || lc.running {
			continue
		}
		lc.running = true
		lc.pending = append(lc.pending, wire.EngineCoreEvent{Type: wire.EventScheduled, Timestamp: t})
	}
}

// take returns key's events since its last output and clears them.
func (l *lifecycles) take(key string) []wire.EngineCoreEvent {
	lc := l.byKey[key]
	if lc == nil {
		return nil
	}
	ev := lc.pending
	lc.pending = nil
	return ev
}

// forget drops a finished or aborted request.
func (l *lifecycles) forget(key string) { delete(l.byKey, key) }

// Stamp sets the timestamp of every OUTPUTS in outs to t: the shell calls
// it with the moment Step returned, so a request's first-token time less
// its SCHEDULED time includes the step's forward pass, as in vLLM.
func Stamp(outs []Out, t time.Time) {
	for _, o := range outs {
		if p, ok := o.Payload.(*wire.EngineCoreOutputs); ok {
			p.Timestamp = unixSeconds(t)
		}
	}
}
