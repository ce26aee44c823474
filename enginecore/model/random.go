package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// RandomTypes picks the tensor types of a Random model.
type RandomTypes struct {
	Matrix DType // every layer matrix (attn_*, ffn_*) but those below
	// Down and V, unless zero (F32: then Matrix), are ffn_down's and
	// attn_v's type in every other layer, as llama.cpp's Q4_K_M gives
	// half of them Q6_K.
	Down, V DType
	Embed   DType // token_embd.weight
	Output  DType // output.weight; ignored when cfg.TiedEmbeddings
}

// Random draws a model with cfg's shape and random weights, quantized to
// the given types: the benchmark and test stand-in for a real file (like
// vLLM's --load-format dummy). Matrices have std 1/sqrt(in), token_embd
// std 1, an untied output 4/sqrt(Dim), norm gains 1+0.02·N, biases
// 0.1·N; draws come from PCG(seed, 0) in GGUF tensor order. Vectors are
// float32. A mixture of experts draws its router (float32, std
// 1/sqrt(Dim)), then each expert's matrices, then the shared expert's
// and its gate. Quantizing is the slow part: about 1 s per 100M weights.
func Random(cfg Config, types RandomTypes, seed uint64) (*Weights, error) {
	rng := rand.New(rand.NewPCG(seed, 0))
	normal := func(n int, mean, std float64) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(mean + std*rng.NormFloat64())
		}
		return s
	}
	var err error
	matrix := func(name string, typ DType, out, in int, std float64) *Tensor {
		if err != nil {
			return nil
		}
		var t *Tensor
		t, err = NewTensor(name, typ, []int{in, out}, normal(out*in, 0, std))
		return t
	}
	d, f := cfg.Dim, cfg.FFNDim
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	w := &Weights{TokenEmbed: matrix("token_embd.weight", types.Embed, cfg.VocabSize, d, 1)}
	for i := range cfg.NumLayers {
		p := "blk." + strconv.Itoa(i) + "."
		m, down, v := types.Matrix, types.Matrix, types.Matrix
		if types.Down != 0 && i%2 == 0 {
			down = types.Down
		}
		if types.V != 0 && i%2 == 0 {
			v = types.V
		}
		l := Layer{AttnNorm: normal(d, 1, 0.02)}
		l.Wq = matrix(p+"attn_q.weight", m, qd, d, 1/math.Sqrt(float64(d)))
		l.Wk = matrix(p+"attn_k.weight", m, kvd, d, 1/math.Sqrt(float64(d)))
		l.Wv = matrix(p+"attn_v.weight", v, kvd, d, 1/math.Sqrt(float64(d)))
		if cfg.QKVBias {
			l.BQ, l.BK, l.BV = normal(qd, 0, 0.1), normal(kvd, 0, 0.1), normal(kvd, 0, 0.1)
		}
		if cfg.QKNorm {
			qn, kn := cfg.QKNormDims()
			l.QNorm, l.KNorm = normal(qn, 1, 0.02), normal(kn, 1, 0.02)
		}
		l.Wo = matrix(p+"attn_output.weight", m, d, qd, 1/math.Sqrt(float64(qd)))
		l.FFNNorm = normal(d, 1, 0.02)
		mlp := func(infix string, f int) Expert {
			return Expert{
				W1: matrix(p+"ffn_gate"+infix+".weight", m, f, d, 1/math.Sqrt(float64(d))),
				W3: matrix(p+"ffn_up"+infix+".weight", m, f, d, 1/math.Sqrt(float64(d))),
				W2: matrix(p+"ffn_down"+infix+".weight", down, d, f, 1/math.Sqrt(float64(f))),
			}
		}
		if cfg.Sparse(i) {
			l.Router = matrix(p+"ffn_gate_inp.weight", F32, cfg.NumExperts, d, 1/math.Sqrt(float64(d)))
			for e := range cfg.NumExperts {
				l.Experts = append(l.Experts, mlp("."+strconv.Itoa(e), cfg.ExpertFFNDim))
			}
			if cfg.SharedExpertFFNDim > 0 {
				l.Shared = mlp("_shexp", cfg.SharedExpertFFNDim)
			}
			if cfg.SharedExpertGate {
				l.SharedGate = normal(d, 0, 1/math.Sqrt(float64(d)))
			}
		} else {
			x := mlp("", f)
			l.W1, l.W3, l.W2 = x.W1, x.W3, x.W2
		}
		if cfg.PostNorms {
			l.PostAttnNorm, l.PostFFNNorm = normal(d, 1, 0.02), normal(d, 1, 0.02)
		}
		if cfg.NoPreNorms { // drawn all the same, so that the other weights do not change
			l.AttnNorm, l.FFNNorm = nil, nil
		}
		w.Layers = append(w.Layers, l)
	}
	w.OutNorm = normal(d, 1, 0.02)
	if cfg.TiedEmbeddings {
		w.Output = w.TokenEmbed
	} else {
		w.Output = matrix("output.weight", types.Output, cfg.VocabSize, d, 4/math.Sqrt(float64(d)))
	}
	if err != nil {
		return nil, fmt.Errorf("model: random weights: %w", err)
	}
	if err := w.Validate(cfg); err != nil {
		return nil, err
	}
	return w, nil
}

