package model

import (
	"errors"
	"fmt"
)

// ErrMissingTensor reports a tensor the config needs that the file lacks.
var ErrMissingTensor = errors.New("model: missing tensor")

// FromTensors builds Weights from tensors keyed by GGUF name:
//
//	token_embd.weight, output_norm.weight, output.weight (absent: tied to
//	token_embd), rope_freqs.weight (optional), and per layer N:
//	blk.N.attn_norm.weight, blk.N.attn_{q,k,v,output}.weight,
//	blk.N.attn_{q,k,v}.bias (cfg.QKVBias), blk.N.attn_{q,k}_norm.weight
//	(cfg.QKNorm; [D], or [H*D] and [Hkv*D] with cfg.QKNormFull),
//	blk.N.ffn_norm.weight (attn_norm and ffn_norm absent with
//	cfg.NoPreNorms), blk.N.ffn_{gate,up,down}.weight,
//	blk.N.post_attention_norm.weight and blk.N.post_ffw_norm.weight
//	(cfg.PostNorms); a mixture of experts (cfg.NumExperts) has instead
//	blk.N.ffn_gate_inp.weight and blk.N.ffn_{gate,up,down}_exps.weight
//	(ggml Shape [in, out, E], viewed as E matrices) or
//	blk.N.ffn_{gate,up,down}.E.weight, and a shared expert's
//	blk.N.ffn_{gate,up,down}_shexp.weight and
//	blk.N.ffn_gate_inp_shexp.weight; gpt-oss adds blk.N.attn_output.bias
//	(cfg.OutBias), blk.N.attn_sinks.weight (cfg.AttnSinks) and
//	blk.N.ffn_gate_inp.bias and blk.N.ffn_{gate,up,down}_exps.bias
//	(cfg.ExpertBiases; [out, E]). A classification head (a reranker's) is
//	cls.output.weight with the optional cls.output.bias, cls.weight and
//	cls.bias (Classifier).
//
// Matrices are kept as given (any supported type, Data not copied); norm
// gains and biases (F32, F16 or BF16) are converted to float32. Unknown
// tensors are ignored. A missing tensor gives an error wrapping
// ErrMissingTensor, a mis-shaped one ErrShape, an unsupported type
// ErrUnsupportedType; each names the tensor.
func FromTensors(cfg Config, ts map[string]*Tensor) (*Weights, error) {
	var errs []error
	need := func(name string) *Tensor {
		t, ok := ts[name]
		if !ok || t == nil {
			errs = append(errs, fmt.Errorf("%w: %s", ErrMissingTensor, name))
			return nil
		}
		return t
	}
	// vec converts a 1-D tensor of n elements to float32.
	vec := func(name string, n int) []float32 {
		t := need(name)
		if t == nil {
			return nil
		}
		v, err := vector(name, t, n)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	w := &Weights{
		TokenEmbed: need("token_embd.weight"),
		OutNorm:    vec("output_norm.weight", cfg.Dim),
		Output:     ts["output.weight"],
	}
	if w.Output == nil {
		w.Output = w.TokenEmbed
	}
	if _, ok := ts["rope_freqs.weight"]; ok {
		w.RopeFreqs = vec("rope_freqs.weight", cfg.RotaryDim()/2)
	}
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	for i := range max(cfg.NumLayers, 0) {
		p := fmt.Sprintf("blk.%d.", i)
		l := Layer{
			Wq: need(p + "attn_q.weight"),
			Wk: need(p + "attn_k.weight"),
			Wv: need(p + "attn_v.weight"),
			Wo: need(p + "attn_output.weight"),
		}
		if !cfg.NoPreNorms {
			l.AttnNorm, l.FFNNorm = vec(p+"attn_norm.weight", cfg.Dim), vec(p+"ffn_norm.weight", cfg.Dim)
		}
		if cfg.Sparse(i) {
			if err := l.moeFromTensors(cfg, ts, p, need, vec); err != nil {
				errs = append(errs, err)
			}
		} else {
			l.W1, l.W3, l.W2 = need(p+"ffn_gate.weight"), need(p+"ffn_up.weight"), need(p+"ffn_down.weight")
		}
		if cfg.OutBias {
			l.BO = vec(p+"attn_output.bias", cfg.Dim)
		}
		if cfg.AttnSinks {
			l.Sinks = vec(p+"attn_sinks.weight", cfg.NumHeads)
		}
		if cfg.QKVBias {
			l.BQ = vec(p+"attn_q.bias", qd)
			l.BK = vec(p+"attn_k.bias", kvd)
			l.BV = vec(p+"attn_v.bias", kvd)
		}
		if cfg.QKNorm {
			qn, kn := cfg.QKNormDims()
			l.QNorm = vec(p+"attn_q_norm.weight", qn)
			l.KNorm = vec(p+"attn_k_norm.weight", kn)
		}
		if cfg.PostNorms {
			l.PostAttnNorm = vec(p+"post_attention_norm.weight", cfg.Dim)
			l.PostFFNNorm = vec(p+"post_ffw_norm.weight", cfg.Dim)
		}
		w.Layers = append(w.Layers, l)
	}
	cls, err := classifierFromTensors(cfg, ts)
	if err != nil {
		errs = append(errs, err)
	}
	w.Classifier = cls
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := w.Validate(cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// vector converts a float tensor of shape [n] to []float32.
func vector(name string, t *Tensor, n int) ([]float32, error) {
	switch {
	case t.Type != F32 && t.Type != F16 && t.Type != BF16:
		return nil, fmt.Errorf("%w: %s has type %v, want F32, F16 or BF16", ErrUnsupportedType, name, t.Type)
	case !shapeIs(t.Shape, n):
		return nil, fmt.Errorf("%w: %s has shape %v, want [%d]", ErrShape, name, t.Shape, n)
	}
	v := make([]float32, n)
	if err := Dequantize(t.Type, t.Data, v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}
