package cpu

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// BenchmarkForward times the dummy model (B = 16, GOMAXPROCS threads):
// one decode step of batch 1 and 16 at context 128, and a 128-token
// prefill. tok/s counts the step's tokens.
func BenchmarkForward(b *testing.B) {
	cfg, w := dummy()
	const ctxLen = 128
	decode := func(batch int) func(*harness) *runner.Step {
		return func(h *harness) *runner.Step {
			seqs := make([]seqState, batch)
			var warm runner.Step
			for i := range seqs {
				h.add(&warm, &seqs[i], prompt(ctxLen, uint64(i)), false)
			}
			h.forward(&warm)
			step := &runner.Step{}
			for i := range seqs {
				h.add(step, &seqs[i], []int32{int32(i)}, true)
			}
			return step // rerun in place: the same slots are rewritten
		}
	}
	prefill := func(h *harness) *runner.Step {
		step := &runner.Step{}
		h.add(step, &seqState{}, prompt(ctxLen, 1), true)
		return step
	}
	tests := []struct {
		name  string
		setup func(*harness) *runner.Step
	}{
		{"decode/batch=1", decode(1)},
		{"decode/batch=16", decode(16)},
		{"prefill/tokens=128", prefill},
	}
	for _, tt := range tests {
		b.Run(fmt.Sprintf("%s/threads=%d", tt.name, runtime.GOMAXPROCS(0)), func(b *testing.B) {
			h := newHarness(b, cfg, w, 0, 256, 16, 0)
			step := tt.setup(h)
			logits := make([]float32, len(step.Seqs)*cfg.VocabSize)
			ctx := context.Background()
			for b.Loop() {
				if err := h.be.Forward(ctx, step, logits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(step.TokenIDs)*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
