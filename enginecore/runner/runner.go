package runner

import (
	"context"
	"fmt"
	"github.com/tandem-llm/tandem/enginecore/model"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/sample"
	"github.com/tandem-llm/tandem/wire"
)

// Runner executes batches on a Backend. Not safe for concurrent use.
type Runner struct {
	be        Backend
	blockSize int
	vocab     int // V
	step      Step
	logits    []float32 // [rows][V], grown as needed
	rows      int       // rows of logits the last Forward wrote
	raw       []float32 // [V] unmodified logits of the row being sampled
	kept      []float32 // [len(allowed_token_ids)] logits saved by keepOnly
	samplers  map[string]*sample.Sampler
	firstRow  []int  // [len(Items)] of the last Forward: the item's first logits row
	allRows   []bool // [len(Items)] of the last Forward: the item has a row per token
	// prompts holds, per request with prompt_logprobs, the rows gathered
	// so far (one per prompt position 1..P-1, in order) until they are
	// sent with its first token; then only that they were.
	prompts map[string]*promptLogprobs
	// synth (benchmarking only, llama-server's --spec-synth-rates) is the
	// probability of keeping draft token j given the ones before it were
	// kept, whatever the model says; synthRNG draws it, per request.
	synth    []float64
	synthRNG map[string]*rand.Rand
	// Embeddings: dim is the model's hidden size (0: none), hidden the
	// last Forward's hidden-state rows ([Σ rows][Dim]), hiddenRow each
	// item's first row in it, pools the MEAN and CLS requests' sums.
	dim       int
	hidden    []float32
	hiddenRow []int
	pools     map[string]*pooling
	// classifier is the model's classification head (RANK pooling); nil:
	// none.
	classifier *model.Classifier
}

// promptLogprobs is one request's prompt logprobs in the making.
type promptLogprobs struct {
	lp   wire.Logprobs
	sent bool
}

// New returns a runner over be, whose KV cache must already be allocated
// with blocks of blockSize tokens.
func New(be Backend, blockSize int) *Runner {
	m := be.Model()
	return &Runner{be: be, blockSize: blockSize, vocab: m.VocabSize, dim: m.Dim, samplers: map[string]*sample.Sampler{},
		prompts: map[string]*promptLogprobs{}, pools: map[string]*pooling{}, classifier: m.Classifier}
}

// Forget drops per-request state (the sampler's RNG, prompt logprobs) of
// a finished request.
func (r *Runner) Forget(id string) {
	delete(r.samplers, id)
	delete(r.prompts, id)
	delete(r.synthRNG, id)
	delete(r.pools, id)
}

// Execute runs one forward pass over b and samples a token for every item
// whose chunk reaches the end of its tokens: Forward, then Sample.
func (r *Runner) Execute(ctx context.Context, b *batch.Batch) (*batch.Result, error) {
	if err := r.Forward(ctx, b); err != nil {
		return nil, err
	}
	return r.Sample(b), nil
}

// Forward runs b's forward pass and keeps the logits for Sample. Of b's
// items it reads only what lays the tokens out (RequestID, Tokens,
// NumPrompt, Start, Len, BlockTable, Sample, and Params.PromptLogprobs,
// which asks for a logits row per prompt token), never the other sampling
// fields (MaskStop, StopTokenIDs, Allowed): another goroutine may fill
// those meanwhile, as the engine fills structured-output masks.
func (r *Runner) Forward(ctx context.Context, b *batch.Batch) error {
	st := &r.step
	st.TokenIDs = st.TokenIDs[:0]
	st.Positions = st.Positions[:0]
	st.SlotMapping = st.SlotMapping[:0]
	st.Seqs = st.Seqs[:0]
	r.firstRow, r.allRows, r.hiddenRow = r.firstRow[:0], r.allRows[:0], r.hiddenRow[:0]
	rows, hidden := 0, 0
	for i := range b.Items {
		it := &b.Items[i]
		start := len(st.TokenIDs)
		for p := it.Start; p < it.Start+it.Len; p++ {
			blk := p / r.blockSize
			if blk >= len(it.BlockTable) {
				return fmt.Errorf("runner: request %s: position %d beyond its %d blocks", it.RequestID, p, len(it.BlockTable))
			}
			st.TokenIDs = append(st.TokenIDs, it.Tokens[p])
			st.Positions = append(st.Positions, int32(p))
			st.SlotMapping = append(st.SlotMapping, it.BlockTable[blk]*int32(r.blockSize)+int32(p%r.blockSize))
		}
		st.Seqs = append(st.Seqs, Seq{
			Start:      start,
			Len:        it.Len,
			ContextLen: it.Start + it.Len,
			BlockTable: it.BlockTable,
			Logits:     it.Sample && it.Pooling == nil,
			AllLogits:  r.wantsPromptRows(it),
			LastRows:   it.Draft + 1,
			PromptLen:  it.NumPrompt,
			Hidden:     hiddenRows(it),
			LoRA:       it.LoRA,
		})
		s := &st.Seqs[len(st.Seqs)-1]
		_, n := s.LogitRows()
		r.firstRow, r.allRows = append(r.firstRow, rows), append(r.allRows, s.AllLogits)
		rows += n
		_, n = s.HiddenRowsOf()
		r.hiddenRow = append(r.hiddenRow, hidden)
		hidden += n
	}
	if need := rows * r.vocab; cap(r.logits) < need {
		r.logits = make([]float32, need)
	}
	if need := hidden * r.dim; cap(r.hidden) < need {
		r.hidden = make([]float32, need)
	}
	r.hidden = r.hidden[:hidden*r.dim]
	st.Hidden = r.hidden
	r.rows = 0
	if err := r.be.Forward(ctx, st, r.logits[:rows*r.vocab]); err != nil {
		return fmt.Errorf("runner: forward: %w", err)
	}
	r.rows = rows
	return nil
}

