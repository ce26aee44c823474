package runner

import (
	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/wire"
)

// verify samples drafted item i of b (speculative decoding): rows
// ([Draft+1][V], from the item's first logits row) are the target
// model's logits at its last token and at each draft token. At position
// j it samples the request's token with its own parameters, RNG and the
// outputs so far (the drafts kept before j included), exactly as decoding
// one token at a time would; while that token equals draft j it keeps the
// draft and goes on, and the first token that differs (or the one after
// the last draft) ends the step. A draft that is a function of the
// tokens is so verified by exact rejection sampling (see enginecore/spec),
// and a seeded request draws the same numbers as without drafts.
//
// res.Tokens[i] gets the kept drafts and the last sampled token,
// res.Sampled[i] that last token, res.Logprobs[i] a row per new token.
func (r *Runner) verify(res *batch.Result, b *batch.Batch, i int, rows []float32) {
	it := &b.Items[i]
	if res.Tokens == nil {
		res.Tokens = make([][]int32, len(b.Items))
	}
	first := len(it.Tokens) - it.Draft // index in Tokens of the first draft
	lp := numLogprobs(it.Params, r.vocab)
	var out []int32
	var rowsLP *wire.Logprobs
	for j := 0; j <= it.Draft; j++ {
		lg := rows[j*r.vocab : (j+1)*r.vocab]
		if lp != nil {
			r.raw = append(r.raw[:0], lg...)
		}
		tok := r.sample(it, lg, it.Tokens[it.NumPrompt:first+j])
		out = append(out, tok)
		if lp != nil {
			one := r.logprobs(it.Params, tok, *lp)
			if rowsLP == nil {
				rowsLP = &wire.Logprobs{}
			}
			rowsLP.TokenIDs = append(rowsLP.TokenIDs, one.TokenIDs...)
			rowsLP.Logprobs = append(rowsLP.Logprobs, one.Logprobs...)
			rowsLP.Ranks = append(rowsLP.Ranks, one.Ranks...)
		}
		if j == it.Draft || tok != it.Tokens[first+j] {
			break
		}
	}
	res.Tokens[i] = out
	res.Sampled[i] = out[len(out)-1]
	if rowsLP != nil {
		if res.Logprobs == nil {
			res.Logprobs = make([]*wire.Logprobs, len(b.Items))
		}
		res.Logprobs[i] = rowsLP
	}
}
