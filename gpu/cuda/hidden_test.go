//go:build cuda

package cuda

import (
	"context"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// TestHiddenRowsMatchCPU runs one step with embeddings beside logits
// through the CUDA and CPU backends: a prompt with a hidden row per token
// (MEAN pooling), one with its last hidden row and its last logits row
// (LAST, next to a generation's), and one with logits only. Every hidden
// row must be the CPU's final-norm state (to bf16's precision), in
// order, and the logits still the CPU's: the residual add the final norm
// fuses must happen once whichever rows ask.
func TestHiddenRowsMatchCPU(t *testing.T) {
	cfg, w, ref := rowsModel(t, 11)
	const blockSize = 16
	var st runner.Step
	for i, q := range []struct {
		n      int
		logits bool
		hidden runner.HiddenRows
	}{{7, false, runner.HiddenAll}, {5, true, runner.HiddenLast}, {4, true, runner.HiddenNone}} {
		st.Seqs = append(st.Seqs, runner.Seq{Start: len(st.TokenIDs), Len: q.n, ContextLen: q.n, BlockTable: []int32{int32(i)},
			Logits: q.logits, Hidden: q.hidden, PromptLen: q.n})
		for p := range q.n {
			st.TokenIDs = append(st.TokenIDs, int32((p*37+i*13+3)%cfg.VocabSize))
			st.Positions = append(st.Positions, int32(p))
			st.SlotMapping = append(st.SlotMapping, int32(i*blockSize+p))
		}
	}
	const numRows, numHidden = 2, 7 + 1
	forward := func(t *testing.T, be runner.Backend) (logits, hidden []float32) {
		t.Helper()
		if err := be.AllocateKV(4, blockSize); err != nil {
			t.Fatal(err)
		}
		if d := be.Model().Dim; d != cfg.Dim {
			t.Fatalf("Model().Dim %d, want %d", d, cfg.Dim)
		}
		logits = make([]float32, numRows*cfg.VocabSize)
		s := st
		s.Hidden = make([]float32, numHidden*cfg.Dim)
		if err := be.Forward(context.Background(), &s, logits); err != nil {
			t.Fatal(err)
		}
		return logits, s.Hidden
	}
	wantLogits, wantHidden := forward(t, ref)
	for _, dev := range testDeviceNames() {
		t.Run(dev, func(t *testing.T) {
			logits, hidden := forward(t, openBackend(t, dev, cfg, w))
			d, v := cfg.Dim, cfg.VocabSize
			for r := range numHidden {
				if e := relErr(f64s(hidden[r*d:(r+1)*d]), f64s(wantHidden[r*d:(r+1)*d])); e > 2e-2 {
					t.Errorf("hidden row %d: relative error %.3g > 2e-2", r, e)
				}
			}
			for r := range numRows {
				if e := relErr(f64s(logits[r*v:(r+1)*v]), f64s(wantLogits[r*v:(r+1)*v])); e > 3e-2 {
					t.Errorf("logits row %d: relative error %.3g > 3e-2", r, e)
				}
			}
		})
	}
}
