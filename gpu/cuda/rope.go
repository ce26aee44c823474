//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ropeFreqs returns the D/2 RoPE inverse frequencies θ_i = base^(-2i/D),
// divided by the GGUF rope_freqs factors when the file has them, else
// scaled by cfg.RopeScaling ("linear", or Llama 3.1's "llama3" rule). It
// is enginecore/cpu's rule, repeated here because the CPU backend keeps it
// unexported; TestGreedyMatchesCPU catches any drift.
func ropeFreqs(cfg model.Config, factors []float32) ([]float64, error) {
	d := cfg.HeadDim
	freq := make([]float64, d/2)
	for i := range freq {
		freq[i] = math.Pow(cfg.RopeTheta, -float64(2*i)/float64(d))
	}
	if factors != nil {
		for i := range freq {
			freq[i] /= float64(factors[i])
		}
		return freq, nil
	}
	s := cfg.RopeScaling
	switch s.Type {
	case "":
	case "linear":
		if s.Factor <= 0 {
			return nil, fmt.Errorf("%w: linear rope scaling factor %g", ErrUnsupported, s.Factor)
		}
		for i := range freq {
			freq[i] /= s.Factor
		}
	case "llama3":
		if s.Factor <= 0 || s.OrigContextLen <= 0 || s.HighFreqFactor <= s.LowFreqFactor {
			return nil, fmt.Errorf("%w: llama3 rope scaling %+v", ErrUnsupported, s)
		}
		orig := float64(s.OrigContextLen)
		lowWave, highWave := orig/s.LowFreqFactor, orig/s.HighFreqFactor
		for i, f := range freq {
			switch wave := 2 * math.Pi / f; {
			case wave < highWave:
			case wave > lowWave:
				freq[i] = f / s.Factor
			default:
				smooth := (orig/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				freq[i] = (1-smooth)*f/s.Factor + smooth*f
			}
		}
	default:
		return nil, fmt.Errorf("%w: rope scaling type %q", ErrUnsupported, s.Type)
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
