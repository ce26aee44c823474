package null

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Text is the sentence a null engine generates, over and over.
const Text = "The quick brown fox jumps over the lazy dog. "

// Margin is how far the scripted token's logit stands above the others
// (0): far enough that sampling at any sensible temperature, or after a
// repetition penalty, still picks it.
const Margin = 100

// kvBytesPerToken is what the null engine reports a KV token to cost, so
// --kv-cache-memory sizes its pool as for a small model; nothing is
// allocated.
const kvBytesPerToken = 1024

// Backend is the null backend. It is used by one goroutine at a time, as
// runner.Backend requires.
type Backend struct {
	info       runner.ModelInfo
	stepTime   time.Duration // a forward pass takes at least this long (0: returns at once)
	script     []int32       // token ids, generated in order and cycled
	numBlocks  int           // as allocated; Forward checks block ids against it
	numForward int           // Forward calls so far
	failAfter  int           // Forward calls that succeed before every later one fails (0: none fails)
}

// ErrInjected is what Forward returns once FailAfter's passes are done.
var ErrInjected = errors.New("null: injected failure (--device null:fail-after=N)")

// FailAfter makes every forward pass after the next n fail with
// ErrInjected (n ≥ 1; 0 turns it off): fault injection, for tests of what
// a dying engine core tells its frontends.
func (b *Backend) FailAfter(n int) {
	b.failAfter = 0
	if n > 0 {
		b.failAfter = b.numForward + n
	}
}

// New returns a null backend that reports info as its model and generates
// script. Every id of script must be below info.VocabSize.
func New(info runner.ModelInfo, script []int32) (*Backend, error) {
	return NewPaced(info, script, 0)
}

// NewPaced is New with every forward pass taking stepTime (it sleeps out
// the rest), so the engine produces tokens at a device's pace: a step of
// S sequences yields S tokens per stepTime.
func NewPaced(info runner.ModelInfo, script []int32, stepTime time.Duration) (*Backend, error) {
	if stepTime < 0 {
		return nil, fmt.Errorf("null: negative step time %s", stepTime)
	}
	if len(script) == 0 {
		return nil, errors.New("null: empty script")
	}
	for _, id := range script {
		if id < 0 || int(id) >= info.VocabSize {
			return nil, fmt.Errorf("null: script token %d outside the vocabulary of %d", id, info.VocabSize)
		}
	}
	return &Backend{info: info, script: slices.Clone(script), stepTime: stepTime}, nil
}

// Model returns the model info New was given.
func (b *Backend) Model() runner.ModelInfo { return b.info }

// AllocateKV records the pool size; there is no memory behind it.
func (b *Backend) AllocateKV(numBlocks, blockSize int) error {
	if numBlocks < 1 || blockSize < 1 {
		return fmt.Errorf("null: %d blocks of %d tokens", numBlocks, blockSize)
	}
	b.numBlocks = numBlocks
	return nil
}

// KVBytesPerBlock is a nominal size (kvBytesPerToken per token).
func (b *Backend) KVBytesPerBlock(blockSize int) int64 {
	return int64(blockSize) * kvBytesPerToken
}

// Forward writes, for each sequence that wants logits, a row that is 0
// everywhere but Margin at its next scripted token. It reads no token ids
// and writes no KV. A paced backend then waits out the step time (or
// until ctx ends).
func (b *Backend) Forward(ctx context.Context, step *runner.Step, logits []float32) error {
	if b.numBlocks == 0 {
		return errors.New("null: Forward before AllocateKV")
	}
	if b.stepTime > 0 {
		t := time.NewTimer(b.stepTime)
		defer func() {
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}()
	}
	if b.failAfter > 0 && b.numForward >= b.failAfter {
		return ErrInjected
	}
	b.numForward++
	v, row := b.info.VocabSize, 0
	for _, s := range step.Seqs {
		first, n := s.LogitRows()
		for t := first; t < first+n; t++ {
			out := logits[row*v : (row+1)*v]
			clear(out)
			// Token t sits at position ContextLen-(first+n-t); the row
			// predicts the one after it.
			out[b.Next(s.ContextLen-(first+n-t)+1-s.PromptLen)] = Margin
			row++
		}
	}
	return nil
}

// Next is the token generated after numGenerated tokens (a negative count,
// as for a prompt of unknown length, counts from the script's start).
func (b *Backend) Next(numGenerated int) int32 {
	return b.script[max(numGenerated, 0)%len(b.script)]
}

// NumForward is how many forward passes the backend was asked for.
func (b *Backend) NumForward() int { return b.numForward }

// Close does nothing: the backend holds nothing.
func (b *Backend) Close() error { return nil }

// NewScript spells text in a vocabulary given as each id's piece: byte c
// is the id whose piece is exactly c (a space may also be SentencePiece's
// "▁" or byte-level BPE's "Ġ"). Bytes with no such piece are skipped.
// When no byte is found (or pieces is nil), the script is every id below
// vocabSize that is not in eos, so generation never ends early.
func NewScript(pieces [][]byte, vocabSize int, text string, eos []int32) []int32 {
	byPiece := make(map[string]int32, len(pieces))
	for id, p := range pieces {
		if _, dup := byPiece[string(p)]; !dup && len(p) > 0 && id < vocabSize && !slices.Contains(eos, int32(id)) {
			byPiece[string(p)] = int32(id)
		}
	}
	var script []int32
	for i := range len(text) {
		c := text[i : i+1]
		alts := []string{c}
		if c == " " {
			alts = append(alts, "▁", "Ġ")
		}
		for _, a := range alts {
			if id, ok := byPiece[a]; ok {
				script = append(script, id)
				break
			}
		}
	}
	if len(script) > 0 {
		return script
	}
	for id := range int32(vocabSize) {
		if !slices.Contains(eos, id) {
			script = append(script, id)
		}
	}
	return script
}
