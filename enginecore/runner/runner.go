package runner

import (
	"context"
	"fmt"
	"math"
	"math/bits"

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
	samplers  map[string]*sample.Sampler
}

// New returns a runner over be, whose KV cache must already be allocated
// with blocks of blockSize tokens.
func New(be Backend, blockSize int) *Runner {
	return &Runner{be: be, blockSize: blockSize, vocab: be.Model().VocabSize, samplers: map[string]*sample.Sampler{}}
}

// Forget drops per-request state (the sampler's RNG) of a finished request.
func (r *Runner) Forget(id string) { delete(r.samplers, id) }

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
// NumPrompt, Start, Len, BlockTable, Sample), never the sampling fields
// (Params, MaskStop, StopTokenIDs, Allowed): another goroutine may fill
// those meanwhile, as the engine fills structured-output masks.
func (r *Runner) Forward(ctx context.Context, b *batch.Batch) error {
	st := &r.step
	st.TokenIDs = st.TokenIDs[:0]
	st.Positions = st.Positions[:0]
	st.SlotMapping = st.SlotMapping[:0]
	st.Seqs = st.Seqs[:0]
	rows := 0
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
			Logits:     it.Sample,
			PromptLen:  it.NumPrompt,
		})
		if it.Sample {
			rows++
		}
	}
	if need := rows * r.vocab; cap(r.logits) < need {
		r.logits = make([]float32, need)
	}
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
	row := 0
	for i := range b.Items {
		it := &b.Items[i]
		if !it.Sample {
			continue
		}
		lg := logits[row*r.vocab : (row+1)*r.vocab]
		row++
		lp := it.Params.Logprobs
		if lp != nil {
			// Logprobs are of the raw model distribution (vLLM's default),
			// so keep a copy before sampling modifies the logits; with
			// MaskedLogprobs, of the distribution the constraint allows.
			if it.Params.MaskedLogprobs && it.Allowed != nil {
				applyMask(lg, it.Allowed)
			}
			r.raw = append(r.raw[:0], lg...)
		}
		res.Sampled[i] = r.sample(it, lg)
		if lp != nil {
			if res.Logprobs == nil {
				res.Logprobs = make([]*wire.Logprobs, len(b.Items))
			}
			res.Logprobs[i] = logprobs(r.raw, res.Sampled[i], *lp)
		}
	}
	return res
}

func (r *Runner) sample(it *batch.Item, lg []float32) int32 {
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
	return s.Sample(lg, &sp, it.Tokens[:it.NumPrompt], it.Tokens[it.NumPrompt:])
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