// Tensors returns w keyed by GGUF name (the inverse of FromTensors), with
// vectors as F32 tensors; output.weight is left out when tied, experts
// are one ffn_{gate,up,down}.E.weight each. Matrices are shared, not
// copied.
func (w *Weights) Tensors() map[string]*Tensor {
	ts := map[string]*Tensor{"token_embd.weight": w.TokenEmbed}
	vec := func(name string, v []float32) {
		if v != nil {
			t, _ := NewTensor(name, F32, []int{len(v)}, v) // F32 cannot fail
			ts[name] = t
		}
	}
	vec("output_norm.weight", w.OutNorm)
	vec("rope_freqs.weight", w.RopeFreqs)
	if w.Output != w.TokenEmbed {
		ts["output.weight"] = w.Output
	}
	for i, l := range w.Layers {
		p := "blk." + strconv.Itoa(i) + "."
		vec(p+"attn_norm.weight", l.AttnNorm)
		vec(p+"attn_q.bias", l.BQ)
		vec(p+"attn_k.bias", l.BK)
		vec(p+"attn_v.bias", l.BV)
		vec(p+"attn_q_norm.weight", l.QNorm)
		vec(p+"attn_k_norm.weight", l.KNorm)
		vec(p+"ffn_norm.weight", l.FFNNorm)
		vec(p+"post_attention_norm.weight", l.PostAttnNorm)
		vec(p+"post_ffw_norm.weight", l.PostFFNNorm)
		vec(p+"ffn_gate_inp_shexp.weight", l.SharedGate)
		vec(p+"exp_probs_b.bias", l.ExpertBias)
		mats := map[string]*Tensor{
			"attn_q.weight": l.Wq, "attn_k.weight": l.Wk, "attn_v.weight": l.Wv, "attn_output.weight": l.Wo,
			"ffn_gate.weight": l.W1, "ffn_up.weight": l.W3, "ffn_down.weight": l.W2, "ffn_gate_inp.weight": l.Router,
			"ffn_gate_shexp.weight": l.Shared.W1, "ffn_up_shexp.weight": l.Shared.W3, "ffn_down_shexp.weight": l.Shared.W2,
		}
		for e, x := range l.Experts {
			for name, t := range map[string]*Tensor{"ffn_gate": x.W1, "ffn_up": x.W3, "ffn_down": x.W2} {
				mats[name+"."+strconv.Itoa(e)+".weight"] = t
			}
		}
		for name, t := range mats {
			if t != nil {
				ts[p+name] = t
			}
		}
	}
	return ts
}
