package server

import (
	"github.com/tandem-llm/tandem/frontend/openai"
)

// retryAfterSeconds is the Retry-After of a 429: the waiting queue moves
// within a second or so on any engine that is making progress.
const retryAfterSeconds = "1"

// numWaitingRequests is the deployment's waiting queue as this frontend
// sees it: the larger of what the engines report in their heartbeats
// (every frontend's requests, but up to a heartbeat old) and this
// frontend's own requests that have no first token yet (current, but
// only its own). Taking the larger avoids counting a request twice.
func (s *Server) numWaitingRequests() int {
	reported := 0
	for _, e := range s.eng.Engines() {
		if e.Ready {
			reported += e.NumWaiting
		}
	}
	return max(reported, int(s.numWaiting.Load()))
}

// admit refuses new work with a 429 while the waiting queue is at or over
// --max-waiting-requests.
func (s *Server) admit() *openai.Error {
	limit := s.cfg.MaxWaitingRequests
	if limit <= 0 {
		return nil
	}
	if n := s.numWaitingRequests(); n >= limit {
		return openai.TooManyRequests("The server is busy: %d requests are waiting, the limit is %d (--max-waiting-requests). Retry later.", n, limit)
	}
	return nil
}

// waitingToken tracks one engine request in numWaiting until its first
// token (or its end). done is idempotent.
type waitingToken struct {
	s    *Server
	done bool
}

func (s *Server) startWaiting() *waitingToken {
	s.numWaiting.Add(1)
	return &waitingToken{s: s}
}

func (w *waitingToken) finish() {
	if !w.done {
		w.done = true
		w.s.numWaiting.Add(-1)
	}
}
