package model

import (
	"errors"
	"fmt"
	"math"
)

// ErrRopeScaling reports a RoPE scaling Tandem does not implement.
var ErrRopeScaling = errors.New("model: unsupported rope scaling")

// RopeFrequencies returns the R/2 RoPE inverse frequencies
// θ_i = base^(-2i/R), R = cfg.RotaryDim(), scaled: divided by the GGUF rope_freqs factors when
// the file has them (llama.cpp's freq_factors), else by cfg.RopeScaling —
// "linear" divides every frequency by Factor (positions by Factor),
// "llama3" is Llama 3.1's piecewise rule (transformers'
// _compute_llama3_parameters). Every backend uses this one rule.
func RopeFrequencies(cfg Config, factors []float32) ([]float64, error) {
	d := cfg.RotaryDim()
	freq := make([]float64, d/2)
	for i := range freq {
		freq[i] = math.Pow(cfg.RopeTheta, -float64(2*i)/float64(d))
	}
	s := cfg.RopeScaling
	if factors != nil {
		for i := range freq {
			freq[i] /= float64(factors[i])
		}
		if s.Type != "yarn" {
			return freq, nil
		}
	}
	switch s.Type {
	case "":
	case "linear":
		if s.Factor <= 0 {
			return nil, fmt.Errorf("%w: linear factor %g", ErrRopeScaling, s.Factor)
		}
		for i := range freq {
			freq[i] /= s.Factor
		}
	case "llama3":
		if s.Factor <= 0 || s.OrigContextLen <= 0 || s.HighFreqFactor <= s.LowFreqFactor {
			return nil, fmt.Errorf("%w: llama3 %+v", ErrRopeScaling, s)
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
	case "yarn":
		if !(s.Factor >= 1) || s.OrigContextLen <= 0 {
			return nil, fmt.Errorf("%w: yarn %+v", ErrRopeScaling, s)
		}
		yarn(freq, cfg.RopeTheta, s)
	default:
		return nil, fmt.Errorf("%w: type %q", ErrRopeScaling, s.Type)
	}
	return freq, nil
}

// yarn applies YaRN to freq ([R/2]) as ggml's rope_yarn does with
// ext_factor 1 (and transformers' _compute_yarn_parameters): pair i
// keeps its frequency f above the correction range [low, high] of pair
// indices (those that rotate more than BetaFast times over the original
// context), takes f/Factor below it, and mixes the two linearly in
// between. The attention factor it also implies is Config.RopeMScale's.
func yarn(freq []float64, base float64, s RopeScaling) {
	n := float64(2 * len(freq)) // rotated dims
	betaFast, betaSlow := s.BetaFast, s.BetaSlow
	if betaFast == 0 {
		betaFast = 32
	}
	if betaSlow == 0 {
		betaSlow = 1
	}
	corrDim := func(rotations float64) float64 { // ggml_rope_yarn_corr_dim
		return n * math.Log(float64(s.OrigContextLen)/(rotations*2*math.Pi)) / (2 * math.Log(base))
	}
	low := max(0, math.Floor(corrDim(betaFast)))
	high := min(n-1, math.Ceil(corrDim(betaSlow)))
	for i, f := range freq {
		ramp := 1 - min(1, max(0, (float64(i)-low)/max(0.001, high-low))) // 1: extrapolate (keep f), 0: interpolate
		freq[i] = f/s.Factor*(1-ramp) + f*ramp
	}
}

// LocalRopeFrequencies returns the R/2 inverse frequencies of local
// (sliding-window) layers: base LocalRopeTheta, unscaled (llama.cpp's
// rope_freq_base_train_swa with a freq scale of 1), or nil when local
// layers rotate as the others do (LocalRopeTheta 0).
func LocalRopeFrequencies(cfg Config) []float64 {
	if cfg.LocalRopeTheta <= 0 {
		return nil
	}
	local := cfg
	local.RopeTheta, local.RopeScaling = cfg.LocalRopeTheta, RopeScaling{}
	freq, _ := RopeFrequencies(local, nil) // unscaled: cannot fail
	return freq
}