// Sample samples a token for every item of b that reached the end of its
// tokens, from the logits of the last Forward, which must have been of b.
func (r *Runner) Sample(b *batch.Batch) *batch.Result {
	logits := r.logits[:r.rows*r.vocab]
	res := &batch.Result{Sampled: make([]int32, len(b.Items))}
	for i := range b.Items {
		it := &b.Items[i]
		if it.Pooling != nil {
			r.samplePooled(res, b, i)
			continue
		}
		row := r.firstRow[i]
		if r.allRows[i] {
			r.gatherPrompt(it, logits[row*r.vocab:(row+it.Len)*r.vocab])
			row += it.Len - 1 // the last token's row, the one sampled from
		}
		if !it.Sample {
			continue
		}
		if it.Draft > 0 {
			r.verify(res, b, i, logits[row*r.vocab:])
			continue
		}
		if it.Params.PromptLogprobs != nil {
			if pl := r.takePrompt(it.RequestID); pl != nil {
				if res.PromptLogprobs == nil {
					res.PromptLogprobs = make([]*wire.Logprobs, len(b.Items))
				}
				res.PromptLogprobs[i] = pl
			}
		}
		lg := logits[row*r.vocab : (row+1)*r.vocab]
		lp := numLogprobs(it.Params, r.vocab)
		if lp != nil {
			// Logprobs are of the raw model distribution (vLLM's default),
			// so keep a copy before sampling modifies the logits; with
			// MaskedLogprobs, of the distribution the constraint allows.
			if it.Params.MaskedLogprobs && it.Allowed != nil {
				applyMask(lg, it.Allowed)
			}
			r.raw = append(r.raw[:0], lg...)
		}
		res.Sampled[i] = r.sample(it, lg, it.Tokens[it.NumPrompt:])
		if lp != nil {
			if res.Logprobs == nil {
				res.Logprobs = make([]*wire.Logprobs, len(b.Items))
			}
			res.Logprobs[i] = r.logprobs(it.Params, res.Sampled[i], *lp)
		}
	}
	return res
}

// numLogprobs is how many logprobs to report per sampled token besides
// its own: logprobs (-1 = V), or len(logprob_token_ids); nil for none.
func numLogprobs(p *wire.SamplingParams, vocab int) *int {
	switch {
	case p.LogprobTokenIDs != nil:
		n := len(p.LogprobTokenIDs)
		return &n
	case p.Logprobs != nil && *p.Logprobs < 0:
		return &vocab
	}
	return p.Logprobs
}

// logprobs reports the sampled token and the top k alternatives, or the
// logprob_token_ids, of the raw logits.
func (r *Runner) logprobs(p *wire.SamplingParams, tok int32, k int) *wire.Logprobs {
	if p.LogprobTokenIDs != nil {
		ids, lps, rank := sample.TokenLogprobs(r.raw, tok, p.LogprobTokenIDs)
		return &wire.Logprobs{TokenIDs: [][]int32{ids}, Logprobs: [][]float64{lps}, Ranks: []int32{rank}}
	}
	return logprobs(r.raw, tok, k)
}

// sample draws it's next token from lg, given its outputs so far.
func (r *Runner) sample(it *batch.Item, lg []float32, outputs []int32) int32 {
	s, ok := r.samplers[it.RequestID]
	if !ok {
		s = sample.NewSampler(it.Params.Seed)
		r.samplers[it.RequestID] = s
	}
	if it.MaskStop {
		for _, id := range it.StopTokenIDs {
			if id >= 0 && int(id) < len(lg) { // the engine refuses such ids; never index with one
				lg[id] = float32(math.Inf(-1))
			}
		}
	}
	if it.Allowed != nil {
		applyMask(lg, it.Allowed)
	}
	if ids := it.Params.AllowedTokenIDs; ids != nil {
		r.kept = keepOnly(lg, ids, r.kept)
	}
	p := it.Params
	sp := sample.Params{
		Temperature:       p.Temperature,
		TopP:              p.TopP,
		TopK:              p.TopK,
		MinP:              p.MinP,
		PresencePenalty:   p.PresencePenalty,
		FrequencyPenalty:  p.FrequencyPenalty,
		RepetitionPenalty: p.RepetitionPenalty,
		LogitBias:         p.LogitBias,
	}
	return s.Sample(lg, &sp, it.Tokens[:it.NumPrompt], outputs)
}

