package model

import (
	"math"
	"testing"
)

// TestClassifierApply checks the head's logits against hand-worked
// values: the projection alone, with its bias, and after a dense layer
// with tanh.
func TestClassifierApply(t *testing.T) {
	h := []float32{1, -2, 0.5}
	for _, tc := range []struct {
		name string
		c    Classifier
		want []float64
	}{
		{"projection", Classifier{NumClasses: 2, Out: []float32{1, 0, 0, 0, 1, 2}}, []float64{1, -1}},
		{"projection and bias", Classifier{NumClasses: 1, Out: []float32{2, 1, 4}, OutBias: []float32{-0.5}}, []float64{1.5}},
		{"dense, tanh, projection", Classifier{NumClasses: 1,
			Dense: []float32{1, 0, 0, 0, 1, 0, 0, 0, 0}, DenseBias: []float32{0, 1, 3},
			Out: []float32{1, 1, 1}}, []float64{math.Tanh(1) + math.Tanh(-1) + math.Tanh(3)}},
	} {
		got := tc.c.Apply(h)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d logits, want %d", tc.name, len(got), len(tc.want))
		}
		for k := range got {
			if math.Abs(float64(got[k])-tc.want[k]) > 1e-6 {
				t.Errorf("%s: logit %d = %v, want %v", tc.name, k, got[k], tc.want[k])
			}
		}
	}
}
