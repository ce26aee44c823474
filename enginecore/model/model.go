package model

import (
	"errors"
	"fmt"
	"math"
)

// ErrShape reports weights whose sizes do not match their Config.
var ErrShape = errors.New("model: weight shape mismatch")

// Config is a decoder-only transformer's hyper-parameters: Llama's, and
// the options other families (Qwen, Gemma, SmolLM3, Granite, Phi-3,
// ERNIE, OLMo, and the mixtures of experts Mixtral, Qwen2-MoE,
// Qwen3-MoE, Granite MoE, ERNIE MoE and OLMoE) add to it.
type Config struct {
	Name          string  // served name, e.g. "dummy" or a file base name
	Arch          string  // architecture, e.g. "llama"
	VocabSize     int     // V, tokens
	Dim           int     // model (residual) width
	NumLayers     int     // L
	NumHeads      int     // H, query heads
	NumKVHeads    int     // Hkv, key/value heads; H is a multiple of Hkv
	HeadDim       int     // D, per head; usually Dim/H
	FFNDim        int     // F, hidden width of the SwiGLU MLP
	RopeTheta     float64 // RoPE base
	RopeNeox      bool    // rotate (x[i], x[i+R/2]) (NEOX, Qwen) instead of (x[2i], x[2i+1])
	RopeDim       int     // R, the leading dims of each head RoPE rotates (Phi-4-mini: 96 of 128); 0: HeadDim
	NormEps       float64 // RMSNorm epsilon
	MaxContextLen int     // trained context length, tokens
	Pooling       string  // how the file says embeddings pool: "LAST", "MEAN", "CLS" (wire.Pooling*); "": it does not say
	// ClassifierLabels names a classification head's classes, from
	// {arch}.classifier.output_labels (Qwen3-Reranker: "yes", "no");
	// nil when the file names none.
	ClassifierLabels []string
	BOSTokenID       int32   // beginning-of-sequence token
	EOSTokenIDs      []int32 // tokens that end generation
	TiedEmbeddings   bool    // Output aliases TokenEmbed
	RopeScaling      RopeScaling
	QKVBias          bool // Q, K and V projections have biases (Qwen2)
	QKNorm           bool // per-head RMSNorm of Q and K before RoPE (Qwen3)
	QKNormFull       bool // with QKNorm: Q and K are normalized whole, over all heads at once ([H*D], [Hkv*D]; OLMo 2, OLMoE)
	NoPreNorms       bool // no RMSNorm before attention and the MLP: they read the residual stream as is (OLMo 2, which has PostNorms)

	// Gemma's, SmolLM3's, Granite's and Phi-3's options; their zero
	// values are Llama's behaviour.
	EmbedScale     float64    // token embeddings are multiplied by it (Gemma: √Dim); 0: 1
	FFNAct         Activation // the MLP's gate activation
	PostNorms      bool       // each sublayer's output is RMS-normalized (Layer.PostAttnNorm, PostFFNNorm) before the residual add
	AttnScale      float64    // attention scores' scale; 0: 1/√HeadDim
	SlidingWindow  int        // positions a local layer attends to, its own included; 0: none
	LocalLayers    []bool     // [L] which layers are local (sliding-window) ones; nil: none
	LocalRopeTheta float64    // RoPE base of local layers, which take no RopeScaling; 0: RopeTheta and RopeScaling
	FinalSoftcap   float64    // logits become c·tanh(logits/c) when c > 0 (Gemma 2)
	AttnSoftcap    float64    // attention scores become c·tanh(s/c) when c > 0, before the mask and softmax (Gemma 2)
	NoRopeLayers   []bool     // [L] layers whose Q and K are not rotated (SmolLM3's NoPE layers); nil: all rotate
	ResidualScale  float64    // each sublayer's output is multiplied by it before the residual add (Granite); 0: 1
	LogitScale     float64    // logits are divided by it (Granite's logits_scaling); 0: 1
	RopeAttnFactor float64    // RoPE's cosines and sines are multiplied by it (Phi-3's LongRoPE attn_factor), so Q·K by its square; 0: 1
	AttnSinks      bool       // each head's softmax denominator adds e^s of a learned logit s per head (Layer.Sinks; gpt-oss)
	OutBias        bool       // the attention's output projection has a bias (Layer.BO; gpt-oss)

	// A mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE): when
	// NumExperts > 0, every layer's MLP is a router (Layer.Router) that
	// sends each token to the NumExpertsUsed experts of highest softmax
	// probability, and sums their outputs weighted by those
	// probabilities (see Layer.Router); with MoELayers, only the layers
	// it flags, the others dense MLPs of FFNDim. FFNDim is otherwise
	// unused.
	NumExperts         int    // E, experts per layer
	NumExpertsUsed     int    // K, experts per token
	ExpertFFNDim       int    // Fe, hidden width of each expert's SwiGLU
	ExpertWeightsNorm  bool   // the K routing weights are divided by their sum (Mixtral, Qwen3-MoE)
	SharedExpertFFNDim int    // Fs: a shared expert every token takes (Qwen2-MoE, Granite MoE shared); 0: none
	SharedExpertGate   bool   // the shared expert's output is scaled by σ(x·Layer.SharedGate) (Qwen2-MoE), else added as is
	ExpertBiases       bool   // the router and every expert's matrices have biases (Layer.RouterBias, Expert.B1/B3/B2; gpt-oss)
	MoELayers          []bool // [L] which layers are mixtures of experts, the others dense (ERNIE 4.5: all but the first); nil: all
}

