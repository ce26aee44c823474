package server

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
)

// fakeEngine answers every request with a scripted token sequence.
type fakeEngine struct {
	mu       sync.Mutex
	reqs     []*wire.EngineCoreRequest
	aborted  []string
	script   func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput
	failWith error // Submit error
	dead     bool  // streams fail with ErrEngineDead after their outputs
	// numWaiting is the waiting queue the engine reports.
	numWaiting int
	// hold, when set, blocks every stream's first Next until it is closed.
	hold chan struct{}
	// timing is what every stream's Timing reports.
	timing engineclient.Timing
	// states, when set, is what Engines reports.
	states []engineclient.EngineState
}

// Timing reports the engine's timestamps, as engineclient's streams do.
func (s *fakeStream) Timing() engineclient.Timing { return s.f.timing }

func (f *fakeEngine) Submit(ctx context.Context, req *wire.EngineCoreRequest) (Stream, error) {
	if f.failWith != nil {
		return nil, f.failWith
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return &fakeStream{f: f, id: req.RequestID, outs: f.script(req)}, nil
}

func (f *fakeEngine) Session(ctx context.Context, id string) ([]wire.SessionInfo, error) {
	return nil, nil
}

func (f *fakeEngine) EndSession(ctx context.Context, id string) (bool, error) { return false, nil }

func (f *fakeEngine) Engines() []engineclient.EngineState {
	if f.states != nil {
		return f.states
	}
	return []engineclient.EngineState{{Index: 0, Ready: true, NumWaiting: f.numWaiting}}
}

// requests returns the engine requests received so far.
func (f *fakeEngine) requests() []*wire.EngineCoreRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*wire.EngineCoreRequest(nil), f.reqs...)
}

type fakeStream struct {
	f      *fakeEngine
	id     string
	outs   []wire.EngineCoreOutput
	closed bool
	done   bool
}

func (s *fakeStream) Next(ctx context.Context) (wire.EngineCoreOutput, error) {
	if s.f.hold != nil {
		select {
		case <-s.f.hold:
		case <-ctx.Done():
			return wire.EngineCoreOutput{}, ctx.Err()
		}
	}
	if len(s.outs) == 0 {
		if s.f.dead {
			return wire.EngineCoreOutput{}, fmt.Errorf("%w: engine 0: heartbeat timeout", engineclient.ErrEngineDead)
		}
		return wire.EngineCoreOutput{}, io.EOF
	}
	o := s.outs[0]
	s.outs = s.outs[1:]
	if o.FinishReason != wire.FinishNone {
		s.done = true
	}
	return o, nil
}

func (s *fakeStream) Close() {
	if !s.closed && !s.done {
		s.f.mu.Lock()
		s.f.aborted = append(s.f.aborted, s.id)
		s.f.mu.Unlock()
	}
	s.closed = true
}

// tokens scripts one output per token of text (byte tokenizer ids), the
// last one finishing with reason.
func tokens(text string, reason wire.FinishReason, extra ...int32) []wire.EngineCoreOutput {
	var ids []int32
	for _, b := range []byte(text) {
		ids = append(ids, int32(b))
	}
	ids = append(ids, extra...)
	outs := make([]wire.EngineCoreOutput, len(ids))
	for i, id := range ids {
		outs[i] = wire.EngineCoreOutput{NewTokenIDs: []int32{id}, NumCachedTokens: 3}
	}
	if len(outs) > 0 {
		outs[len(outs)-1].FinishReason = reason
	}
	return outs
}

func (f *fakeEngine) abortedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.aborted...)
}
