// Package spec proposes draft tokens for speculative decoding: tokens the
// model is likely to generate next, which the engine verifies in one
// forward pass with the request's next token (a step of 1+k positions
// costs about one decode step's weight reads on a memory-bound device)
// and keeps while they agree with what the request samples.
//
// The n-gram proposers here are pure: they read a request's tokens
// (prompt, then outputs) and return a draft; they hold no state, so
// preemption, context shifts and aborts need nothing from them. (The
// third method, a draft model, runs a second model: enginecore/drafter.)
//
//   - [Ngram] is vLLM's "ngram" (prompt lookup decoding): the longest
//     suffix of the tokens, of prompt_lookup_min..prompt_lookup_max
//     tokens, that occurred before, at its earliest occurrence; the draft
//     is the tokens that followed it there.
//   - [Simple] is llama.cpp's "ngram-simple": the suffix of exactly N
//     tokens at its latest earlier occurrence; the draft is the M tokens
//     that followed it.
//
// Verification is by sampling (see enginecore/runner): at each drafted
// position the runner samples the request's token from the target
// model's logits with the request's own parameters and RNG, and keeps the
// draft token while the two agree. For a proposer whose draft is a
// function of the tokens (every one here), that is exact rejection
// sampling (a draft token x is kept with probability p(x), and on
// rejection the token is drawn from p without x, renormalized), so the
// output has the distribution, and with a seed the tokens, of decoding
// without speculation.
//
//	cfg, err := spec.ParseVLLM(`{"method": "ngram", "num_speculative_tokens": 4}`)
//	p := cfg.Proposer()
//	draft := p.Propose(tokens, cfg.NumSpeculativeTokens)
package spec
