// Package sample picks next tokens from logits on the CPU: greedy,
// temperature, top-k, top-p, min-p, logit bias, presence / frequency /
// repetition penalties, a per-request seeded RNG, and top-k logprobs.
//
// It is pure computation on []float32 rows: it must not import other
// packages of this repository.
//
// Processing order in Sample (vLLM's semantics for each step): logit_bias,
// penalties (repetition on prompt+output tokens, presence and frequency on
// output tokens), then greedy argmax if Temperature < 1e-5, else
// temperature, top-k, top-p, min-p and a draw from the remaining
// distribution.
//
// Logprobs are computed on the raw model logits (vLLM's default
// "raw_logprobs"), so call TopLogprobs before Sample, which modifies the
// logits in place.
//
// Usage:
//
//	s := sample.NewSampler(&seed) // one per request, kept across its steps
//	raw := slices.Clone(logits)   // only when logprobs are wanted
//	tok := s.Sample(logits, &sample.Params{Temperature: 0.8, TopP: 0.95}, prompt, output)
//	ids, lps, rank := sample.TopLogprobs(raw, tok, 5) // ids[0] == tok
package sample
