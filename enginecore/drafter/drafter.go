package drafter

import (
	"context"
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Config sizes a Drafter.
type Config struct {
	NumBlocks int     // KV blocks of the draft cache
	BlockSize int     // B, tokens per block
	PMin      float64 // stop a draft when the draft model's top probability is below this; 0 = never
	// CatchUp caps the tokens one Propose feeds to bring caches up to
	// their requests' tokens (a new prompt, say); 0 = 2048.
	CatchUp int
	// MaxToken is the highest token id a draft may hold (the target's
	// vocabulary may be smaller than the draft's); 0 = the draft's.
	MaxToken int32
}

// Req is one request to draft for.
type Req struct {
	ID     string
	Tokens []int32 // [N] all its tokens so far, prompt then outputs
	K      int     // the most draft tokens it may get
}

// Drafter proposes drafts with a draft model. Not safe for concurrent use.
type Drafter struct {
	cfg    Config
	be     runner.Backend
	vocab  int     // V of the draft model
	free   []int32 // free blocks
	seqs   map[string]*seqState
	step   runner.Step
	logits []float32 // [rows][V]
}

// seqState is one request's draft cache.
type seqState struct {
	blocks []int32 // block table
	fed    []int32 // tokens whose K/V are in the cache, positions 0..len-1
}

// New returns a Drafter over be, allocating be's KV cache of cfg's size.
func New(be runner.Backend, cfg Config) (*Drafter, error) {
	if cfg.NumBlocks <= 0 || cfg.BlockSize <= 0 {
		return nil, fmt.Errorf("drafter: %d blocks of %d tokens", cfg.NumBlocks, cfg.BlockSize)
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = 2048
	}
	if err := be.AllocateKV(cfg.NumBlocks, cfg.BlockSize); err != nil {
		return nil, fmt.Errorf("drafter: allocate the draft model's KV cache: %w", err)
	}
	d := &Drafter{cfg: cfg, be: be, vocab: be.Model().VocabSize, seqs: map[string]*seqState{}}
	if d.cfg.MaxToken <= 0 || int(d.cfg.MaxToken) >= d.vocab {
		d.cfg.MaxToken = int32(d.vocab - 1)
	}
	for b := cfg.NumBlocks - 1; b >= 0; b-- {
		d.free = append(d.free, int32(b))
	}
	return d, nil
}

// Forget frees a finished request's draft cache.
func (d *Drafter) Forget(id string) {
	if s := d.seqs[id]; s != nil {
		d.free = append(d.free, s.blocks...)
		delete(d.seqs, id)
	}
}

// NumFreeBlocks is the draft cache's free blocks.
func (d *Drafter) NumFreeBlocks() int { return len(d.free) }

// active is a request being drafted for in this Propose.
type active struct {
	i     int // index in reqs
	s     *seqState
	toks  []int32 // what to feed this pass
	start int     // the position of toks[0]
	left  int     // draft tokens still wanted
}

// Propose returns a draft per request (nil for none): its cache caught
// up, then greedy tokens of the draft model.
func (d *Drafter) Propose(ctx context.Context, reqs []Req) ([][]int32, error) {
	out := make([][]int32, len(reqs))
	var act []active
	budget := d.cfg.CatchUp
	for i, r := range reqs {
		if r.K <= 0 || len(r.Tokens) == 0 {
			continue
		}
		s := d.seqs[r.ID]
		if s == nil {
			s = &seqState{}
			d.seqs[r.ID] = s
		}
		c := commonPrefix(s.fed, r.Tokens)
		if c == len(r.Tokens) { // never re-feed the last token's K/V without its logits
			c--
		}
		s.fed = s.fed[:c]
		n := len(r.Tokens) - c
		if n > budget {
			if budget > 0 { // feed what fits; draft next time
				if d.grow(s, c+budget) {
					act = append(act, active{i: i, s: s, toks: r.Tokens[c : c+budget], start: c, left: 0})
				}
				budget = 0
			}
			continue
		}
		if !d.grow(s, len(r.Tokens)+r.K-1) {
			continue // no room in the draft cache: no draft
		}
		budget -= n
		act = append(act, active{i: i, s: s, toks: r.Tokens[c:], start: c, left: r.K})
	}
	for len(act) > 0 {
		next, err := d.pass(ctx, act)
		if err != nil {
			return nil, err
		}
		kept := act[:0]
		for j, a := range act {
			a.s.fed = append(a.s.fed, a.toks...)
			if a.left == 0 { // catching up only
				continue
			}
			tok, ok := next[j], next[j] >= 0
			if !ok {
				continue
			}
			out[a.i] = append(out[a.i], tok)
			a.left--
			if a.left == 0 {
				continue
			}
			a.toks, a.start = []int32{tok}, a.start+len(a.toks)
			kept = append(kept, a)
		}
		act = kept
	}
	return out, nil
}

// pass runs one forward over act's tokens and returns each one's greedy
// next token, or -1 below PMin (or when it only catches up).
func (d *Drafter) pass(ctx context.Context, act []active) ([]int32, error) {
	st := &d.step
	st.TokenIDs, st.Positions, st.SlotMapping, st.Seqs = st.TokenIDs[:0], st.Positions[:0], st.SlotMapping[:0], st.Seqs[:0]
	bs := int32(d.cfg.BlockSize)
	for _, a := range act {
		first := len(st.TokenIDs)
		for j, t := range a.toks {
			p := int32(a.start + j)
			st.TokenIDs = append(st.TokenIDs, t)
			st.Positions = append(st.Positions, p)
			st.SlotMapping = append(st.SlotMapping, a.s.blocks[p/bs]*bs+p%bs)
		}
		ctxLen := a.start + len(a.toks)
		st.Seqs = append(st.Seqs, runner.Seq{Start: first, Len: len(a.toks), ContextLen: ctxLen,
			BlockTable: a.s.blocks[:(ctxLen+d.cfg.BlockSize-1)/d.cfg.BlockSize], Logits: true})
	}
	if need := len(act) * d.vocab; cap(d.logits) < need {
		d.logits = make([]float32, need)
	}
	if err := d.be.Forward(ctx, st, d.logits[:len(act)*d.vocab]); err != nil {
		return nil, fmt.Errorf("drafter: forward: %w", err)
	}
	next := make([]int32, len(act))
	for j, a := range act {
		next[j] = -1
		if a.left == 0 {
			continue
		}
		row := d.logits[j*d.vocab : (j+1)*d.vocab][:d.cfg.MaxToken+1]
		tok := argmax(row)
		if d.cfg.PMin <= 0 || prob(row, tok) >= d.cfg.PMin { // the softmax only when p_min asks for it
			next[j] = tok
		}
	}
	return next, nil
}

// grow makes s's blocks cover n positions; false when the pool cannot.
func (d *Drafter) grow(s *seqState, n int) bool {
	need := (n+d.cfg.BlockSize-1)/d.cfg.BlockSize - len(s.blocks)
	if need <= 0 {
		return true
	}
	if need > len(d.free) {
		return false
	}
	s.blocks = append(s.blocks, d.free[len(d.free)-need:]...)
	d.free = d.free[:len(d.free)-need]
	return true
}

// argmax is row's greedy token (the lowest id of equals).
func argmax(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}

// prob is token tok's softmax probability in row.
func prob(row []float32, tok int32) float64 {
	m := float64(row[tok])
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v) - m)
	}
	return 1 / sum
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
