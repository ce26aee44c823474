// Package sched is the engine core's scheduler: continuous batching by
// vLLM v1's rule. There is no prefill or decode phase: every request has a
// num_computed_tokens that catches up with its tokens (prompt, then outputs)
// under a per-step token budget. That one rule covers chunked prefill,
// prefix-cache hits and decode.
//
// Each step serves running requests first (in admission order), then admits
// waiting requests by (priority, arrival). When the KV pool runs out, the
// running request that would be admitted last is preempted by recompute: its
// blocks are freed and it goes back to the front of the waiting queue, to
// resume with its prefix re-used from the prefix cache where possible.
//
// Requests belong to flows (one per client request, see fair.go): the
// budget, the running slots and the KV blocks are shared fairly between
// flows, so one client's thousands of sequences cannot hold back another's
// one. With a single flow the rule above is unchanged. Pace (pace.go)
// sizes each step's budget to a target step time from the step times the
// shell observes, so a step on a slow device stays short.
//
// The scheduler is a pure, deterministic state machine: no goroutines, no
// clock, no logging. It must not import the runner or anything that does IO.
//
//	s := sched.New(sched.Config{MaxNumSeqs: 64, MaxNumBatchedTokens: 2048, MaxModelLen: 4096}, kv)
//	s.Add(req)
//	b := s.Schedule()          // which tokens to compute
//	outs := s.Update(b, res)   // append sampled tokens, check stops, free finished
package sched
