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
	// matrix draws [out][in] with the given std as an F32 tensor.
	matrix := func(name string, out, in int, std float64) *Tensor {
		t, err := NewTensor(name, F32, []int{in, out}, normal(out*in, 0, std))
		if err != nil {
			panic(err) // the shapes above are consistent
		}
		return t
	}
	w := &Weights{TokenEmbed: matrix("token_embd.weight", cfg.VocabSize, d, 1)}
	for i := range cfg.NumLayers {
		p := "blk." + strconv.Itoa(i) + "."
		var l Layer
		l.AttnNorm = normal(d, 1, 0.02)
		l.Wq = matrix(p+"attn_q.weight", qd, d, 1/math.Sqrt(float64(d)))
		l.Wk = matrix(p+"attn_k.weight", kvd, d, 1/math.Sqrt(float64(d)))
		l.Wv = matrix(p+"attn_v.weight", kvd, d, 1/math.Sqrt(float64(d)))
		l.Wo = matrix(p+"attn_output.weight", d, qd, 1/math.Sqrt(float64(qd)))
		l.FFNNorm = normal(d, 1, 0.02)
		l.W1 = matrix(p+"ffn_gate.weight", f, d, 1/math.Sqrt(float64(d)))
		l.W3 = matrix(p+"ffn_up.weight", f, d, 1/math.Sqrt(float64(d)))
		l.W2 = matrix(p+"ffn_down.weight", d, f, 1/math.Sqrt(float64(f)))
		w.Layers = append(w.Layers, l)
	}
	w.OutNorm = normal(d, 1, 0.02)
	w.Output = matrix("output.weight", cfg.VocabSize, d, 4/math.Sqrt(float64(d)))
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
