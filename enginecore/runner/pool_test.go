package runner

import (
	"context"
	"math"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire"
)

// hiddenModel is a backend whose hidden state at position p after token
// id is h(p, id) = [p+1, id, 1, -(p+1)·id] ([Dim=4]): the pooled vectors
// have closed forms.
type hiddenModel struct {
	vocab int
	cls   *model.Classifier // nil: no head
}

// testHead is a classification head with every part (dense + tanh,
// biases) over [Dim=4] hidden states, 2 classes.
var testHead = &model.Classifier{NumClasses: 2,
	Dense:     []float32{0.1, -0.2, 0.3, 0.01, 0, 0.5, -0.1, 0.02, 0.2, 0.2, 0.2, -0.03, -0.4, 0, 0.1, 0.01},
	DenseBias: []float32{0.1, 0, -0.1, 0.2},
	Out:       []float32{1, -1, 0.5, 2, -0.5, 0.25, 1, 0},
	OutBias:   []float32{0.3, -0.3},
}

const hiddenDim = 4

func h(p int, id int32) [hiddenDim]float64 {
	return [hiddenDim]float64{float64(p + 1), float64(id), 1, -float64(p+1) * float64(id)}
}

func (m *hiddenModel) Model() ModelInfo {
	return ModelInfo{VocabSize: m.vocab, Dim: hiddenDim, EOSTokenIDs: []int32{2}, Classifier: m.cls}
}
func (m *hiddenModel) AllocateKV(int, int) error           { return nil }
func (m *hiddenModel) KVBytesPerBlock(blockSize int) int64 { return 0 }
func (m *hiddenModel) Close() error                        { return nil }

func (m *hiddenModel) Forward(_ context.Context, st *Step, logits []float32) error {
	sh, err := st.Validate(Limits{VocabSize: m.vocab, NumBlocks: 64, BlockSize: 4, Dim: hiddenDim}, len(logits))
	if err != nil {
		return err
	}
	clear(logits[:sh.NumRows*m.vocab])
	r := 0
	for _, s := range st.Seqs {
		first, n := s.HiddenRowsOf()
		for t := first; t < first+n; t++ {
			v := h(int(st.Positions[t]), st.TokenIDs[t])
			for d := range hiddenDim {
				st.Hidden[r*hiddenDim+d] = float32(v[d])
			}
			r++
		}
	}
	return nil
}

// poolWant is pooling's closed form over prompt: the last position's h,
// the mean of every position's, or the first's; then the first dims,
// normalized.
func poolWant(prompt []int32, p wire.PoolingParams) []float32 {
	if p.PoolingType == wire.PoolingNone { // every row, each finished alone
		var out []float32
		for i, id := range prompt {
			x := h(i, id)
			row := make([]float32, hiddenDim)
			for d := range row {
				row[d] = float32(x[d])
			}
			out = append(out, finishPooled(row, &p)...)
		}
		return out
	}
	var v [hiddenDim]float64
	switch p.PoolingType {
	case wire.PoolingRank: // the head over the last row, as float32 gets it
		x := h(len(prompt)-1, prompt[len(prompt)-1])
		row := make([]float32, hiddenDim)
		for d := range row {
			row[d] = float32(x[d])
		}
		return testHead.Apply(row)
	case wire.PoolingLast:
		v = h(len(prompt)-1, prompt[len(prompt)-1])
	case wire.PoolingCLS:
		v = h(0, prompt[0])
	case wire.PoolingMean:
		for i, id := range prompt {
			x := h(i, id)
			for d := range v {
				v[d] += x[d] / float64(len(prompt))
			}
		}
	}
	out := make([]float32, hiddenDim)
	for d := range out {
		out[d] = float32(v[d])
	}
	return finishPooled(out, &p)
}