// Activation is the MLP's gate activation: out = act(gate)·up.
type Activation uint8

const (
	ActSiLU     Activation = iota // x·σ(x) (Llama, Qwen)
	ActGELUTanh                   // ½x(1+tanh(√(2/π)(x+0.044715x³))) (Gemma)
	// ActSwiGLUOAI is gpt-oss's clamped SwiGLU: with g = min(gate, 7),
	// g·σ(1.702·g)·(clamp(up, −7, 7) + 1) (ggml's swiglu_oai).
	ActSwiGLUOAI
)

// String names the activation as transformers' hidden_act does.
func (a Activation) String() string {
	switch a {
	case ActSiLU:
		return "silu"
	case ActGELUTanh:
		return "gelu_pytorch_tanh"
	case ActSwiGLUOAI:
		return "swiglu_oai"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}

// Scale is the attention scores' scale: AttnScale, or 1/√HeadDim.
func (c *Config) Scale() float64 {
	if c.AttnScale > 0 {
		return c.AttnScale
	}
	return 1 / math.Sqrt(float64(c.HeadDim))
}

// RotaryDim is R, the dims of each head RoPE rotates: RopeDim, or
// HeadDim. The rest pass through unrotated.
func (c *Config) RotaryDim() int {
	if c.RopeDim > 0 {
		return c.RopeDim
	}
	return c.HeadDim
}

// QKNormDims are the lengths of the Q and K norm gains: D each, or H*D
// and Hkv*D with QKNormFull.
func (c *Config) QKNormDims() (q, k int) {
	if c.QKNormFull {
		return c.NumHeads * c.HeadDim, c.NumKVHeads * c.HeadDim
	}
	return c.HeadDim, c.HeadDim
}

// Sparse reports whether layer l's MLP is a mixture of experts.
func (c *Config) Sparse(l int) bool {
	return c.NumExperts > 0 && (c.MoELayers == nil || l < len(c.MoELayers) && c.MoELayers[l])
}

// RopeMScale is what RoPE's cosines and sines are multiplied by in the
// global layers: RopeAttnFactor (or 1), times YaRN's 1 + 0.1·ln(factor)
// with yarn scaling (transformers' attention_factor; ggml's mscale).
func (c *Config) RopeMScale() float64 {
	m := 1.0
	if c.RopeAttnFactor > 0 {
		m = c.RopeAttnFactor
	}
	if s := c.RopeScaling; s.Type == "yarn" && s.Factor > 1 {
		m *= 1 + 0.1*math.Log(s.Factor)
	}
	return m
}

// Local reports whether layer l attends over a sliding window.
func (c *Config) Local(l int) bool {
	return c.SlidingWindow > 0 && l < len(c.LocalLayers) && c.LocalLayers[l]
}

// RopeScaling stretches RoPE to longer contexts.
type RopeScaling struct {
	Type           string  // "" (none), "linear", "llama3" or "yarn"
	Factor         float64 // context extension factor
	LowFreqFactor  float64 // llama3 only
	HighFreqFactor float64 // llama3 only
	OrigContextLen int     // llama3, yarn: original_max_position_embeddings
	BetaFast       float64 // yarn: rotations per original context above which a frequency is kept; 0: 32
	BetaSlow       float64 // yarn: and below which it is interpolated; 0: 1
}

// Layer is one transformer block's weights. Matrices are [out][in]
// (GGUF Shape [in, out]) of any supported type; vectors are float32.
type Layer struct {
	AttnNorm []float32 // [Dim] RMSNorm gain before attention; nil when Config.NoPreNorms
	Wq       *Tensor   // [H*D][Dim]
	Wk       *Tensor   // [Hkv*D][Dim]
	Wv       *Tensor   // [Hkv*D][Dim]
	Wo       *Tensor   // [Dim][H*D]
	BQ       []float32 // [H*D] Q bias; nil unless Config.QKVBias
	BK       []float32 // [Hkv*D] K bias; nil unless Config.QKVBias
	BV       []float32 // [Hkv*D] V bias; nil unless Config.QKVBias
	BO       []float32 // [Dim] output projection bias; nil unless Config.OutBias
	Sinks    []float32 // [H] each head's sink logit; nil unless Config.AttnSinks
	QNorm    []float32 // [D] per-head RMSNorm gain of Q ([H*D] when Config.QKNormFull); nil unless Config.QKNorm
	KNorm    []float32 // [D] per-head RMSNorm gain of K ([Hkv*D] when Config.QKNormFull); nil unless Config.QKNorm
	FFNNorm  []float32 // [Dim] RMSNorm gain before the MLP; nil when Config.NoPreNorms
	W1       *Tensor   // [F][Dim] gate
	W3       *Tensor   // [F][Dim] up
	W2       *Tensor   // [Dim][F] down

	PostAttnNorm []float32 // [Dim] RMSNorm gain of the attention's output; nil unless Config.PostNorms
	PostFFNNorm  []float32 // [Dim] RMSNorm gain of the MLP's output; nil unless Config.PostNorms

	// A mixture-of-experts MLP (Config.Sparse(l)) instead of W1, W3 and
	// W2, which are then nil.
	Router     *Tensor   // [E][Dim] routing logits (ffn_gate_inp)
	ExpertBias []float32 // [E] added to the routing probabilities to choose experts, not to weigh them (ERNIE's e_score_correction_bias, GGUF exp_probs_b.bias); nil: none
	RouterBias []float32 // [E] added to the routing logits (ffn_gate_inp.bias); nil unless Config.ExpertBiases
	Experts    []Expert  // [E]
	Shared     Expert    // Fs wide; zero unless Config.SharedExpertFFNDim
	SharedGate []float32 // [Dim] the shared expert's gate logit weights; nil unless Config.SharedExpertGate
}

// Expert is one SwiGLU MLP of a mixture of experts, F = Config.ExpertFFNDim
// wide (Config.SharedExpertFFNDim for the shared expert).
type Expert struct {
	W1 *Tensor // [F][Dim] gate
	W3 *Tensor // [F][Dim] up
	W2 *Tensor // [Dim][F] down
	// Biases added to each matrix's output (Config.ExpertBiases): B1 and
	// B3 [F], B2 [Dim]; nil otherwise.
	B1, B3, B2 []float32
}

// Weights are a model's parameters. Tensors may be quantized and their
// Data mmapped; backends read them and never write.
type Weights struct {
	TokenEmbed *Tensor   // [V][Dim]
	Layers     []Layer   // [L]
	OutNorm    []float32 // [Dim] final RMSNorm gain
	Output     *Tensor   // [V][Dim] LM head; the same *Tensor as TokenEmbed when tied
	RopeFreqs  []float32 // [R/2] optional per-frequency divisors (R = Config.RotaryDim) (GGUF rope_freqs.weight); nil if absent
	// Classifier is the sequence-classification head (cls.* tensors: a
	// reranker's), nil when the file has none.
	Classifier *Classifier
}

// Validate checks that cfg is consistent and every tensor of w has the
// shape, type and data size cfg implies. Shape errors wrap ErrShape, type
// errors ErrUnsupportedType; both name the tensor by its GGUF name.
func (w *Weights) Validate(cfg Config) error {
	switch {
	case cfg.VocabSize <= 0, cfg.Dim <= 0, cfg.NumLayers <= 0, cfg.NumHeads <= 0,
		cfg.NumKVHeads <= 0, cfg.HeadDim <= 0, cfg.FFNDim <= 0:
		return fmt.Errorf("%w: non-positive dimension in %+v", ErrShape, cfg)
	case cfg.NumHeads%cfg.NumKVHeads != 0:
		return fmt.Errorf("%w: %d heads not a multiple of %d KV heads", ErrShape, cfg.NumHeads, cfg.NumKVHeads)
	case cfg.HeadDim%2 != 0:
		return fmt.Errorf("%w: odd head dim %d", ErrShape, cfg.HeadDim)
	case cfg.RopeDim < 0, cfg.RopeDim%2 != 0, cfg.RopeDim > cfg.HeadDim:
		return fmt.Errorf("%w: RoPE over %d of %d dims", ErrShape, cfg.RopeDim, cfg.HeadDim)
	case len(w.Layers) != cfg.NumLayers:
		return fmt.Errorf("%w: %d layers, config says %d", ErrShape, len(w.Layers), cfg.NumLayers)
	case cfg.LocalLayers != nil && len(cfg.LocalLayers) != cfg.NumLayers:
		return fmt.Errorf("%w: %d local-layer flags for %d layers", ErrShape, len(cfg.LocalLayers), cfg.NumLayers)
	case cfg.NoRopeLayers != nil && len(cfg.NoRopeLayers) != cfg.NumLayers:
		return fmt.Errorf("%w: %d no-RoPE flags for %d layers", ErrShape, len(cfg.NoRopeLayers), cfg.NumLayers)
	case cfg.SlidingWindow < 0, cfg.EmbedScale < 0, cfg.AttnScale < 0, cfg.FinalSoftcap < 0, cfg.AttnSoftcap < 0, cfg.LocalRopeTheta < 0,
		cfg.ResidualScale < 0, cfg.LogitScale < 0, cfg.RopeAttnFactor < 0:
		return fmt.Errorf("%w: negative window, scale or softcap in %+v", ErrShape, cfg)
	case cfg.QKNormFull && !cfg.QKNorm, cfg.NoPreNorms && !cfg.PostNorms:
		return fmt.Errorf("%w: whole-vector QK norm without QK norm, or no pre-norms without post-norms, in %+v", ErrShape, cfg)
	case cfg.FFNAct > ActSwiGLUOAI:
		return fmt.Errorf("%w: activation %v", ErrShape, cfg.FFNAct)
	}
	if err := cfg.validateMoE(); err != nil {
		return err
	}
	v, d, f := cfg.VocabSize, cfg.Dim, cfg.FFNDim
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	vec := func(name string, got []float32, want int, present bool) error {
		switch {
		case !present && got != nil:
			return fmt.Errorf("%w: %s present but the config does not use it", ErrShape, name)
		case present && len(got) != want:
			return fmt.Errorf("%w: %s has %d elements, want %d", ErrShape, name, len(got), want)
		}
		return nil
	}
	errs := []error{
		checkMatrix("token_embd.weight", w.TokenEmbed, d, v),
		vec("output_norm.weight", w.OutNorm, d, true),
		checkMatrix("output.weight", w.Output, d, v),
		vec("rope_freqs.weight", w.RopeFreqs, cfg.RotaryDim()/2, w.RopeFreqs != nil),
	}
	qn, kn := cfg.QKNormDims()
	for i, l := range w.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		errs = append(errs,
			vec(p+"attn_norm.weight", l.AttnNorm, d, !cfg.NoPreNorms),
			checkMatrix(p+"attn_q.weight", l.Wq, d, qd),
			checkMatrix(p+"attn_k.weight", l.Wk, d, kvd),
			checkMatrix(p+"attn_v.weight", l.Wv, d, kvd),
			checkMatrix(p+"attn_output.weight", l.Wo, qd, d),
			vec(p+"attn_q.bias", l.BQ, qd, cfg.QKVBias),
			vec(p+"attn_k.bias", l.BK, kvd, cfg.QKVBias),
			vec(p+"attn_v.bias", l.BV, kvd, cfg.QKVBias),
			vec(p+"attn_output.bias", l.BO, d, cfg.OutBias),
			vec(p+"attn_sinks.weight", l.Sinks, cfg.NumHeads, cfg.AttnSinks),
			vec(p+"attn_q_norm.weight", l.QNorm, qn, cfg.QKNorm),
			vec(p+"attn_k_norm.weight", l.KNorm, kn, cfg.QKNorm),
			vec(p+"ffn_norm.weight", l.FFNNorm, d, !cfg.NoPreNorms),
			vec(p+"post_attention_norm.weight", l.PostAttnNorm, d, cfg.PostNorms),
			vec(p+"post_ffw_norm.weight", l.PostFFNNorm, d, cfg.PostNorms),
		)
		if cfg.Sparse(i) {
			errs = append(errs, l.validateMoE(cfg, p))
			continue
		}
		if l.Router != nil || l.Experts != nil || l.SharedGate != nil || l.ExpertBias != nil || l.RouterBias != nil {
			errs = append(errs, fmt.Errorf("%w: %sexperts present but the config has none", ErrShape, p))
		}
		errs = append(errs,
			checkMatrix(p+"ffn_gate.weight", l.W1, d, f),
			checkMatrix(p+"ffn_up.weight", l.W3, d, f),
			checkMatrix(p+"ffn_down.weight", l.W2, f, d),
		)
	}
	return errors.Join(errs...)
}

