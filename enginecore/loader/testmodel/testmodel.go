package testmodel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// Spec describes a random-weight model. Zero fields take the defaults
// noted.
type Spec struct {
	Arch       string  // "llama", "smollm3", "granite", "granitemoe", "phi3", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gemma2", "gemma3", "ernie4_5", "ernie4_5-moe", "olmo2", "olmoe" or "gpt-oss"
	VocabSize  int     // V; 0: the number of tokens in Tokenizer
	Dim        int     // model width
	NumLayers  int     // L
	NumHeads   int     // H
	NumKVHeads int     // Hkv; 0: H
	HeadDim    int     // D; 0: Dim/H
	RopeDim    int     // R, dims of a head RoPE rotates (phi3's partial RoPE); 0: D
	FFNDim     int     // F
	ContextLen int     // tokens; 0: 2048
	RopeTheta  float64 // 0: 10000 (qwen: 1e6)
	NormEps    float64 // 0: 1e-5 (qwen: 1e-6)
	Tied       bool    // no output.weight: the LM head is the embedding
	Seed       uint64  // PCG seed

	// Gemma, OLMo 3 (olmo2) and gpt-oss (written when positive; gpt-oss
	// needs SlidingWindow): attention.sliding_window,
	// attention.sliding_window_pattern (llama.cpp's default: 6 for Gemma
	// 3, 2 for Gemma 2), rope.freq_base_swa, final_logit_softcapping and
	// (Gemma 2) attn_logit_softcapping. llama.cpp's defaults where not
	// written: Gemma 2 has a 4096 window and softcaps 30 and 50.
	SlidingWindow  int
	WindowPattern  int
	LocalRopeTheta float64
	FinalSoftcap   float64
	AttnSoftcap    float64

	// SinkMean is the mean of gpt-oss's sink logits (attn_sinks, one per
	// head, std 1).
	SinkMean float64

	// Granite's scales (granite only; written when positive).
	Granite GraniteScales

	// Phi3 is Phi-3's LongRoPE (phi3 only, whose attn_qkv and ffn_up are
	// written fused, as its files have them).
	Phi3 LongRope

	// A mixture of experts (llama: Mixtral; granitemoe, qwen2moe and
	// qwen3moe need one): Experts experts per layer, ExpertsUsed per
	// token, each ExpertFFNDim wide (0: FFNDim; written as
	// expert_feed_forward_length but for llama and granitemoe, whose
	// experts are FFNDim wide); qwen2moe's shared expert (gated) is
	// SharedFFNDim wide (0: FFNDim), granitemoe's (ungated) when
	// SharedFFNDim > 0. NormTopK (HF only) is config.json's
	// norm_topk_prob.
	Experts, ExpertsUsed, ExpertFFNDim, SharedFFNDim int
	NormTopK                                         bool
	// ERNIE 4.5 MoE (ernie4_5-moe): its first DenseLead layers are dense
	// MLPs of FFNDim, then every MoEStep-th (0: 1) a mixture (a Qwen
	// MoE's DenseLead first layers are its mlp_only_layers: Hugging Face
	// only, as llama.cpp's GGUFs have none); its shared
	// expert is ungated; SelectionBias > 0 writes exp_probs_b.bias, the
	// experts' selection bias, SelectionBias·((7e mod 5) − 2)/2 for
	// expert e (drawn from no generator, so the other weights do not
	// change with it).
	DenseLead, MoEStep int
	SelectionBias      float64

	// Yarn, when its Factor is set, is YaRN RoPE scaling: GGUF
	// rope.scaling.type yarn, factor, original_context_length and
	// yarn_beta_fast/_slow (those written when set); config.json's
	// rope_scaling.
	Yarn Yarn

	// RopeFreqs, when not nil, is written as rope_freqs.weight ([D/2]
	// frequency divisors, llama3 RoPE scaling). GGUF only.
	RopeFreqs []float32

	// MatrixType is the type of every 2-D tensor not in Types (zero: F32).
	MatrixType model.DType
	// Types overrides MatrixType per tensor, keyed by GGUF name without the
	// "blk.N." prefix: "token_embd.weight", "attn_q.weight", "ffn_down.weight",
	// "output.weight", ...; a full name ("blk.3.ffn_down.weight") overrides
	// that for one layer's tensor.
	Types map[string]model.DType
	// Quantize encodes row-major values as type t (len = the tensor's
	// elements). Needed for types other than F32, F16 and BF16; when set it
	// is used for F16 and BF16 too.
	Quantize func(t model.DType, f32 []float32) []byte

	// Classes, when positive, writes a reranker's classification head:
	// cls.output.weight ([Classes][Dim], std 1/√Dim), pooling_type 4
	// (rank) and, when set, Labels as classifier.output_labels
	// (Qwen3-Reranker's file: 2 classes, "yes" and "no", no output.weight
	// when Tied). GGUF only.
	Classes int
	Labels  []string

	// Tokenizer holds tokenizer.* metadata written as is (values of the
	// types gguf.Writer accepts, e.g. from ReadTokenizer). nil: ByteVocab.
	Tokenizer map[string]any
}

