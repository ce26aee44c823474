package model

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// Token ids of the dummy model's vocabulary (see the package doc).
const (
	DummyVocabSize     = 320 // V
	DummyBOS           = 256 // <|begin_of_text|>
	DummyEOS           = 257 // <|end_of_text|>
	DummyIMStart       = 258 // <|im_start|>
	DummyIMEnd         = 259 // <|im_end|>, also an EOS id
	DummyFirstReserved = 260 // <|reserved_0|>; ids up to V-1 are reserved

	// DummySeed seeds the PCG generator that draws the dummy weights.
	DummySeed = 0x7a6e_6465_6d21 // "tandem!"-ish; changing it changes every golden output
)

// DefaultDummyContextLen is the dummy model's context length when Dummy is
// given a non-positive one.
const DefaultDummyContextLen = 4096

// Dummy returns the dummy model (shape and weights in the package doc) with
// the given context length (DefaultDummyContextLen when ≤ 0). The weights
// are the same on every call.
func Dummy(maxContextLen int) (Config, *Weights) {
	if maxContextLen <= 0 {
		maxContextLen = DefaultDummyContextLen
	}
	cfg := Config{
		Name:          "dummy",
		Arch:          "llama",
		VocabSize:     DummyVocabSize,
		Dim:           128,
		NumLayers:     4,
		NumHeads:      4,
		NumKVHeads:    2,
		HeadDim:       32,
		FFNDim:        384,
		RopeTheta:     10000,
		NormEps:       1e-5,
		MaxContextLen: maxContextLen,
		BOSTokenID:    DummyBOS,
		EOSTokenIDs:   []int32{DummyEOS, DummyIMEnd},
	}
	rng := rand.New(rand.NewPCG(DummySeed, 0))
	d, f := cfg.Dim, cfg.FFNDim
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	// normal draws n values with the given mean and std.
	normal := func(n int, mean, std float64) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(mean + std*rng.NormFloat64())
		}
		return s
	}
	// matrix draws [out][in] with std 1/sqrt(in).
	matrix := func(out, in int) []float32 { return normal(out*in, 0, 1/math.Sqrt(float64(in))) }
	w := &Weights{TokenEmbed: normal(cfg.VocabSize*d, 0, 1)}
	for range cfg.NumLayers {
		var l Layer
		l.AttnNorm = normal(d, 1, 0.02)
		l.Wq = matrix(qd, d)
		l.Wk = matrix(kvd, d)
		l.Wv = matrix(kvd, d)
		l.Wo = matrix(d, qd)
		l.FFNNorm = normal(d, 1, 0.02)
		l.W1 = matrix(f, d)
		l.W3 = matrix(f, d)
		l.W2 = matrix(d, f)
		w.Layers = append(w.Layers, l)
	}
	w.OutNorm = normal(d, 1, 0.02)
	w.Output = normal(cfg.VocabSize*d, 0, 4/math.Sqrt(float64(d)))
	return cfg, w
}

// DummyTokenName is the text of a dummy-model token: the single byte for
// ids 0..255 (as a possibly invalid UTF-8 string), the special token's name
// for 256..319, and "" for ids outside the vocabulary.
func DummyTokenName(id int32) string {
	switch {
	case id < 0 || id >= DummyVocabSize:
		return ""
	case id < 256:
		return string([]byte{byte(id)})
	case id == DummyBOS:
		return "<|begin_of_text|>"
	case id == DummyEOS:
		return "<|end_of_text|>"
	case id == DummyIMStart:
		return "<|im_start|>"
	case id == DummyIMEnd:
		return "<|im_end|>"
	default:
		return "<|reserved_" + strconv.Itoa(int(id-DummyFirstReserved)) + "|>"
	}
}
