// Package beam is beam search orchestrated outside the engine, the way
// vLLM's BeamSearchOnlineMixin does it: every step asks the engine for the
// next-token log probabilities of each live beam (one sub-request per
// beam, max_tokens 1, logprobs 2·width), extends each beam by those
// candidates, keeps the width best by cumulative log probability, and
// moves a beam that picked EOS to the finished set. At the end, finished
// and live beams are ranked by
//
//	score = cumulative logprob / (prompt tokens + generated tokens)^length_penalty
//
// (the EOS token not counted in the length), vLLM's and Hugging Face's
// get_beam_search_score, and the width best are returned.
//
// The package is pure: it knows nothing of HTTP or the wire and reaches the
// engine only through the Expander the caller passes in (the server submits
// the sub-requests, each carrying the request's session_id). It imports
// nothing from this repository.
//
//	beams, err := beam.Search(ctx, prompt, beam.Params{Width: 4, MaxTokens: 16, LengthPenalty: 1, EOS: eos}, expand)
//	best := beams[0] // highest score first
package beam
