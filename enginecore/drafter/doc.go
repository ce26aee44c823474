// Package drafter proposes speculative decoding drafts with a second,
// smaller model (vLLM's "draft_model" method, llama-server's -md): for
// each decoding request it runs the draft model greedily for up to k
// tokens past the request's tokens and returns them; the engine verifies
// them with the target model (see enginecore/spec for the verification
// and why a greedy draft keeps the output's distribution exact).
//
// The Drafter owns the draft model's backend and a paged KV cache of its
// own: a free list of blocks and, per request, its block table and the
// tokens whose K/V the cache holds. Each Propose brings every request's
// draft cache up to its tokens (what the target kept since, or a whole
// prompt the first time; the longest common prefix with what was fed is
// kept, so accepted drafts, preemptions and context shifts need nothing
// else), then drafts one token per request per forward pass, all
// requests batched:
//
//	pass 0:   tokens[fed:] of each request         → d₁ = argmax
//	pass j:   d_j at position len(tokens)+j−1       → d_{j+1}
//
// A request stops drafting at k tokens, or when the draft model's top
// probability falls under PMin (llama-server's --spec-draft-p-min).
// Catching up is capped per call (CatchUp tokens), so one long new prompt
// spreads over steps instead of stalling one; a request still catching up
// gets no draft that step.
//
// Like a backend, a Drafter is used by one goroutine at a time (the
// engine's).
//
//	d := drafter.New(draftBackend, drafter.Config{NumBlocks: n, BlockSize: 16})
//	drafts, err := d.Propose(ctx, []drafter.Req{{ID: "a", Tokens: toks, K: 4}})
//	d.Forget("a") // when the request ends
package drafter
