package server

import (
	"github.com/tandem-llm/tandem/frontend/metrics"
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
		s.metrics.ObserveAdmissionRejected("max_num_queued_reqs")
		return openai.TooManyRequests("The server is busy: %d requests are waiting, the limit is %d (--max-waiting-requests). Retry later.", n, limit)
	}
	return nil
}

// DefaultMaxRequestOutputTokens is --max-request-output-tokens' default:
// 2²⁰ tokens. A token the client gets k logprobs for counts 1 + k, about
// what the frontend holds for it (~60 bytes each), so one request holds at
// most ~64 MB for a non-streaming answer or a client that reads slowly.
const DefaultMaxRequestOutputTokens = 1 << 20

// checkOutput refuses a request whose sequences could generate more than
// --max-request-output-tokens: max_tokens × (1 + logprobs), summed over
// prompts × n (or best_of).
func (s *Server) checkOutput(gens []*genRequest) *openai.Error {
	limit := s.cfg.MaxRequestOutputTokens
	if limit == 0 {
		limit = DefaultMaxRequestOutputTokens
	}
	if limit < 0 {
		return nil
	}
	total := 0
	for _, g := range gens {
		per := 1
		if lp := g.params.Logprobs; lp != nil && *lp != 0 {
			per += s.logprobsCount(*lp) // -1: the whole vocabulary
		}
		total += g.n * g.params.MaxTokens * per
		if total > limit {
			break
		}
	}
	if total > limit {
		return openai.BadRequest("max_tokens", "This request could generate more than %d tokens (the sum over its %d sequences of max_tokens × (1 + logprobs)); the limit is %d (--max-request-output-tokens). Lower max_tokens, n or logprobs, or send fewer prompts per request.",
			limit, numChoices(gens), limit)
	}
	return nil
}

// waitingToken tracks one engine request in numWaiting until its first
// token (or its end). done is idempotent.
type waitingToken struct {
	s    *Server
	done bool
	// lora is the request's adapters on vllm:lora_requests_info (nil:
	// none); finish moves them from waiting to running, its owner ends it.
	lora *metrics.LoRARequest
}

func (s *Server) startWaiting() *waitingToken {
	s.numWaiting.Add(1)
	return &waitingToken{s: s}
}

func (w *waitingToken) finish() {
	if !w.done {
		w.done = true
		w.s.numWaiting.Add(-1)
		w.lora.Running()
	}
}
