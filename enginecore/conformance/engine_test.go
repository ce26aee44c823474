package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// kvBlockSize is B, tokens per KV block: small, so prompts span several
// blocks.
const kvBlockSize = 16

// engine is our side: a model file loaded as the server loads it, on the
// CPU backend with one thread.
type engine struct {
	m     *loader.Served
	be    *cpu.Backend
	cfg   model.Config
	vocab int // V
	ctxs  int // positions the KV cache holds
	table []int32
	lora  []lora.Use // applied to every Seq
}

// openEngine loads path as the engine serves it with a context of maxLen
// positions (loader.Open → cpu.New), with a KV cache of maxLen
// positions. Close releases it.
func openEngine(t *testing.T, path string, maxLen int) *engine {
	t.Helper()
	m, err := loader.Open(path, maxLen)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	be, err := cpu.New(m.Config, m.Weights, 1)
	if err != nil {
		m.Release()
		t.Fatalf("backend for %s: %v", path, err)
	}
	e := &engine{m: m, be: be, cfg: m.Config, vocab: be.Model().VocabSize}
	numBlocks := (maxLen + kvBlockSize - 1) / kvBlockSize
	if err := be.AllocateKV(numBlocks, kvBlockSize); err != nil {
		e.Close()
		t.Fatal(err)
	}
	e.ctxs = numBlocks * kvBlockSize
	for i := range numBlocks {
		e.table = append(e.table, int32(i))
	}
	return e
}

// Close stops the backend and unmaps the file.
func (e *engine) Close() error {
	return errors.Join(e.be.Close(), e.m.Release())
}

// seq is the Seq of one sequence whose tokens [start, start+n) sit at
// positions ctxLen-n..ctxLen-1, over the identity block table.
func (e *engine) seq(start, n, ctxLen int) runner.Seq {
	return runner.Seq{Start: start, Len: n, ContextLen: ctxLen, Logits: true,
		BlockTable: e.table[:(ctxLen+kvBlockSize-1)/kvBlockSize], LoRA: e.lora}
}

// decodeAll returns the logits after every position of prompt ([len][V]),
// feeding it one token per Step: position i is a decode step over the
// cached positions 0..i-1.
func (e *engine) decodeAll(t *testing.T, prompt []int32) [][]float32 {
	t.Helper()
	if len(prompt) > e.ctxs {
		t.Fatalf("prompt of %d tokens, KV cache of %d", len(prompt), e.ctxs)
	}
	out := make([][]float32, len(prompt))
	for i, id := range prompt {
		step := runner.Step{
			TokenIDs:    []int32{id},
			Positions:   []int32{int32(i)},
			SlotMapping: []int32{int32(i)}, // identity block table: slot = position
			Seqs:        []runner.Seq{e.seq(0, 1, i+1)},
		}
		out[i] = make([]float32, e.vocab)
		if err := e.be.Forward(context.Background(), &step, out[i]); err != nil {
			t.Fatalf("decode position %d: %v", i, err)
		}
	}
	return out
}

// prefillFrom returns the logits after positions from..len(prompt)-1
// ([len-from][V]) from one Step, the KV cache already holding positions
// 0..from-1 of prompt: a prefill of prompt[from:], split into one
// single-token Seq per position, all sharing one block table, so each
// token attends to the cache and to the K/V this step wrote before it.
func (e *engine) prefillFrom(t *testing.T, prompt []int32, from int) [][]float32 {
	t.Helper()
	if len(prompt) > e.ctxs || from >= len(prompt) {
		t.Fatalf("prefill of positions %d..%d, KV cache of %d", from, len(prompt)-1, e.ctxs)
	}
	n := len(prompt) - from
	step := runner.Step{TokenIDs: prompt[from:], Positions: make([]int32, n), SlotMapping: make([]int32, n)}
	for i := range n {
		step.Positions[i], step.SlotMapping[i] = int32(from+i), int32(from+i)
		step.Seqs = append(step.Seqs, e.seq(i, 1, from+i+1))
	}
	flat := make([]float32, n*e.vocab)
	if err := e.be.Forward(context.Background(), &step, flat); err != nil {
		t.Fatalf("prefill: %v", err)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*e.vocab : (i+1)*e.vocab]
	}
	return out
}

// greedy returns n greedy tokens after prompt, the KV cache already
// holding positions 0..cached-1 of it (cached < len(prompt)): one prefill
// Step of the rest (logits of its last token only), then one decode Step
// per token.
func (e *engine) greedy(t *testing.T, prompt []int32, cached, n int) []int32 {
	t.Helper()
	if len(prompt)+n > e.ctxs || cached >= len(prompt) {
		t.Fatalf("%d+%d tokens (%d cached), KV cache of %d", len(prompt), n, cached, e.ctxs)
	}
	logits := make([]float32, e.vocab)
	tokens := slices.Clone(prompt)
	var out []int32
	for start := cached; len(out) < n; {
		step := runner.Step{TokenIDs: tokens[start:]}
		for p := start; p < len(tokens); p++ {
			step.Positions = append(step.Positions, int32(p))
			step.SlotMapping = append(step.SlotMapping, int32(p))
		}
		step.Seqs = []runner.Seq{e.seq(0, len(tokens)-start, len(tokens))}
		if err := e.be.Forward(context.Background(), &step, logits); err != nil {
			t.Fatalf("greedy step at %d: %v", len(tokens), err)
		}
		next := int32(argmax(logits))
		out = append(out, next)
		start, tokens = len(tokens), append(tokens, next)
	}
	return out
}

// argmax is the index of the largest value (the first, on ties).
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
