package loader

import (
	"math"
	"strconv"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// Phi-3 (GGUF phi3: Phi-3 and Phi-3.5 mini and medium, Phi-4) is Llama
// with NEOX RoPE, two fused matrices and, in its 128k versions,
// LongRoPE. llama.cpp's phi3 model reads them so:
//
//   - blk.N.attn_qkv.weight: rows [0, H·D) are Q, the next Hkv·D K, the
//     last Hkv·D V (or separate attn_q, attn_k, attn_v);
//   - blk.N.ffn_up.weight: 2F rows, the first F the gate (ggml's swiglu:
//     silu of the first half times the second), the last F the up
//     projection;
//   - rope_factors_short.weight and rope_factors_long.weight: divisors of
//     the RoPE frequencies, short ones when the context served is at most
//     rope.scaling.original_context_length, long ones beyond; and
//     rope.scaling.attn_factor scales RoPE's cosines and sines.
//
// The attention.sliding_window some files carry is ignored, as llama.cpp
// does (its Phi-3 SWA is disabled).

// splitFused replaces Phi-3's fused attn_qkv and ffn_up by the separate
// tensors the rest of the engine reads: slices of the same bytes, whole
// rows each.
func splitFused(cfg *model.Config, tensors map[string]*model.Tensor) error {
	qd, kvd, f := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim, cfg.FFNDim
	for l := range cfg.NumLayers {
		p := "blk." + strconv.Itoa(l) + "."
		if err := splitRows(tensors, p+"attn_qkv.weight", []string{p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}, []int{qd, kvd, kvd}); err != nil {
			return err
		}
		if _, separate := tensors[p+"ffn_gate.weight"]; separate {
			continue
		}
		if err := splitRows(tensors, p+"ffn_up.weight", []string{p + "ffn_gate.weight", p + "ffn_up.weight"}, []int{f, f}); err != nil {
			return err
		}
	}
	return nil
}

// splitRows replaces tensors[fused] ([in, Σ rows] in ggml order), when
// present, by tensors of rows[i] rows each, named names[i], sharing its
// bytes; an absent one is left for checkTensors to report.
func splitRows(tensors map[string]*model.Tensor, fused string, names []string, rows []int) error {
	t, ok := tensors[fused]
	if !ok {
		return nil
	}
	total := 0
	for _, n := range rows {
		total += n
	}
	if len(t.Shape) < 2 || t.Rows() != total || !t.Type.Supported() || t.Shape[0]%t.Type.BlockSize() != 0 {
		return invalid("fused tensor %q (%v %v) is not %v rows of a supported type", t.Name, typeName(t.Type), t.Shape, rows)
	}
	rb := t.Type.RowBytes(t.Shape[0])
	if len(t.Data) != rb*total {
		return invalid("fused tensor %q has %d bytes of data, want %d", t.Name, len(t.Data), rb*total)
	}
	delete(tensors, fused)
	r0 := 0
	for i, n := range rows {
		tensors[names[i]] = &model.Tensor{Name: names[i], Type: t.Type, Shape: []int{t.Shape[0], n}, Data: t.Data[r0*rb : (r0+n)*rb : (r0+n)*rb]}
		r0 += n
	}
	return nil
}

// ropeFactors makes Phi-3's short LongRoPE factors the rope_freqs.weight
// the engine reads and returns the long ones, for Open to put in their
// place when the served context exceeds the original one; nil without
// them.
func ropeFactors(tensors map[string]*model.Tensor) (long *model.Tensor) {
	short, ok := tensors["rope_factors_short.weight"]
	long = tensors["rope_factors_long.weight"]
	delete(tensors, "rope_factors_short.weight")
	delete(tensors, "rope_factors_long.weight")
	if ok {
		renamed := *short
		renamed.Name = "rope_freqs.weight"
		tensors[renamed.Name] = &renamed
	}
	return long
}

// origContext is the context LongRoPE's short factors cover:
// original_max_position_embeddings (in rope_scaling or at the top), else
// the model's.
func (hc *hfConfig) origContext(cfg *model.Config) int {
	for _, rs := range []*hfRopeScaling{hc.RopeScaling, hc.RopeParameters} {
		if rs != nil && rs.OrigMaxPos != nil {
			return *rs.OrigMaxPos
		}
	}
	if hc.OrigMaxPos != nil {
		return *hc.OrigMaxPos
	}
	return cfg.MaxContextLen
}

// longRope turns a Phi-3 config.json's longrope scaling into what the
// GGUF converter writes: the short factors as rope_freqs.weight (the
// long ones returned, for Open), and attention_factor, or
// sqrt(1 + ln(s)/ln(original)) with s = max_position_embeddings/original,
// as RopeAttnFactor. With partial RoPE (Phi-4-mini) there are R/2 of
// each.
func (hc *hfConfig) longRope(cfg *model.Config, tensors map[string]*model.Tensor) (*model.Tensor, error) {
	rs := hc.ropeScaling()
	if rs == nil || (rs.ShortFactor == nil && rs.LongFactor == nil) {
		return nil, nil
	}
	half := cfg.RotaryDim() / 2
	if len(rs.ShortFactor) != half || len(rs.LongFactor) != half {
		return nil, invalid("LongRoPE has %d short and %d long factors, want %d each", len(rs.ShortFactor), len(rs.LongFactor), half)
	}
	vec := func(name string, v []float64) (*model.Tensor, error) {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return model.NewTensor(name, model.F32, []int{len(f)}, f)
	}
	short, err := vec("rope_freqs.weight", rs.ShortFactor)
	if err != nil {
		return nil, err
	}
	long, err := vec("rope_factors_long.weight", rs.LongFactor)
	if err != nil {
		return nil, err
	}
	tensors["rope_freqs.weight"] = short
	orig := hc.origContext(cfg)
	switch scale := float64(cfg.MaxContextLen) / float64(orig); {
	case rs.AttnFactor != nil:
		cfg.RopeAttnFactor = *rs.AttnFactor
	case scale > 1 && orig > 1:
		cfg.RopeAttnFactor = math.Sqrt(1 + math.Log(scale)/math.Log(float64(orig)))
	}
	return long, nil
}