// LongRope is Phi-3's 128k RoPE: rope_factors_short.weight and
// rope_factors_long.weight ([D/2] each; nil: none),
// rope.scaling.original_context_length (OrigContextLen, written when
// positive) and rope.scaling.attn_factor (when positive).
type LongRope struct {
	Short, Long    []float32
	OrigContextLen int
	AttnFactor     float64
}

// Yarn is YaRN RoPE scaling (Spec.Yarn).
type Yarn struct {
	Factor             float64
	OrigContextLen     int
	BetaFast, BetaSlow float64
}

// GraniteScales are Granite's multipliers, as config.json names them;
// zero ones are not written.
type GraniteScales struct {
	Embedding, Attention, Residual, Logit float64
}

// tensor is one generated weight.
type tensor struct {
	name  string // GGUF name
	rows  int    // out
	cols  int    // in (contiguous); 0 for a vector
	depth int    // experts stacked (ggml's third dim); 0 for one matrix
	// draw makes the values, row-major, rows×cols (or rows for a vector).
	// The tensors of one generate share a generator: call each draw once,
	// in order, so that a file never holds more than one tensor's floats.
	draw func() []float32
}

func (t tensor) matrix() bool { return t.cols > 0 }

// ggmlShape is the tensor's shape in ggml order.
func (t tensor) ggmlShape() []uint64 {
	switch {
	case t.depth > 0:
		return []uint64{uint64(t.cols), uint64(t.rows), uint64(t.depth)}
	case t.matrix():
		return []uint64{uint64(t.cols), uint64(t.rows)}
	}
	return []uint64{uint64(t.rows)}
}

