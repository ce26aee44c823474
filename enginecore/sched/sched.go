package sched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// ErrRejected is returned by Add for a request that can never run.
var ErrRejected = errors.New("sched: request rejected")

// Config holds the scheduler's limits.
type Config struct {
	MaxNumSeqs          int // requests running at once
	MaxNumBatchedTokens int // tokens computed per step
	MaxModelLen         int // prompt + output tokens per request
	BlockSize           int // tokens per KV block
	// LongPrefillTokenThreshold caps one request's tokens per step (vLLM's
	// --long-prefill-token-threshold); 0 = no cap.
	LongPrefillTokenThreshold int
	// StepTarget is the step time Pace aims at; 0 = every step may use
	// MaxNumBatchedTokens.
	StepTarget time.Duration
	// PromptLogprobsChunk caps the tokens per step of a request with
	// prompt_logprobs, whose every token gets a logits row ([V] floats);
	// 0 = no cap of its own.
	PromptLogprobsChunk int
	// NumSpeculativeTokens caps a draft's tokens (speculative decoding,
	// see Draft); 0 = no speculation.
	NumSpeculativeTokens int
	// MinDraft drops drafts shorter than it, unless a request sets its
	// own (SpecMinDraft).
	MinDraft int
}

// Output is one request's news from one step.
type Output struct {
	Req       *Request
	NewTokens []int32 // [k] tokens this step added: one sampled, or kept drafts and one sampled
	Logprobs  *wire.Logprobs
	// PromptLogprobs are the request's prompt logprobs, on its first output.
	PromptLogprobs *wire.Logprobs
	Finished       bool
	// PromptProgress, on an output without tokens (a request with
	// ReturnProgress whose step computed part of its prompt and sampled
	// nothing), is the prompt tokens computed so far.
	PromptProgress int
	// Drafted and Accepted are, on the output of a step that verified a
	// draft, its tokens and how many of them the runner kept.
	Drafted, Accepted int
	// Pooled is an embedding request's embedding, on its finishing output.
	Pooled []float32
}

// Scheduler decides every step's batch. Not safe for concurrent use.
type Scheduler struct {
	cfg     Config
	kv      *kvcache.Manager
	waiting []*Request // sorted by (priority, seq)
	running []*Request // admission order
	byID    map[string]*Request
	nextSeq uint64
	pace    Pace
	flows   map[string]*flowState // flows with unfinished requests

	numAdmissions uint64 // cumulative, for flowState.lastAdmit

	numSteps       int64 // steps scheduled, cumulative
	numPreemptions int64 // cumulative
	spec           SpecStats
}

// New returns a scheduler allocating blocks from kv.
func New(cfg Config, kv *kvcache.Manager) *Scheduler {
	return &Scheduler{cfg: cfg, kv: kv, byID: map[string]*Request{}, flows: map[string]*flowState{}, pace: Pace{Target: cfg.StepTarget, Min: cfg.BlockSize}}
}

// Add queues a request. It fails for a duplicate id, an empty prompt, a
// prompt that does not fit max_model_len, or one the KV pool can never hold.
func (s *Scheduler) Add(r *Request) error {
	if _, dup := s.byID[r.ID]; dup {
		return fmt.Errorf("%w: duplicate request id %q", ErrRejected, r.WireID)
	}
	if r.numPrompt == 0 {
		return fmt.Errorf("%w: empty prompt", ErrRejected)
	}
	room := 1 // a generation samples at least one token past its prompt
	if r.Pooling != nil {
		room = 0 // an embedding computes its prompt only
	}
	if r.numPrompt+room > s.cfg.MaxModelLen {
		return fmt.Errorf("%w: prompt of %d tokens leaves no room under max_model_len %d", ErrRejected, r.numPrompt, s.cfg.MaxModelLen)
	}
	st := s.kv.Stats()
	if need := (r.numPrompt + room + s.cfg.BlockSize - 1) / s.cfg.BlockSize; need > st.NumBlocks {
		return fmt.Errorf("%w: prompt needs %d KV blocks, the pool has %d", ErrRejected, need, st.NumBlocks)
	}
	if r.Params.MaxTokens < 1 {
		r.Params.MaxTokens = 1
	}
	s.nextSeq++
	r.seq = s.nextSeq
	r.Status = StatusWaiting
	s.byID[r.ID] = r
	s.flowAdded(r)
	s.insertWaiting(r)
	if r.SessionID != "" {
		// Keeps the session active (its cached blocks evicted last) while
		// the request waits or is preempted, not only while it holds blocks.
		s.kv.Hold(r.SessionID)
	}
	return nil
}

