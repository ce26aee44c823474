package runner

import (
	"math/rand/v2"
	"slices"

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
			if rowsLP == nil {
				rowsLP = &wire.Logprobs{}
			}
			rowsLP.Append(r.logprobs(it.Params, tok, *lp))
		}
		if j == it.Draft {
			break
		}
		if r.synth != nil { // benchmarking: keep the draft by chance, not by agreement
			draft := it.Tokens[first+j]
			if r.synthDraw(it) >= r.synth[min(j, len(r.synth)-1)] || slices.Contains(it.StopTokenIDs, draft) {
				break
			}
			out[len(out)-1] = draft
			continue
		}
		if tok != it.Tokens[first+j] {
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

// SetSynthRates makes verification keep draft token j with probability
// rates[j] (of the whole draft up to j), whatever the model samples:
// llama-server's --spec-synth-rates, to benchmark an acceptance rate. The
// output is not the model's. Rates must not increase; nil switches it
// off.
func (r *Runner) SetSynthRates(rates []float64) {
	r.synth = nil
	prev := 1.0
	for _, p := range rates { // conditional on the previous ones kept, as llama-server's
		q := 0.0
		if prev > 0 {
			q = p / prev
		}
		r.synth, prev = append(r.synth, q), p
	}
	if r.synthRNG == nil {
		r.synthRNG = map[string]*rand.Rand{}
	}
}

// synthDraw is it's request's next synthetic acceptance draw: seeded by
// the request's seed, so a seeded request keeps the same drafts.
func (r *Runner) synthDraw(it *batch.Item) float64 {
	g := r.synthRNG[it.RequestID]
	if g == nil {
		s := rand.Uint64()
		if it.Params.Seed != nil {
			s = uint64(*it.Params.Seed)
		}
		g = rand.New(rand.NewPCG(s, 0x5e7))
		r.synthRNG[it.RequestID] = g
	}
	return g.Float64()
}