// resolve fills defaults and checks s.
func (s Spec) resolve() (Spec, error) {
	gemma := s.Arch == "gemma2" || s.Arch == "gemma3"
	gptOSS := s.Arch == "gpt-oss"
	moe := s.Arch == "qwen2moe" || s.Arch == "qwen3moe" || s.Arch == "granitemoe" || s.Arch == "ernie4_5-moe" || s.Arch == "olmoe" || gptOSS
	qwen := s.Arch == "qwen2" || s.Arch == "qwen3" || s.Arch == "qwen2moe" || s.Arch == "qwen3moe" || gemma
	granite := s.Arch == "granite" || s.Arch == "granitemoe"
	switch {
	case s.Arch != "llama" && s.Arch != "smollm3" && !granite && s.Arch != "phi3" && !qwen && s.Arch != "ernie4_5" && s.Arch != "olmo2" && !moe:
		return s, fmt.Errorf("testmodel: architecture %q (want llama, smollm3, granite, granitemoe, phi3, qwen2, qwen3, qwen2moe, qwen3moe, gemma2 or gemma3)", s.Arch)
	case moe && s.Experts == 0, s.Experts > 0 && s.Arch != "llama" && !moe:
		return s, fmt.Errorf("testmodel: %d experts on %s", s.Experts, s.Arch)
	case s.Experts > 0 && (s.ExpertsUsed <= 0 || s.ExpertsUsed > s.Experts), s.Experts < 0:
		return s, fmt.Errorf("testmodel: %d of %d experts per token", s.ExpertsUsed, s.Experts)
	case s.SharedFFNDim != 0 && s.Arch != "qwen2moe" && s.Arch != "granitemoe" && s.Arch != "ernie4_5-moe":
		return s, fmt.Errorf("testmodel: a shared expert is qwen2moe's, granitemoe's or ernie4_5-moe's, not %s's", s.Arch)
	case s.Arch != "ernie4_5-moe" && (s.MoEStep != 0 || s.SelectionBias != 0),
		s.DenseLead != 0 && s.Arch != "ernie4_5-moe" && s.Arch != "qwen2moe" && s.Arch != "qwen3moe":
		return s, fmt.Errorf("testmodel: dense layers among experts and a selection bias are ernie4_5-moe's (DenseLead: Qwen MoE's too), not %s's", s.Arch)
	case s.Arch != "phi3" && (s.Phi3.Short != nil || s.Phi3.AttnFactor != 0):
		return s, fmt.Errorf("testmodel: LongRoPE on %s", s.Arch)
	case s.Yarn.Factor > 0 && (s.Phi3.Short != nil || s.RopeFreqs != nil), s.Yarn.Factor > 0 && s.Phi3.OrigContextLen > 0:
		return s, errors.New("testmodel: YaRN with other RoPE scaling")
	case len(s.Phi3.Short) != len(s.Phi3.Long):
		return s, errors.New("testmodel: LongRoPE needs short and long factors alike")
	case !granite && s.Granite != (GraniteScales{}):
		return s, fmt.Errorf("testmodel: Granite's scales on %s", s.Arch)
	case granite && !(s.Granite.Logit > 0):
		return s, errors.New("testmodel: granite needs Granite.Logit (llama.cpp requires logit_scale)")
	case !gemma && s.FinalSoftcap != 0, !gemma && s.Arch != "olmo2" && !gptOSS && (s.SlidingWindow != 0 || s.WindowPattern != 0 || s.LocalRopeTheta != 0):
		return s, fmt.Errorf("testmodel: sliding window and softcap are Gemma's (a window OLMo 3's and gpt-oss's too), not %s's", s.Arch)
	case gptOSS && s.SlidingWindow <= 0:
		return s, errors.New("testmodel: gpt-oss needs SlidingWindow (llama.cpp requires attention.sliding_window)")
	case s.Arch != "gemma2" && s.AttnSoftcap != 0:
		return s, fmt.Errorf("testmodel: attention softcap is gemma2's, not %s's", s.Arch)
	case s.Arch == "gemma2" && !s.Tied:
		return s, errors.New("testmodel: gemma2's LM head is its embedding (llama.cpp reads no output.weight): set Tied")
	case s.Dim <= 0, s.NumLayers <= 0, s.NumHeads <= 0, s.FFNDim <= 0:
		return s, fmt.Errorf("testmodel: non-positive size in %+v", s)
	}
	if s.VocabSize == 0 {
		tokens, _ := s.Tokenizer["tokenizer.ggml.tokens"].([]string)
		s.VocabSize = len(tokens)
	}
	if s.NumKVHeads == 0 {
		s.NumKVHeads = s.NumHeads
	}
	if s.Experts > 0 && (s.ExpertFFNDim == 0 || s.Arch == "llama" || s.Arch == "granitemoe" || s.Arch == "olmoe") {
		s.ExpertFFNDim = s.FFNDim // llama.cpp's llama, granitemoe and olmoe experts are feed_forward_length wide
	}
	if s.Arch == "ernie4_5-moe" && s.MoEStep == 0 {
		s.MoEStep = 1
	}
	if s.Arch == "qwen2moe" && s.SharedFFNDim == 0 {
		s.SharedFFNDim = s.FFNDim
	}
	if s.HeadDim == 0 {
		s.HeadDim = s.Dim / s.NumHeads
	}
	if s.ContextLen == 0 {
		s.ContextLen = 2048
	}
	if s.RopeTheta == 0 {
		s.RopeTheta = map[bool]float64{false: 10000, true: 1e6}[qwen]
	}
	if s.NormEps == 0 {
		s.NormEps = map[bool]float64{false: 1e-5, true: 1e-6}[qwen]
	}
	switch {
	case s.VocabSize <= 0:
		return s, errors.New("testmodel: no VocabSize and no tokenizer.ggml.tokens")
	case s.NumHeads%s.NumKVHeads != 0, s.HeadDim%2 != 0:
		return s, fmt.Errorf("testmodel: %d heads, %d KV heads, head dim %d", s.NumHeads, s.NumKVHeads, s.HeadDim)
	case s.RopeDim < 0, s.RopeDim > s.HeadDim, s.RopeDim%2 != 0, s.RopeDim > 0 && s.Arch != "phi3":
		return s, fmt.Errorf("testmodel: RoPE over %d of %d dims on %s (partial RoPE is phi3's)", s.RopeDim, s.HeadDim, s.Arch)
	case s.RopeFreqs != nil && len(s.RopeFreqs) != s.rotary()/2:
		return s, fmt.Errorf("testmodel: %d rope freqs for %d rotated dims", len(s.RopeFreqs), s.rotary())
	}
	return s, nil
}