func (s *Scheduler) insertWaiting(r *Request) {
	i, _ := slices.BinarySearchFunc(s.waiting, r, func(a, b *Request) int {
		// cmp.Compare, not a subtraction: priorities span the whole int
		// range, and 2⁶³−1 − (−1) overflowed to the front of the queue.
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	s.waiting = slices.Insert(s.waiting, i, r)
}

// Abort finishes the given requests (unknown ids are ignored) and returns
// the ones it finished.
func (s *Scheduler) Abort(ids ...string) []*Request {
	var done []*Request
	for _, id := range ids {
		r, ok := s.byID[id]
		if !ok {
			continue
		}
		r.FinishReason = wire.FinishAbort
		s.finish(r)
		done = append(done, r)
	}
	return done
}

func (s *Scheduler) finish(r *Request) {
	r.Status = StatusFinished
	s.kv.Free(r.ID)
	if r.SessionID != "" {
		s.kv.Release(r.SessionID)
	}
	delete(s.byID, r.ID)
	s.flowFinished(r)
	s.waiting = slices.DeleteFunc(s.waiting, func(x *Request) bool { return x == r })
	s.running = slices.DeleteFunc(s.running, func(x *Request) bool { return x == r })
}

// NumWaiting is the number of queued requests (including preempted ones).
func (s *Scheduler) NumWaiting() int { return len(s.waiting) }

// NumRunning is the number of admitted requests.
func (s *Scheduler) NumRunning() int { return len(s.running) }

// HasWork reports whether a step would do anything.
func (s *Scheduler) HasWork() bool { return len(s.waiting)+len(s.running) > 0 }

// NumPreemptions is the cumulative preemption count.
func (s *Scheduler) NumPreemptions() int64 { return s.numPreemptions }

// Observe tells the scheduler's Pace that a step of numTokens tokens took
// d to execute.
func (s *Scheduler) Observe(numTokens int, d time.Duration) { s.pace.Observe(numTokens, d) }

// NumSteps is the cumulative number of scheduled steps.
func (s *Scheduler) NumSteps() int64 { return s.numSteps }

// Get returns the unfinished request with id, or nil.
func (s *Scheduler) Get(id string) *Request { return s.byID[id] }

// Requests calls f for every unfinished request, running first.
func (s *Scheduler) Requests(f func(*Request)) {
	for _, r := range s.running {
		f(r)
	}
	for _, r := range s.waiting {
		f(r)
	}
}

// Schedule builds the next step. The batch is empty when there is nothing
// to do or nothing fits.
//
// The step's budget (max_num_batched_tokens, or less under Pace) is shared
// fairly between flows (see fair.go): while more than one flow has work,
// each gets an equal quota first and the rest goes to whoever can use it.
// With one flow this is vLLM's rule: running requests in admission order,
// then waiting ones by (priority, arrival).
func (s *Scheduler) Schedule() *batch.Batch {
	b := &batch.Batch{}
	budget := s.pace.Budget(s.cfg.MaxNumBatchedTokens)
	st := s.newStep(budget)

	// Pass 1: running requests, flow by flow, each flow up to its quota.
	for _, p := range st.quotaPlan() {
		r := p.r
		if r.Status != StatusRunning { // preempted earlier in this pass
			continue
		}
		if d := s.draftLen(r); d > 0 && !s.kv.Allocate(r.ID, r.numComputedTokens+p.n) {
			p.n = max(p.n-d, 1) // a draft never preempts: try without it
		}
		scheduled := true
		for !s.kv.Allocate(r.ID, r.numComputedTokens+p.n) {
			victim := s.pickVictim(st)
			st.drop(victim)
			s.preempt(victim)
			st.counts[victim.Flow]--
			st.kvPreempted++
			if victim == r {
				scheduled = false
				break
			}
		}
		if scheduled {
			st.take(r, p.n)
		}
	}

	// Pass 2: waiting requests. A step that had to preempt for KV admits
	// only a request whose flow is starved (see fairVictim).
	for st.budget > 0 && len(s.waiting) > 0 {
		i := s.nextWaiting(st.counts)
		r := s.waiting[i]
		if st.kvPreempted > 0 && s.fairVictim(st, r) == nil {
			break
		}
		if len(s.running) >= s.cfg.MaxNumSeqs {
			if s.preemptForFairness(st, r) {
				continue
			}
			break
		}
		if r.numComputedTokens == 0 && !r.needsEveryPrompt() {
			cached := s.kv.Lookup(r.ID, r.tokens, r.CacheSalt, r.SessionID, r.Adapter)
			r.numComputedTokens = cached
			if !r.admitted {
				r.numCachedTokens = cached
			}
		}
		n := min(s.numNew(r), st.budget)
		if n <= 0 || !s.kv.Allocate(r.ID, r.numComputedTokens+n) {
			// Release the pinned prefix so other requests can use the blocks.
			s.kv.Free(r.ID)
			r.numComputedTokens = 0
			if n > 0 && s.preemptForFairness(st, r) {
				continue
			}
			break
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		r.Status = StatusRunning
		r.admitted = true
		s.running = append(s.running, r)
		s.flowAdmitted(r)
		st.counts[r.Flow]++
		st.take(r, n)
	}

	// Pass 3: what the quotas left, to whoever can use it.
	st.spend(s)

	b.NumPreempted = st.kvPreempted + st.fairPreempted
	if len(st.items) == 0 {
		return b
	}
	s.numSteps++
	b.StepCounter = s.numSteps
	b.Items = make([]batch.Item, len(st.items))
	for i, it := range st.items {
		r, n := it.r, it.n
		tokens, draft := r.tokens, 0
		if d := min(s.draftLen(r), n-1); d > 0 {
			draft = d
			tokens = append(r.tokens[:len(r.tokens):len(r.tokens)], r.draft[:d]...)
		}
		r.draft = nil // proposed for this step only
		b.Items[i] = batch.Item{
			RequestID:    r.ID,
			Tokens:       tokens,
			NumPrompt:    r.numPrompt,
			Start:        r.numComputedTokens,
			Len:          n,
			BlockTable:   blockTable(s.kv.BlockTable(r.ID)),
			Sample:       r.numComputedTokens+n == len(tokens),
			Params:       &r.Params,
			MaskStop:     r.numOutput() < r.Params.MinTokens,
			StopTokenIDs: r.StopTokenIDs,
			Draft:        draft,
			Pooling:      r.Pooling,
			LoRA:         r.LoRA,
		}
		s.flows[r.Flow].lastServed = s.numSteps
		b.NumTokens += n
	}
	return b
}

func blockTable(ids []kvcache.BlockID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// numNew is how many of r's uncomputed tokens it may compute in one step:
// all of them, or long_prefill_token_threshold when that is set.
func (s *Scheduler) numNew(r *Request) int {
	n := len(r.tokens) - r.numComputedTokens + s.draftLen(r)
	if t := s.cfg.LongPrefillTokenThreshold; t > 0 {
		n = min(n, t)
	}
	if c := s.cfg.PromptLogprobsChunk; c > 0 && r.Params.PromptLogprobs != nil && r.numComputedTokens < r.numPrompt {
		n = min(n, c)
	}
	return n
}

// PreemptAll preempts every running request (their blocks go back to the
// pool; each recomputes what it had when scheduled again) and returns how
// many it preempted.
func (s *Scheduler) PreemptAll() int {
	running := slices.Clone(s.running)
	for _, r := range running {
		s.preempt(r)
	}
	return len(running)
}

func (s *Scheduler) preempt(r *Request) {
	r.NumPreemptions++
	s.numPreemptions++
	s.requeue(r)
}

// requeue frees r's blocks and puts it back in the waiting queue (at its
// place by priority and arrival), to recompute its tokens when admitted
// again: a preemption, or a context shift's new sequence.
func (s *Scheduler) requeue(r *Request) {
	s.kv.Free(r.ID)
	r.numComputedTokens = 0
	r.Status = StatusPreempted
	s.running = slices.DeleteFunc(s.running, func(x *Request) bool { return x == r })
	s.insertWaiting(r)
}

// pooled finishes embedding request r, whose item i computed the end of
// its prompt, with the runner's embedding.
func (s *Scheduler) pooled(r *Request, it *batch.Item, res *batch.Result, i int) Output {
	r.numComputedTokens = it.Start + it.Len
	s.kv.Commit(r.ID, r.tokens, r.numComputedTokens)
	r.FinishReason = wire.FinishStop
	out := Output{Req: r, Finished: true}
	if res.Pooled != nil {
		out.Pooled = res.Pooled[i]
	}
	s.finish(r)
	return out
}

// Update applies a step's results: computed tokens advance, sampled tokens
// are appended, stops are checked, and finished requests free their blocks.
// Items of requests aborted since Schedule are skipped.
func (s *Scheduler) Update(b *batch.Batch, res *batch.Result) []Output {
	var outs []Output
	for i := range b.Items {
		it := &b.Items[i]
		r, ok := s.byID[it.RequestID]
		if !ok || r.Status != StatusRunning {
			continue
		}
		if !it.Sample {
			r.numComputedTokens = it.Start + it.Len
			s.kv.Commit(r.ID, r.tokens, r.numComputedTokens)
			if r.Params.ReturnProgress && r.NumShifts == 0 && r.numComputedTokens < r.numPrompt {
				outs = append(outs, Output{Req: r, PromptProgress: r.numComputedTokens})
			}
			continue
		}
		if r.Pooling != nil {
			outs = append(outs, s.pooled(r, it, res, i))
			continue
		}
		toks := res.NewTokens(b, i)
		if it.Draft > 0 {
			s.spec.observe(it.Draft, len(toks)-1)
			r.NumDraftTokens += it.Draft
			r.NumAcceptedTokens += len(toks) - 1
		}
		out := Output{Req: r, Drafted: it.Draft, Accepted: len(toks) - 1}
		if res.Logprobs != nil {
			out.Logprobs = res.Logprobs[i]
		}
		if res.PromptLogprobs != nil {
			out.PromptLogprobs = res.PromptLogprobs[i]
		}
		// The K/V computed this step are valid up to the last kept token's
		// input: the item's last real token and the kept drafts.
		r.numComputedTokens = it.Start + it.Len - it.Draft + len(toks) - 1
		for k, tok := range toks {
			r.tokens = append(r.tokens, tok)
			if r.checkStop(s.cfg.MaxModelLen) {
				out.Finished = true
				toks = toks[:k+1]
				if out.Logprobs != nil && len(toks) < len(out.Logprobs.Ranks) {
					out.Logprobs = out.Logprobs.Head(len(toks))
				}
				break
			}
		}
		out.NewTokens = toks
		s.kv.Commit(r.ID, r.tokens, r.numComputedTokens)
		if out.Finished {
			s.finish(r)
		} else if r.shiftContext(s.cfg.MaxModelLen) {
			s.requeue(r)
		}
		outs = append(outs, out)
	}
	return outs
}
