package cpu

import (
	"errors"
	"fmt"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ErrUnsupported reports a model feature the CPU backend does not
// implement.
var ErrUnsupported = errors.New("cpu: unsupported model")

// ropeFreqs is model.RopeFrequencies with this backend's error.
func ropeFreqs(cfg model.Config, factors []float32) ([]float64, error) {
	freq, err := model.RopeFrequencies(cfg, factors)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return freq, nil
}
