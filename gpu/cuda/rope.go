//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ropeFreqs is model.RopeFrequencies with this backend's error.
func ropeFreqs(cfg model.Config, factors []float32) ([]float64, error) {
	freq, err := model.RopeFrequencies(cfg, factors)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return freq, nil
}

// ropeTable is [numPos][D] float32: for position p, cos(p·θ_i) for the D/2
// frequencies, then sin(p·θ_i), computed in float64 and rounded like the
// CPU backend's per-token values.
func ropeTable(freq []float64, numPos int) []float32 {
	half := len(freq)
	t := make([]float32, numPos*2*half)
	for p := range numPos {
		row := t[p*2*half : (p+1)*2*half]
		for i, f := range freq {
			s, c := math.Sincos(float64(p) * f)
			row[i], row[half+i] = float32(c), float32(s)
		}
	}
	return t
}