// generate lists the weights in the documented order, to be drawn in it.
func (s Spec) generate() []tensor {
	rng := rand.New(rand.NewPCG(s.Seed, 0))
	normal := func(n int, mean, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + std*rng.NormFloat64())
		}
		return v
	}
	matrix := func(name string, rows, cols int, std float64) tensor {
		return tensor{name, rows, cols, 0, func() []float32 { return normal(rows*cols, 0, std) }}
	}
	vector := func(name string, n int, mean, std float64) tensor {
		return tensor{name, n, 0, 0, func() []float32 { return normal(n, mean, std) }}
	}
	d, qd, kvd := s.Dim, s.NumHeads*s.HeadDim, s.NumKVHeads*s.HeadDim
	ts := []tensor{matrix("token_embd.weight", s.VocabSize, d, 1)}
	for i := range s.NumLayers {
		p := fmt.Sprintf("blk.%d.", i)
		in := 1 / math.Sqrt(float64(d))
		if s.Arch != "olmo2" { // OLMo 2 has no pre-norms
			ts = append(ts, vector(p+"attn_norm.weight", d, 1, 0.02))
		}
		if s.Arch == "phi3" { // fused, Q then K then V
			ts = append(ts, matrix(p+"attn_qkv.weight", qd+2*kvd, d, in))
		} else {
			ts = append(ts,
				matrix(p+"attn_q.weight", qd, d, in),
				matrix(p+"attn_k.weight", kvd, d, in),
				matrix(p+"attn_v.weight", kvd, d, in))
		}
		if s.Arch == "qwen2" || s.Arch == "qwen2moe" || s.Arch == "gpt-oss" {
			ts = append(ts,
				vector(p+"attn_q.bias", qd, 0, 0.1),
				vector(p+"attn_k.bias", kvd, 0, 0.1),
				vector(p+"attn_v.bias", kvd, 0, 0.1))
		}
		if s.Arch == "qwen3" || s.Arch == "qwen3moe" || s.Arch == "gemma3" {
			ts = append(ts,
				vector(p+"attn_q_norm.weight", s.HeadDim, 1, 0.02),
				vector(p+"attn_k_norm.weight", s.HeadDim, 1, 0.02))
		}
		if s.Arch == "olmo2" || s.Arch == "olmoe" { // whole-vector QK norm
			ts = append(ts,
				vector(p+"attn_q_norm.weight", qd, 1, 0.02),
				vector(p+"attn_k_norm.weight", kvd, 1, 0.02))
		}
		ts = append(ts, matrix(p+"attn_output.weight", d, qd, 1/math.Sqrt(float64(qd))))
		switch s.Arch {
		case "gpt-oss": // Wo's bias, a sink logit per head, and the MLP's norm under its GGUF name
			ts = append(ts, vector(p+"attn_output.bias", d, 0, 0.1), vector(p+"attn_sinks.weight", s.NumHeads, s.SinkMean, 1),
				vector(p+"post_attention_norm.weight", d, 1, 0.02))
		case "olmo2":
		default:
			ts = append(ts, vector(p+"ffn_norm.weight", d, 1, 0.02))
		}
		switch {
		case s.sparse(i):
			ts = append(ts, s.experts(p, normal)...)
		case s.Arch == "phi3": // fused, gate then up
			ts = append(ts, matrix(p+"ffn_up.weight", 2*s.FFNDim, d, in))
		default:
			ts = append(ts,
				matrix(p+"ffn_gate.weight", s.FFNDim, d, in),
				matrix(p+"ffn_up.weight", s.FFNDim, d, in))
		}
		if !s.sparse(i) {
			ts = append(ts, matrix(p+"ffn_down.weight", d, s.FFNDim, 1/math.Sqrt(float64(s.FFNDim))))
		}
		if s.Arch == "gemma2" || s.Arch == "gemma3" || s.Arch == "olmo2" {
			ts = append(ts,
				vector(p+"post_attention_norm.weight", d, 1, 0.02),
				vector(p+"post_ffw_norm.weight", d, 1, 0.02))
		}
	}
	ts = append(ts, vector("output_norm.weight", d, 1, 0.02))
	if !s.Tied {
		ts = append(ts, matrix("output.weight", s.VocabSize, d, 4/math.Sqrt(float64(d))))
	}
	if s.Classes > 0 {
		ts = append(ts, matrix("cls.output.weight", s.Classes, d, 1/math.Sqrt(float64(d))))
	}
	return ts
}

