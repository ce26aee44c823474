package cpu

import (
	"fmt"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// BenchmarkLoRA times the SmolLM2-135M shape at 2 threads with and
// without a rank-16 adapter on every attention and MLP matrix (what PEFT
// trains with target_modules all-linear): a decode step of batch 16 at
// context 128 and a 128-token prefill. The adapter's cost is the ratio
// of the tok/s.
func BenchmarkLoRA(b *testing.B) {
	cfg, w := smolLM2()
	const ctxLen = 128
	for _, rank := range []int{0, 16} {
		for _, shape := range []string{"decode/batch=16", "prefill/tokens=128"} {
			b.Run(fmt.Sprintf("%s/rank=%d", shape, rank), func(b *testing.B) {
				h := newHarness(b, cfg, w, 2, 256, 16, 0)
				var uses []lora.Use
				if rank > 0 {
					a := loadAdapter(b, h.be, lora.Spec{Arch: cfg.Arch, Alpha: 32, Rank: rank, Shapes: lora.LayerShapes(cfg), Std: 0.01, Seed: 1})
					uses = []lora.Use{{Adapter: a, Scale: 1}}
				}
				step := &runner.Step{}
				if shape == "prefill/tokens=128" {
					h.add(step, &seqState{}, prompt(ctxLen, 1), true)
				} else {
					seqs := make([]seqState, 16)
					var warm runner.Step
					for i := range seqs {
						h.add(&warm, &seqs[i], prompt(ctxLen, uint64(i)), false)
					}
					h.forward(&warm)
					for i := range seqs {
						h.add(step, &seqs[i], []int32{int32(i)}, true)
					}
				}
				for i := range step.Seqs {
					step.Seqs[i].LoRA = uses
				}
				benchForward(b, h, step)
			})
		}
	}
}
