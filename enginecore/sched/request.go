package sched

import (
	"slices"

	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/wire"
)

// Status is where a request is in its life.
type Status uint8

const (
	StatusWaiting   Status = iota // queued, holds no blocks
	StatusRunning                 // admitted, holds blocks
	StatusPreempted               // waiting again after preemption
	StatusFinished                // done; blocks freed
)

// Request is the engine's record of one request.
type Request struct {
	ID          string // internal id, unique in the engine
	WireID      string // the id its frontend gave (the engine scopes ID by frontend)
	ExternalID  string // the user-visible id
	SessionID   string // "" = none
	CacheSalt   string // "" = none
	Client      string // frontend identity the outputs go to
	Flow        string // fairness group: Client + "\x00" + the ADD's flow_id
	Priority    int    // lower runs earlier
	ArrivalTime float64
	Params      wire.SamplingParams
	// Pooling, set on an embedding request, finishes it when its prompt
	// is computed, with the pooled hidden states instead of a token.
	Pooling *wire.PoolingParams
	// LoRA are the adapters the request applies, loaded by the engine
	// (CacheSalt then includes them: wire.LoRASalt); Adapter names them
	// in the KV events of the blocks it stores.
	LoRA         []lora.Use
	Adapter      kvcache.Adapter
	StopTokenIDs []int32 // EOS (unless ignore_eos) + stop_token_ids
	EOSTokenIDs  []int32 // the tokens that stop with stop_reason nil
	Status       Status
	FinishReason wire.FinishReason
	StopReason   any // nil, int64 stop token id
	seq          uint64

	tokens            []int32 // [NumPrompt + outputs]
	numPrompt         int
	numComputedTokens int // tokens whose K/V are in the cache
	numCachedTokens   int // prompt tokens served by the prefix cache at first admission
	numDropped        int // output tokens context shifts dropped (still counted as generated)
	NumShifts         int // context shifts (Params.ContextShift)
	admitted          bool
	NumPreemptions    int

	// draft is the speculative tokens proposed to follow tokens (set by
	// Scheduler.Draft, used by the next Schedule); NumDraftTokens and
	// NumAcceptedTokens count the request's verified drafts and how many
	// of their tokens it kept (llama-server's draft_n, draft_n_accepted).
	draft             []int32
	NumDraftTokens    int
	NumAcceptedTokens int
}

// NewRequest builds a request from an ADD message. eos are the model's
// end-of-sequence tokens, used unless the request sets its own or ignore_eos.
func NewRequest(r *wire.EngineCoreRequest, client string, eos []int32) *Request {
	req := &Request{
		ID:          r.RequestID,
		WireID:      r.RequestID,
		ExternalID:  r.ExternalReqID,
		SessionID:   r.SessionID,
		CacheSalt:   r.CacheSalt,
		Client:      client,
		Flow:        client + "\x00" + r.FlowID,
		Priority:    r.Priority,
		ArrivalTime: r.ArrivalTime,
		Params:      r.SamplingParams,
		Pooling:     r.Pooling,
		tokens:      slices.Clone(r.PromptTokenIDs),
		numPrompt:   len(r.PromptTokenIDs),
	}
	if !r.SamplingParams.IgnoreEOS {
		if id := r.SamplingParams.EOSTokenID; id != nil {
			req.EOSTokenIDs = []int32{*id}
		} else {
			req.EOSTokenIDs = slices.Clone(eos)
		}
	}
	req.StopTokenIDs = append(slices.Clone(req.EOSTokenIDs), r.SamplingParams.StopTokenIDs...)
	return req
}

// NumPromptTokens is the prompt length.
func (r *Request) NumPromptTokens() int { return r.numPrompt }

// PromptTokenIDs are the prompt's tokens (read-only).
func (r *Request) PromptTokenIDs() []int32 { return r.tokens[:r.numPrompt] }

// OutputTokenIDs are the tokens generated so far (read-only).
func (r *Request) OutputTokenIDs() []int32 { return r.tokens[r.numPrompt:] }

// NumCachedTokens is how many prompt tokens the prefix cache served.
func (r *Request) NumCachedTokens() int { return r.numCachedTokens }

// numOutput is how many tokens the request generated, those context
// shifts dropped included.
func (r *Request) numOutput() int { return len(r.tokens) - r.numPrompt + r.numDropped }

// checkStop appends nothing; it decides whether the last sampled token ends
// the request (vLLM's check_stop).
func (r *Request) checkStop(maxModelLen int) bool {
	n := r.numOutput()
	if n >= r.Params.MinTokens && n > 0 {
		last := r.tokens[len(r.tokens)-1]
		if slices.Contains(r.EOSTokenIDs, last) {
			r.FinishReason = wire.FinishStop
			return true
		}
		if slices.Contains(r.Params.StopTokenIDs, last) {
			r.FinishReason = wire.FinishStop
			r.StopReason = int64(last)
			return true
		}
	}
	if n >= r.Params.MaxTokens || len(r.tokens) >= maxModelLen && r.Params.ContextShift == nil {
		r.FinishReason = wire.FinishLength
		return true
	}
	return false
}

// needsEveryPrompt reports whether every prompt token of r must be
// computed, none served by the prefix cache: prompt logprobs (vLLM's
// rule), and the MEAN, CLS and NONE poolings, which read each token's
// hidden state.
func (r *Request) needsEveryPrompt() bool {
	if r.Params.PromptLogprobs != nil {
		return true
	}
	if r.Pooling == nil {
		return false
	}
	switch r.Pooling.PoolingType {
	case wire.PoolingMean, wire.PoolingCLS, wire.PoolingNone:
		return true
	}
	return false
}

// shiftContext is llama.cpp's context shift on a request whose tokens
// fill maxModelLen: it keeps the first n_keep (Params.ContextShift, at
// most all but one), drops half of the rest after them and reports true;
// the caller recomputes the KV cache of what is left. Dropped prompt
// tokens shorten the prompt; dropped output tokens still count as
// generated (max_tokens, min_tokens).
func (r *Request) shiftContext(maxModelLen int) bool {
	if r.Params.ContextShift == nil || len(r.tokens) < maxModelLen {
		return false
	}
	keep := min(max(*r.Params.ContextShift, 0), len(r.tokens)-2)
	drop := max((len(r.tokens)-keep)/2, 1)
	fromPrompt := max(min(r.numPrompt, keep+drop)-keep, 0)
	r.numPrompt -= fromPrompt
	r.numDropped += drop - fromPrompt
	r.tokens = slices.Delete(r.tokens, keep, keep+drop)
	r.NumShifts++
	return true
}