// checkMatrix checks that t is a supported [out][in] matrix (Shape [in,
// out], trailing 1s allowed) whose Data holds exactly its elements.
func checkMatrix(name string, t *Tensor, in, out int) error {
	if t == nil {
		return fmt.Errorf("%w: %s missing", ErrShape, name)
	}
	if !t.Type.Supported() {
		return fmt.Errorf("%w: %s has type %v", ErrUnsupportedType, name, t.Type)
	}
	if !shapeIs(t.Shape, in, out) {
		return fmt.Errorf("%w: %s has shape %v, want [%d %d]", ErrShape, name, t.Shape, in, out)
	}
	if bs := t.Type.BlockSize(); in%bs != 0 {
		return fmt.Errorf("%w: %s rows of %d elements are not a multiple of the %v block of %d", ErrShape, name, in, t.Type, bs)
	}
	if want := t.Type.RowBytes(in) * out; len(t.Data) != want {
		return fmt.Errorf("%w: %s (%v %v) has %d bytes of data, want %d", ErrShape, name, t.Type, t.Shape, len(t.Data), want)
	}
	return nil
}

// shapeIs reports whether shape equals want, ignoring trailing 1s.
func shapeIs(shape []int, want ...int) bool {
	for len(shape) > len(want) && shape[len(shape)-1] == 1 {
		shape = shape[:len(shape)-1]
	}
	if len(shape) != len(want) {
		return false
	}
	for i := range want {
		if shape[i] != want[i] {
			return false
		}
	}
	return true
}