// keepOnly sets every logit but those of ids to -Inf (allowed_token_ids),
// saving their values in kept (grown and returned) while it fills.
func keepOnly(lg []float32, ids []int32, kept []float32) []float32 {
	kept = kept[:0]
	for _, id := range ids {
		v := float32(math.Inf(-1))
		if id >= 0 && int(id) < len(lg) { // the engine refuses other ids; never index with one
			v = lg[id]
		}
		kept = append(kept, v)
	}
	copy(lg, ninfs[:])
	for i := 32; i < len(lg); i *= 2 {
		copy(lg[i:], lg[:i])
	}
	for j, id := range ids {
		if id >= 0 && int(id) < len(lg) {
			lg[id] = kept[j]
		}
	}
	return kept
}

// ninfs is a word's worth of -Inf logits.
var ninfs = func() (v [32]float32) {
	for i := range v {
		v[i] = float32(math.Inf(-1))
	}
	return v
}()

// applyMask sets the logits of the tokens mask does not allow to -Inf
// (bit t%32 of mask[t/32] set: token t allowed). A constraint's mask is
// mostly empty words (a JSON mask allows a few hundred of 49,152 tokens),
// filled 32 logits at a time; the others visit only their clear bits.
func applyMask(lg []float32, mask []uint32) {
	ninf := float32(math.Inf(-1))
	n := min(len(mask), len(lg)/32) // words whose 32 logits all exist
	for w, allowed := range mask[:n] {
		switch allowed {
		case ^uint32(0):
		case 0:
			copy(lg[w*32:w*32+32], ninfs[:]) // memmove: wide stores
		default:
			seg := lg[w*32 : w*32+32]
			for clear := ^allowed; clear != 0; clear &= clear - 1 {
				seg[bits.TrailingZeros32(clear)] = ninf
			}
		}
	}
	for t := 32 * n; t < len(lg); t++ { // a last partial word, and past the mask
		if t/32 >= len(mask) || mask[t/32]>>(t%32)&1 == 0 {
			lg[t] = ninf // past the mask: not in the matcher's vocabulary
		}
	}
}

// logprobs reports the sampled token and the top k alternatives.
func logprobs(lg []float32, tok int32, k int) *wire.Logprobs {
	ids, lps, rank := sample.TopLogprobs(lg, tok, k)
	return &wire.Logprobs{TokenIDs: [][]int32{ids}, Logprobs: [][]float64{lps}, Ranks: []int32{rank}}
}

// wantsPromptRows reports whether it's chunk needs a logits row per token:
// its request asks for prompt logprobs that are not yet sent and the chunk
// covers prompt positions below the last (whose row predicts the first
// output token).
func (r *Runner) wantsPromptRows(it *batch.Item) bool {
	if it.Params == nil || it.Params.PromptLogprobs == nil || it.Start >= it.NumPrompt-1 {
		return false
	}
	pl := r.prompts[it.RequestID]
	return pl == nil || !pl.sent
}

// gatherPrompt appends the prompt logprobs of it's chunk from its rows
// ([Len][V]: row j predicts the token at position Start+j+1). Positions
// gathered before (a chunk computed again after a preemption) are skipped.
func (r *Runner) gatherPrompt(it *batch.Item, rows []float32) {
	pl := r.prompts[it.RequestID]
	if pl == nil {
		pl = &promptLogprobs{}
		r.prompts[it.RequestID] = pl
	}
	k := *it.Params.PromptLogprobs
	if k < 0 {
		k = r.vocab
	}
	for j := range it.Len {
		pos := it.Start + j + 1 // the prompt token row j predicts
		if pos >= it.NumPrompt {
			break
		}
		if pos-1 < len(pl.lp.Ranks) {
			continue
		}
		ids, lps, rank := sample.TopLogprobs(rows[j*r.vocab:(j+1)*r.vocab], it.Tokens[pos], k)
		pl.lp.TokenIDs = append(pl.lp.TokenIDs, ids)
		pl.lp.Logprobs = append(pl.lp.Logprobs, lps)
		pl.lp.Ranks = append(pl.lp.Ranks, rank)
	}
}

// takePrompt returns a request's prompt logprobs the first time it
// samples (every prompt position is computed by then), nil afterwards.
func (r *Runner) takePrompt(id string) *wire.Logprobs {
	pl := r.prompts[id]
	if pl == nil {
		pl = &promptLogprobs{} // a one-token prompt: no position has a logprob
		r.prompts[id] = pl
	}
	if pl.sent {
		return nil
	}
	pl.sent = true
	lp := pl.lp
	pl.lp = wire.Logprobs{}
	return &lp
}
