package model

import (
	"errors"
	"fmt"
)

// ErrShape reports weights whose sizes do not match their Config.
var ErrShape = errors.New("model: weight shape mismatch")

// Config is a Llama-family model's hyper-parameters.
type Config struct {
	Name           string  // served name, e.g. "dummy" or a file base name
	Arch           string  // architecture, e.g. "llama"
	VocabSize      int     // V, tokens
	Dim            int     // model (residual) width
	NumLayers      int     // L
	NumHeads       int     // H, query heads
	NumKVHeads     int     // Hkv, key/value heads; H is a multiple of Hkv
	HeadDim        int     // D, per head; usually Dim/H
	FFNDim         int     // F, hidden width of the SwiGLU MLP
	RopeTheta      float64 // RoPE base
	RopeNeox       bool    // rotate (x[i], x[i+D/2]) (NEOX, Qwen) instead of (x[2i], x[2i+1])
	NormEps        float64 // RMSNorm epsilon
	MaxContextLen  int     // trained context length, tokens
	BOSTokenID     int32   // beginning-of-sequence token
	EOSTokenIDs    []int32 // tokens that end generation
	TiedEmbeddings bool    // Output aliases TokenEmbed
	RopeScaling    RopeScaling
	QKVBias        bool // Q, K and V projections have biases (Qwen2)
	QKNorm         bool // per-head RMSNorm of Q and K before RoPE (Qwen3)
}

// RopeScaling stretches RoPE to longer contexts.
type RopeScaling struct {
	Type           string  // "" (none), "linear" or "llama3"
	Factor         float64 // context extension factor
	LowFreqFactor  float64 // llama3 only
	HighFreqFactor float64 // llama3 only
	OrigContextLen int     // llama3: original_max_position_embeddings
}

// Layer is one transformer block's weights. Shapes use the Config names.
type Layer struct {
	AttnNorm []float32 // [Dim] RMSNorm gain before attention
	Wq       []float32 // [H*D][Dim]
	Wk       []float32 // [Hkv*D][Dim]
	Wv       []float32 // [Hkv*D][Dim]
	Wo       []float32 // [Dim][H*D]
	FFNNorm  []float32 // [Dim] RMSNorm gain before the MLP
	W1       []float32 // [F][Dim] gate
	W3       []float32 // [F][Dim] up
	W2       []float32 // [Dim][F] down
}

// Weights are a model's parameters as flat row-major float32 slices
// (llama2.c's TransformerWeights). Backends read them and never write.
type Weights struct {
	TokenEmbed []float32 // [V][Dim]
	Layers     []Layer   // [L]
	OutNorm    []float32 // [Dim] final RMSNorm gain
	Output     []float32 // [V][Dim] LM head; the same slice as TokenEmbed when tied
}

// Validate checks that cfg is consistent and every tensor of w has the
// size cfg implies. The error wraps ErrShape and names the tensor.
func (w *Weights) Validate(cfg Config) error {
	switch {
	case cfg.VocabSize <= 0, cfg.Dim <= 0, cfg.NumLayers <= 0, cfg.NumHeads <= 0,
		cfg.NumKVHeads <= 0, cfg.HeadDim <= 0, cfg.FFNDim <= 0:
		return fmt.Errorf("%w: non-positive dimension in %+v", ErrShape, cfg)
	case cfg.NumHeads%cfg.NumKVHeads != 0:
		return fmt.Errorf("%w: %d heads not a multiple of %d KV heads", ErrShape, cfg.NumHeads, cfg.NumKVHeads)
	case cfg.HeadDim%2 != 0:
		return fmt.Errorf("%w: odd head dim %d", ErrShape, cfg.HeadDim)
	case len(w.Layers) != cfg.NumLayers:
		return fmt.Errorf("%w: %d layers, config says %d", ErrShape, len(w.Layers), cfg.NumLayers)
	}
	v, d, f := cfg.VocabSize, cfg.Dim, cfg.FFNDim
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	check := func(name string, got []float32, want int) error {
		if len(got) != want {
			return fmt.Errorf("%w: %s has %d elements, want %d", ErrShape, name, len(got), want)
		}
		return nil
	}
	errs := []error{
		check("token_embd", w.TokenEmbed, v*d),
		check("output_norm", w.OutNorm, d),
		check("output", w.Output, v*d),
	}
	for i, l := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		errs = append(errs,
			check(p+"attn_norm", l.AttnNorm, d),
			check(p+"attn_q", l.Wq, qd*d),
			check(p+"attn_k", l.Wk, kvd*d),
			check(p+"attn_v", l.Wv, kvd*d),
			check(p+"attn_output", l.Wo, d*qd),
			check(p+"ffn_norm", l.FFNNorm, d),
			check(p+"ffn_gate", l.W1, f*d),
			check(p+"ffn_up", l.W3, f*d),
			check(p+"ffn_down", l.W2, d*f),
		)
	}
	return errors.Join(errs...)
}