// TestPoolingOverChunks computes embeddings of a 10-token prompt in
// chunks of every size, alone and next to a generation, with a chunk
// computed again (a preemption's recompute) for MEAN and CLS: the
// embedding comes only with the last chunk and equals the closed form.
func TestPoolingOverChunks(t *testing.T) {
	prompt := []int32{5, 9, 3, 7, 11, 4, 8, 6, 10, 12}
	table := []int32{0, 1, 2}
	params := []wire.PoolingParams{
		{PoolingType: wire.PoolingLast, Normalize: true},
		{PoolingType: wire.PoolingLast},
		{PoolingType: wire.PoolingMean, Normalize: true},
		{PoolingType: wire.PoolingMean, Dimensions: 2},
		{PoolingType: wire.PoolingCLS, Normalize: true, Dimensions: 3},
		{PoolingType: wire.PoolingNone},
		{PoolingType: wire.PoolingNone, Normalize: true, Dimensions: 2},
		{PoolingType: wire.PoolingRank},
	}
	for _, p := range params {
		for chunk := 1; chunk <= len(prompt); chunk++ {
			for _, replay := range []bool{false, true} {
				r := New(&hiddenModel{vocab: 16, cls: testHead}, 4)
				var got []float32
				for start := 0; start < len(prompt); {
					n := min(chunk, len(prompt)-start)
					items := []batch.Item{{RequestID: "e", Tokens: prompt, NumPrompt: len(prompt), Start: start, Len: n,
						BlockTable: table, Sample: start+n == len(prompt), Params: greedy(), Pooling: &p}}
					gen := batch.Item{RequestID: "g", Tokens: []int32{1, 2, 3}, NumPrompt: 3, Len: 3, BlockTable: table[:1],
						Sample: true, Params: greedy()}
					items = append([]batch.Item{gen}, items...)
					res, err := r.Execute(context.Background(), &batch.Batch{Items: items})
					if err != nil {
						t.Fatal(err)
					}
					if res.Pooled != nil && res.Pooled[0] != nil {
						t.Fatalf("%+v: the generation got an embedding", p)
					}
					switch {
					case start+n < len(prompt) && res.Pooled != nil && res.Pooled[1] != nil:
						t.Fatalf("%+v chunk %d: an embedding before the prompt's end", p, chunk)
					case start+n == len(prompt):
						if res.Pooled == nil || res.Pooled[1] == nil {
							t.Fatalf("%+v chunk %d: no embedding at the prompt's end", p, chunk)
						}
						got = res.Pooled[1]
					}
					if replay && start == 0 && n < len(prompt) { // recompute the first chunk once
						replay = false
						continue
					}
					start += n
				}
				want := poolWant(prompt, p)
				if len(got) != len(want) {
					t.Fatalf("%+v chunk %d: %d values, want %d", p, chunk, len(got), len(want))
				}
				for d := range want {
					if math.Abs(float64(got[d]-want[d])) > 1e-5 {
						t.Fatalf("%+v chunk %d replay %v: got %v, want %v", p, chunk, replay, got, want)
					}
				}
				r.Forget("e")
				if len(r.pools) != 0 {
					t.Fatalf("Forget left %d pools", len(r.pools))
				}
			}
		}
	}
}

// TestValidateHiddenRows: a backend that computes no hidden states (Dim
// 0) refuses a step asking for them, and one that does needs room for
// every row.
func TestValidateHiddenRows(t *testing.T) {
	st := Step{TokenIDs: []int32{1, 2, 3}, Positions: []int32{0, 1, 2}, SlotMapping: []int32{0, 1, 2},
		Seqs: []Seq{{Start: 0, Len: 2, ContextLen: 2, BlockTable: []int32{0}, Hidden: HiddenAll},
			{Start: 2, Len: 1, ContextLen: 1, BlockTable: []int32{0}, Hidden: HiddenLast}}}
	st.SlotMapping[2] = 0
	st.Positions[2] = 0
	l := Limits{VocabSize: 8, NumBlocks: 4, BlockSize: 4}
	if _, err := st.Validate(l, 0); err == nil {
		t.Fatal("Dim 0: no error")
	}
	l.Dim = 2
	st.Hidden = make([]float32, 5)
	if _, err := st.Validate(l, 0); err == nil {
		t.Fatal("5 values for 3 rows of 2: no error")
	}
	st.Hidden = make([]float32, 6)
	sh, err := st.Validate(l, 0)
	if err != nil || sh.NumHidden != 3 {
		t.Fatalf("NumHidden %d, err %v; want 3 rows", sh.NumHidden, err)
	}
}
