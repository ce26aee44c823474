package conformance

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// agreement accumulates the comparison of our logits with the oracle's
// over many positions.
type agreement struct {
	positions  int       // positions compared
	pairs      int       // (position, id) log-probs compared
	nearTies   int       // top-1 differs, within the oracle's tie margin
	widestTie  float64   // widest oracle margin (nats) of those near-ties
	mismatches []string  // top-1 differs beyond it, described
	maxDelta   float64   // max |Δ log-softmax|, nats
	worst      string    // where maxDelta was seen
	maxTop     float64   // max |Δ log-softmax| over the oracle's top ids only, nats
	deltas     []float64 // [positions] max |Δ log-softmax| at each position, nats
}

// logSoftmax is log(softmax(logits)) in float64.
func logSoftmax(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, x := range logits {
		m = max(m, float64(x))
	}
	var sum float64
	for _, x := range logits {
		sum += math.Exp(float64(x) - m)
	}
	lse := m + math.Log(sum)
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - lse
	}
	return out
}

// add compares our logits at positions first, first+1, … of one prompt
// ([pos][V]) with the oracle's answer for them. Top-1 must agree unless, in the
// oracle's distribution, our pick is within tieMargin nats of its best;
// Δ log-softmax is taken over the oracle's top ids and the probe ids.
func (a *agreement) add(label string, first int, ours [][]float32, oracle []oraclePos, probe []int32, tieMargin float64) {
	for i, o := range oracle {
		lsm := logSoftmax(ours[i])
		want := make(map[int32]float64, len(o.TopIDs)+len(probe)) // id → oracle log-prob
		for j, id := range o.TopIDs {
			if lp := o.TopLogps[j]; lp != nil {
				want[id] = *lp
			}
		}
		for j, id := range probe {
			if lp := o.Probe[j]; lp != nil {
				want[id] = *lp
			}
		}
		for _, id := range o.TopIDs {
			if lp, ok := want[id]; ok {
				if d := math.Abs(lsm[id] - lp); d > a.maxTop || math.IsNaN(d) {
					a.maxTop = d
				}
			}
		}
		posDelta := 0.0
		for id, lp := range want {
			d := math.Abs(lsm[id] - lp)
			if d > a.maxDelta || math.IsNaN(d) {
				a.maxDelta = d
				a.worst = fmt.Sprintf("%s position %d token %d: ours %.6f, llama.cpp %.6f", label, first+i, id, lsm[id], lp)
			}
			if d > posDelta || math.IsNaN(d) {
				posDelta = d
			}
		}
		a.deltas = append(a.deltas, posDelta)
		a.pairs += len(want)
		a.positions++

		top := int32(argmax(ours[i]))
		if top == o.Argmax {
			continue
		}
		best := want[o.Argmax]
		if lp, ok := want[top]; ok && best-lp <= tieMargin {
			a.nearTies++
			a.widestTie = max(a.widestTie, best-lp)
			continue
		}
		a.mismatches = append(a.mismatches, fmt.Sprintf("%s position %d: top-1 ours %d (%.4f), llama.cpp %d (%.4f)",
			label, first+i, top, lsm[top], o.Argmax, best))
	}
}

func ptr(v float64) *float64 { return &v }

// TestAgreement checks the comparison itself on synthetic distributions.
func TestAgreement(t *testing.T) {
	// oracle: logits (3, 1, 0, -2) → log-softmax
	base := []float32{3, 1, 0, -2}
	lsm := logSoftmax(base)
	oracle := oraclePos{Argmax: 0, TopIDs: []int32{0, 1}, TopLogps: []*float64{ptr(lsm[0]), ptr(lsm[1])},
		Probe: []*float64{ptr(lsm[2]), ptr(lsm[3])}}
	tieOracle := oraclePos{Argmax: 0, TopIDs: []int32{0, 1}, TopLogps: []*float64{ptr(lsm[0]), ptr(lsm[0] - 0.01)},
		Probe: []*float64{ptr(lsm[2]), nil}}
	probe := []int32{2, 3}
	type result struct{ Pairs, NearTies, Mismatches int }
	tests := []struct {
		name     string
		ours     []float32
		oracle   oraclePos
		want     result
		minDelta float64 // max |Δ| must reach this; 0: must be 0
	}{
		{"identical", base, oracle, result{Pairs: 4}, 0},
		{"shifted logits are the same distribution", []float32{13, 11, 10, 8}, oracle, result{Pairs: 4}, 0},
		{"one probe off by 0.5", []float32{3, 1, 0, -2.5}, oracle, result{Pairs: 4}, 0.4},
		{"top-1 swapped", []float32{1, 3, 0, -2}, oracle, result{Pairs: 4, Mismatches: 1}, 1.9},
		{"near tie may flip", []float32{1, 1.005, -10, -10}, tieOracle, result{Pairs: 3, NearTies: 1}, 1},
		{"underflowed probe is skipped", []float32{1, 0.99, -10, 50}, tieOracle, result{Pairs: 3, Mismatches: 1}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a agreement
			a.add("test", 0, [][]float32{tt.ours}, []oraclePos{tt.oracle}, probe, 0.05)
			got := result{Pairs: a.pairs, NearTies: a.nearTies, Mismatches: len(a.mismatches)}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if tt.minDelta == 0 && a.maxDelta > 1e-12 || a.maxDelta < tt.minDelta {
				t.Errorf("max Δ = %g, want %s %g (%s)", a.maxDelta, map[bool]string{true: "0 ≈", false: "≥"}[tt.minDelta == 0], tt.minDelta, a.worst)
			}
		})
	}
}
