package cpu

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestRoute checks the routing of tokens to experts: the K most probable,
// ties to the lower index, weights the softmax probabilities,
// renormalized or not, each expert's tokens in token order.
func TestRoute(t *testing.T) {
	ln := func(ps ...float64) []float32 { // logits whose softmax is ps (which sum to 1)
		out := make([]float32, len(ps))
		for i, p := range ps {
			out[i] = float32(math.Log(p))
		}
		return out
	}
	tests := []struct {
		name        string
		k           int
		norm        bool
		logits      [][]float32 // [T][E]
		bias        []float32   // [E] selection bias
		wantRows    [][]int32   // [E]
		wantWeights [][]float32 // [E]
	}{
		{"top 1", 1, false, [][]float32{ln(0.1, 0.6, 0.3)}, nil,
			[][]int32{{}, {0}, {}}, [][]float32{{}, {0.6}, {}}},
		{"top 2 renormalized", 2, true, [][]float32{ln(0.1, 0.6, 0.3)}, nil,
			[][]int32{{}, {0}, {0}}, [][]float32{{}, {2.0 / 3}, {1.0 / 3}}},
		{"top 2 not renormalized", 2, false, [][]float32{ln(0.1, 0.6, 0.3)}, nil,
			[][]int32{{}, {0}, {0}}, [][]float32{{}, {0.6}, {0.3}}},
		{"a tie goes to the lower index", 1, true, [][]float32{{2, 5, 5}}, nil,
			[][]int32{{}, {0}, {}}, [][]float32{{}, {1}, {}}},
		{"every expert", 3, true, [][]float32{ln(0.2, 0.5, 0.3)}, nil,
			[][]int32{{0}, {0}, {0}}, [][]float32{{0.2}, {0.5}, {0.3}}},
		{"shift invariant", 2, false, [][]float32{{1000, 1001, 999}}, nil,
			[][]int32{{0}, {0}, {}}, [][]float32{{0.24472848}, {0.66524094}, {}}},
		{"a selection bias chooses, the probabilities weigh", 2, false, [][]float32{ln(0.5, 0.3, 0.2)}, []float32{0, -0.2, 0.15},
			[][]int32{{0}, {}, {0}}, [][]float32{{0.5}, {}, {0.2}}},
		{"selection bias, renormalized", 1, true, [][]float32{ln(0.5, 0.3, 0.2)}, []float32{0, 0.25, 0},
			[][]int32{{}, {0}, {}}, [][]float32{{}, {1}, {}}},
		{"tokens in order", 1, true, [][]float32{ln(0.7, 0.2, 0.1), ln(0.1, 0.1, 0.8), ln(0.5, 0.4, 0.1)}, nil,
			[][]int32{{0, 2}, {}, {1}}, [][]float32{{1, 1}, {}, {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := len(tt.logits[0])
			c := model.Config{NumExperts: e, NumExpertsUsed: tt.k, ExpertWeightsNorm: tt.norm}
			r := routes{rows: make([][]int32, e), weights: make([][]float32, e), top: make([]int, tt.k), sel: make([]float32, e)}
			var logits []float32
			for _, l := range tt.logits {
				logits = append(logits, l...)
			}
			r.route(&c, logits, len(tt.logits), tt.bias)
			if diff := cmp.Diff(tt.wantRows, r.rows, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWeights, r.weights, cmpopts.EquateEmpty(), cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("weights (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRouteReusesScratch routes two steps with the same routes: the
// second's rows are its own, not appended to the first's.
func TestRouteReusesScratch(t *testing.T) {
	c := model.Config{NumExperts: 2, NumExpertsUsed: 1}
	r := routes{rows: make([][]int32, 2), weights: make([][]float32, 2), top: make([]int, 1), sel: make([]float32, 2)}
	r.route(&c, []float32{1, 0, 1, 0}, 2, nil)
	r.route(&c, []float32{0, 1}, 1, nil)
	if diff := cmp.Diff([][]int32{{}, {0}}, r.rows, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rows after the second step (-want +got):\n%s", diff)
	}
}
