package cpu

import (
	"fmt"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Precision says which tokens the quantized matmuls see at 15 bits rather
// than 8. Every quantized matmul quantizes its input activations to int8
// blocks of 32, like llama.cpp; that error adds up over the layers and, on
// a near-tie, changes the greedy token (SmolLM2-135M Q4_1 answers "What is
// the capital of France?" with "L'Étoile…" at int8 and "The capital of
// France is Paris." at float64). A precise token adds a residual int8 row
// (x − d·q, see kernels.Activations.ResetPrecise), which brings its logits
// to within about 1e-3 of the float64 product, for twice the integer work.
type Precision int

const (
	// PrecisionPrompt (the default) computes prompt tokens precisely and
	// generated tokens at int8: the prompt's KV cache and the first
	// token's distribution are as the model means them, prefill is compute
	// bound and has the headroom, and decode keeps int8 speed.
	PrecisionPrompt Precision = iota
	// PrecisionFast computes every token at int8, as llama.cpp does.
	PrecisionFast
	// PrecisionHigh computes every token precisely (single-stream decode
	// about 1.4× slower, batched 1.7×).
	PrecisionHigh
)

// Precisions lists the names ParsePrecision accepts, default first.
var Precisions = []string{"prompt", "fast", "high"}

func (p Precision) String() string {
	if p < 0 || int(p) >= len(Precisions) {
		return fmt.Sprintf("Precision(%d)", int(p))
	}
	return Precisions[p]
}

// ParsePrecision parses a --cpu-precision value.
func ParsePrecision(s string) (Precision, error) {
	for i, name := range Precisions {
		if s == name {
			return Precision(i), nil
		}
	}
	return 0, fmt.Errorf("cpu: unknown precision %q (want one of %s)", s, strings.Join(Precisions, ", "))
}

// Set parses s into p, so that a Precision is a flag.Value.
func (p *Precision) Set(s string) error {
	v, err := ParsePrecision(s)
	if err == nil {
		*p = v
	}
	return err
}

// SetPrecision picks which tokens later Forward calls compute precisely.
func (b *Backend) SetPrecision(p Precision) { b.precision = p }

// markPrecise sets b.precise to which of the step's tokens are precise
// ([T]) and b.rowPrecise to the same for its logits rows ([numRows]).
// check must have filled tokSeq.
func (b *Backend) markPrecise(step *runner.Step) {
	b.precise = b.tokPrecise[:len(step.TokenIDs)]
	for t := range b.precise {
		b.precise[t] = b.precision == PrecisionHigh ||
			b.precision == PrecisionPrompt && int(step.Positions[t]) < step.Seqs[b.tokSeq[t]].PromptLen
	}
	b.rowPrecise = b.rowPrecise[:0]
	for _, s := range step.Seqs {
		first, n := s.LogitRows()
		b.rowPrecise = append(b.rowPrecise, b.precise[first:first+n]...)
	}
}
