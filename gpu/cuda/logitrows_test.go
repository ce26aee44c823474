//go:build cuda

package cuda

import (
	"context"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// TestLogitRowsMatchCPU runs one mixed step, as prompt logprobs schedule
// it, through the CUDA and CPU backends: a prompt with a row per token
// (AllLogits), a prompt with its last row only, and a chunk with none.
// Every row must be the CPU's, in the same order (runner.Seq.LogitRows).
func TestLogitRowsMatchCPU(t *testing.T) {
	cfg, w, ref := rowsModel(t, 7)
	const blockSize = 16
	var st runner.Step
	for i, q := range []struct {
		n            int
		logits, all  bool
		wantRowCount int
	}{{9, true, true, 9}, {6, true, false, 1}, {5, false, false, 0}} {
		st.Seqs = append(st.Seqs, runner.Seq{Start: len(st.TokenIDs), Len: q.n, ContextLen: q.n, BlockTable: []int32{int32(i)},
			Logits: q.logits, AllLogits: q.all, PromptLen: q.n})
		if _, n := st.Seqs[i].LogitRows(); n != q.wantRowCount {
			t.Fatalf("seq %d: %d logits rows, want %d", i, n, q.wantRowCount)
		}
		for p := range q.n {
			st.TokenIDs = append(st.TokenIDs, int32((p*31+i*17+5)%cfg.VocabSize))
			st.Positions = append(st.Positions, int32(p))
			st.SlotMapping = append(st.SlotMapping, int32(i*blockSize+p))
		}
	}
	const numRows = 9 + 1
	forward := func(t *testing.T, be runner.Backend) []float32 {
		t.Helper()
		if err := be.AllocateKV(4, blockSize); err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, numRows*cfg.VocabSize)
		if err := be.Forward(context.Background(), &st, logits); err != nil {
			t.Fatal(err)
		}
		return logits
	}
	want := forward(t, ref)
	for _, dev := range testDeviceNames() {
		t.Run(dev, func(t *testing.T) {
			got := forward(t, openBackend(t, dev, cfg, w))
			v := cfg.VocabSize
			for r := range numRows {
				if e := relErr(f64s(got[r*v:(r+1)*v]), f64s(want[r*v:(r+1)*v])); e > 3e-2 {
					t.Errorf("row %d: logits relative error %.3g > 3e-2", r, e)
				}
			}
		})
	}
}