// rotary is R: RopeDim, or HeadDim.
func (s Spec) rotary() int {
	if s.RopeDim > 0 {
		return s.RopeDim
	}
	return s.HeadDim
}

// typeOf is the storage type of t.
func (s Spec) typeOf(t tensor) model.DType {
	if !t.matrix() || strings.HasSuffix(t.name, ".bias") {
		return model.F32 // vectors, and gpt-oss's stacked expert biases
	}
	if _, ok := s.Types[t.name]; !ok && strings.HasSuffix(t.name, "ffn_gate_inp.weight") {
		if typ, ok := s.Types["ffn_gate_inp.weight"]; ok {
			return typ
		}
		return model.F32 // a router stays float32, as llama.cpp's quantizer leaves it
	}
	if typ, ok := s.Types[t.name]; ok {
		return typ
	}
	key := t.name
	if rest, ok := strings.CutPrefix(key, "blk."); ok {
		_, key, _ = strings.Cut(rest, ".")
	}
	if typ, ok := s.Types[key]; ok {
		return typ
	}
	return s.MatrixType
}

// encode converts values to typ's bytes.
func (s Spec) encode(name string, typ model.DType, values []float32) ([]byte, error) {
	var b []byte
	switch {
	case typ == model.F32:
		b = make([]byte, 4*len(values))
		for i, v := range values {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b, nil
	case s.Quantize != nil:
		b = s.Quantize(typ, values)
	case typ == model.F16 || typ == model.BF16:
		b = make([]byte, 2*len(values))
		for i, v := range values {
			h := toBF16(v)
			if typ == model.F16 {
				h = toF16(v)
			}
			binary.LittleEndian.PutUint16(b[2*i:], h)
		}
	default:
		return nil, fmt.Errorf("testmodel: %s: type %v needs Spec.Quantize", name, typ)
	}
	if want := typ.RowBytes(len(values)); len(b) != want || !typ.Supported() {
		return nil, fmt.Errorf("testmodel: %s: Quantize gave %d bytes of %v, want %d", name, len(b), typ, want)
	}
	return b, nil
}

// WriteGGUF writes the model to path as GGUF v3, drawing and encoding
// one tensor at a time (a 3B model never has all its floats in memory).
func WriteGGUF(path string, spec Spec) error {
	s, err := spec.resolve()
	if err != nil {
		return err
	}
	if s.DenseLead > 0 && s.Arch != "ernie4_5-moe" {
		return fmt.Errorf("testmodel: %s GGUFs have no dense layers among the experts (Hugging Face only)", s.Arch)
	}
	tok := s.Tokenizer
	if tok == nil {
		tok = ByteVocab(s.VocabSize)
	}
	w := gguf.NewWriter()
	a := s.Arch + "."
	type keyValue struct {
		key string
		v   any
	}
	kvs := []keyValue{
		{"general.architecture", s.Arch},
		// Not the architecture's name: llama.cpp sets Phi-3's token
		// attributes on "</s>" and "<|endoftext|>" when general.name
		// contains "phi3", and a byte vocabulary has neither.
		{"general.name", "tandem-testmodel"},
		{gguf.KeyAlignment, uint32(gguf.DefaultAlignment)},
		{a + "context_length", uint32(s.ContextLen)},
		{a + "embedding_length", uint32(s.Dim)},
		{a + "block_count", uint32(s.NumLayers)},
		{a + "feed_forward_length", uint32(s.FFNDim)},
		{a + "attention.head_count", uint32(s.NumHeads)},
		{a + "attention.head_count_kv", uint32(s.NumKVHeads)},
		{a + "attention.key_length", uint32(s.HeadDim)},
		{a + "attention.value_length", uint32(s.HeadDim)},
		{a + "rope.dimension_count", uint32(s.rotary())},
		{a + "rope.freq_base", float32(s.RopeTheta)},
		{a + "attention.layer_norm_rms_epsilon", float32(s.NormEps)},
		{a + "vocab_size", uint32(s.VocabSize)},
	}
	// Written only when set (llama.cpp's defaults apply otherwise).
	for _, kv := range []struct {
		keyValue
		on bool
	}{
		{keyValue{a + "attention.sliding_window", uint32(s.SlidingWindow)}, s.SlidingWindow > 0},
		{keyValue{a + "attention.sliding_window_pattern", uint32(s.WindowPattern)}, s.WindowPattern > 0},
		{keyValue{a + "rope.freq_base_swa", float32(s.LocalRopeTheta)}, s.LocalRopeTheta > 0},
		{keyValue{a + "final_logit_softcapping", float32(s.FinalSoftcap)}, s.FinalSoftcap > 0},
		{keyValue{a + "attn_logit_softcapping", float32(s.AttnSoftcap)}, s.AttnSoftcap > 0},
		{keyValue{a + "embedding_scale", float32(s.Granite.Embedding)}, s.Granite.Embedding > 0},
		{keyValue{a + "attention.scale", float32(s.Granite.Attention)}, s.Granite.Attention > 0},
		{keyValue{a + "residual_scale", float32(s.Granite.Residual)}, s.Granite.Residual > 0},
		{keyValue{a + "logit_scale", float32(s.Granite.Logit)}, s.Granite.Logit > 0},
		{keyValue{a + "rope.scaling.original_context_length", uint32(s.Phi3.OrigContextLen)}, s.Phi3.OrigContextLen > 0},
		{keyValue{a + "rope.scaling.attn_factor", float32(s.Phi3.AttnFactor)}, s.Phi3.AttnFactor > 0},
		{keyValue{a + "rope.scaling.type", "yarn"}, s.Yarn.Factor > 0},
		{keyValue{a + "rope.scaling.factor", float32(s.Yarn.Factor)}, s.Yarn.Factor > 0},
		{keyValue{a + "rope.scaling.original_context_length", uint32(s.Yarn.OrigContextLen)}, s.Yarn.OrigContextLen > 0},
		{keyValue{a + "rope.scaling.yarn_beta_fast", float32(s.Yarn.BetaFast)}, s.Yarn.BetaFast > 0},
		{keyValue{a + "rope.scaling.yarn_beta_slow", float32(s.Yarn.BetaSlow)}, s.Yarn.BetaSlow > 0},
		{keyValue{a + "expert_count", uint32(s.Experts)}, s.Experts > 0},
		{keyValue{a + "expert_used_count", uint32(s.ExpertsUsed)}, s.Experts > 0},
		{keyValue{a + "expert_feed_forward_length", uint32(s.ExpertFFNDim)}, s.Experts > 0 && s.Arch != "llama" && s.Arch != "granitemoe" && s.Arch != "olmoe"},
		{keyValue{a + "expert_shared_feed_forward_length", uint32(s.SharedFFNDim)}, s.SharedFFNDim > 0},
		{keyValue{a + "leading_dense_block_count", uint32(s.DenseLead)}, s.Arch == "ernie4_5-moe"},
		{keyValue{a + "interleave_moe_layer_step", uint32(s.MoEStep)}, s.Arch == "ernie4_5-moe"},
		{keyValue{a + "pooling_type", uint32(4)}, s.Classes > 0},
		{keyValue{a + "classifier.output_labels", s.Labels}, s.Classes > 0 && s.Labels != nil},
	} {
		if kv.on {
			kvs = append(kvs, kv.keyValue)
		}
	}
	for _, kv := range kvs {
		if err := w.AddKV(kv.key, kv.v); err != nil {
			return fmt.Errorf("testmodel: %w", err)
		}
	}
	keys := make([]string, 0, len(tok))
	for k := range tok {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := w.AddKV(k, tok[k]); err != nil {
			return fmt.Errorf("testmodel: tokenizer: %w", err)
		}
	}
	ts := s.generate()
	if s.RopeFreqs != nil {
		ts = append(ts, tensor{"rope_freqs.weight", len(s.RopeFreqs), 0, 0, func() []float32 { return s.RopeFreqs }})
	}
	if s.Phi3.Short != nil {
		ts = append(ts, tensor{"rope_factors_long.weight", len(s.Phi3.Long), 0, 0, func() []float32 { return s.Phi3.Long }},
			tensor{"rope_factors_short.weight", len(s.Phi3.Short), 0, 0, func() []float32 { return s.Phi3.Short }})
	}
	for _, t := range ts {
		typ := s.typeOf(t)
		// Drawn and encoded while writing, in order: one tensor in memory at a time.
		if err := w.AddTensorFunc(t.name, uint32(typ), t.ggmlShape(), func() ([]byte, error) { return s.encode(t.name, typ, t.draw()) }); err != nil {
			return fmt.Errorf("testmodel: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("testmodel: %w", err)
	}
	return f.Close()
}

// toF16 rounds f to IEEE half precision, to nearest even.
func toF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 31: // overflow or Inf
		return sign | 0x7c00
	case exp <= 0: // subnormal or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		h := mant >> shift
		rem := mant & (1<<shift - 1)
		if half := uint32(1) << (shift - 1); rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is right
	}
	return sign | uint16(h)
}

// toBF16 rounds f to bfloat16, to nearest even.
func toBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	return uint16((b + 0x7fff + (b >> 16 & 1)) >> 16)
}
