package cpu

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// dummy is model.Dummy(0), built once: drawing the weights is the
// slowest part of a test under -race. Tests must not modify it.
var dummy = sync.OnceValues(func() (model.Config, *model.Weights) { return model.Dummy(0) })

// harness drives a Backend the way the runner does: it hands out KV blocks
// (in a shuffled order, so block tables are non-contiguous and interleaved
// between sequences) and builds Steps.
type harness struct {
	t    testing.TB
	be   *Backend
	bs   int     // B
	free []int32 // free block ids, taken from the end
}

// seqState is one sequence fed to a harness.
type seqState struct {
	numTokens int     // tokens already in (or scheduled into) the KV cache
	blocks    []int32 // block table
}

func newHarness(t testing.TB, cfg model.Config, w *model.Weights, threads, numBlocks, bs int, shuffle uint64) *harness {
	t.Helper()
	be, err := New(cfg, w, threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	if err := be.AllocateKV(numBlocks, bs); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, be: be, bs: bs}
	for i := range numBlocks {
		h.free = append(h.free, int32(i))
	}
	if shuffle != 0 {
		rand.New(rand.NewPCG(shuffle, 0)).Shuffle(len(h.free), func(i, j int) {
			h.free[i], h.free[j] = h.free[j], h.free[i]
		})
	}
	return h
}

// add appends toks of seq s to step, allocating blocks as needed.
func (h *harness) add(step *runner.Step, s *seqState, toks []int32, logits bool) {
	start := len(step.TokenIDs)
	for _, tok := range toks {
		pos := s.numTokens
		if pos/h.bs >= len(s.blocks) {
			if len(h.free) == 0 {
				h.t.Fatal("harness: out of KV blocks")
			}
			s.blocks = append(s.blocks, h.free[len(h.free)-1])
			h.free = h.free[:len(h.free)-1]
		}
		step.TokenIDs = append(step.TokenIDs, tok)
		step.Positions = append(step.Positions, int32(pos))
		step.SlotMapping = append(step.SlotMapping, s.blocks[pos/h.bs]*int32(h.bs)+int32(pos%h.bs))
		s.numTokens++
	}
	step.Seqs = append(step.Seqs, runner.Seq{
		Start: start, Len: len(toks), ContextLen: s.numTokens, BlockTable: s.blocks, Logits: logits,
	})
}

// forward runs step and returns one logits row per Seq with Logits set.
func (h *harness) forward(step *runner.Step) [][]float32 {
	h.t.Helper()
	v := h.be.Model().VocabSize
	rows := 0
	for _, s := range step.Seqs {
		if s.Logits {
			rows++
		}
	}
	logits := make([]float32, rows*v)
	if err := h.be.Forward(context.Background(), step, logits); err != nil {
		h.t.Fatal(err)
	}
	out := make([][]float32, rows)
	for r := range out {
		out[r] = logits[r*v : (r+1)*v]
	}
	return out
}

// feed runs toks of one sequence as one step and returns its logits.
func (h *harness) feed(s *seqState, toks []int32) []float32 {
	var step runner.Step
	h.add(&step, s, toks, true)
	return h.forward(&step)[0]
}

// prompt returns n deterministic token ids of the dummy vocabulary.
func prompt(n int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.IntN(model.DummyVocabSize))
	}
	return out
}

// argmax32 returns the index of the largest value, lowest on ties.
func argmax32(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}
