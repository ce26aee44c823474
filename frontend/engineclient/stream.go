package engineclient

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// Stream is one request's outputs, in order. Safe for one reader; the
// engine's reader goroutine never blocks on a slow Stream consumer.
type Stream struct {
	id          string                  // internal request id
	req         *wire.EngineCoreRequest // kept to resend it elsewhere
	engine      atomic.Int64            // index of the engine serving it
	attempts    int                     // resends so far; guarded by Client.mu
	pl          *placement              // its latest send; guarded by Client.mu
	incarnation uint64                  // its engine slot's incarnation when placed; guarded by Client.mu
	c           *Client

	mu      sync.Mutex // mu guards the fields below
	pending []wire.EngineCoreOutput
	done    bool      // the finishing output was queued, or err is set
	err     error     // terminal error (engine dead, client closed)
	closed  bool      // Close called
	outputs int       // outputs received so far
	placed  time.Time // when it was last sent to an engine
	active  time.Time // when it was placed or got its last output
	timing  Timing    // the engine's events and token timestamps
	notify  chan struct{}
}

// RequestID is the internal request id the engine knows.
func (s *Stream) RequestID() string { return s.id }

// EngineIndex is the engine serving the request (it changes when the
// request moves to another engine before its first output).
func (s *Stream) EngineIndex() int { return int(s.engine.Load()) }

// hasOutput reports whether any output arrived.
func (s *Stream) hasOutput() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outputs > 0
}

func (s *Stream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Next returns the next output. After the output with a finish reason it
// returns io.EOF; after a failure, that error (e.g. ErrEngineDead). Once
// ctx is done it closes the stream (aborting an unfinished request) and
// returns ctx's error.
func (s *Stream) Next(ctx context.Context) (wire.EngineCoreOutput, error) {
	for {
		if err := ctx.Err(); err != nil {
			s.Close()
			return wire.EngineCoreOutput{}, err
		}
		s.mu.Lock()
		if len(s.pending) > 0 {
			o := s.pending[0]
			// Shift rather than reslice: s.pending[1:] would give up the
			// array's front, so a stream read as fast as it is fed would
			// allocate a new one on every push.
			n := copy(s.pending, s.pending[1:])
			s.pending[n] = wire.EngineCoreOutput{}
			s.pending = s.pending[:n]
			s.mu.Unlock()
			return o, nil
		}
		if s.done {
			err := s.err
			s.mu.Unlock()
			if err == nil {
				err = io.EOF
			}
			return wire.EngineCoreOutput{}, err
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-ctx.Done():
			s.Close()
			return wire.EngineCoreOutput{}, ctx.Err()
		}
	}
}

// push queues an output of an OUTPUTS stamped ts (reader goroutine). It
// reports whether the stream is now finished.
func (s *Stream) push(o wire.EngineCoreOutput, ts float64) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return true
	}
	s.timing.observe(&o, ts)
	s.pending = append(s.pending, o)
	s.outputs++
	s.active = time.Now()
	if o.FinishReason != wire.FinishNone {
		s.done = true
	}
	done := s.done
	s.mu.Unlock()
	s.wake()
	return done
}

// placedAt notes that s was just sent to an engine.
func (s *Stream) placedAt(t time.Time) {
	s.mu.Lock()
	s.placed, s.active = t, t
	s.mu.Unlock()
}

// quietSince reports whether s has had no output (nor been sent) since t.
func (s *Stream) quietSince(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active.Before(t)
}

// placedBefore reports whether s was sent to its engine before t.
func (s *Stream) placedBefore(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placed.Before(t)
}

// fail ends the stream with err unless it already finished.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	if !s.done {
		s.done, s.err = true, err
	}
	s.mu.Unlock()
	s.wake()
}

func (s *Stream) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Close releases the stream; if the request has not finished, the engine
// is told to abort it. Idempotent.
func (s *Stream) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	unfinished := !s.done
	s.done = true
	if s.err == nil && unfinished {
		s.err = context.Canceled
	}
	s.mu.Unlock()
	s.c.release(s, unfinished)
	s.wake()
}
