package model

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// qwenLike is a small Qwen3-style config (QKV bias and QK norm) whose rows
// are multiples of 256 so that every type fits.
func qwenLike() Config {
	return Config{
		Name: "tiny", Arch: "qwen3", VocabSize: 64, Dim: 256, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		HeadDim: 64, FFNDim: 512, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6,
		QKVBias: true, QKNorm: true, TiedEmbeddings: true,
	}
}

func TestFromTensorsRoundTrip(t *testing.T) {
	cfg := qwenLike()
	for _, typ := range []DType{Q4_0, Q8_0, F16} {
		t.Run(typ.String(), func(t *testing.T) {
			w, err := Random(cfg, RandomTypes{Matrix: typ, Embed: Q6_K}, 3)
			if err != nil {
				t.Fatal(err)
			}
			ts := w.Tensors()
			if _, ok := ts["output.weight"]; ok {
				t.Error("tied model exports output.weight")
			}
			got, err := FromTensors(cfg, ts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Output != got.TokenEmbed {
				t.Error("missing output.weight did not tie to token_embd")
			}
			if got.Layers[1].W2 != w.Layers[1].W2 || got.Layers[1].W2.Type != typ {
				t.Error("ffn_down not passed through")
			}
			if !slices.Equal(got.Layers[0].BK, w.Layers[0].BK) || !slices.Equal(got.Layers[1].QNorm, w.Layers[1].QNorm) {
				t.Error("bias or QK norm changed on the way")
			}
		})
	}
}

func TestFromTensorsErrors(t *testing.T) {
	cfg := qwenLike()
	w, err := Random(cfg, RandomTypes{Matrix: Q4_0, Embed: Q8_0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	f16Norm, _ := NewTensor("x", F16, []int{256}, make([]float32, 256))
	tests := []struct {
		name    string
		edit    func(map[string]*Tensor)
		want    error
		mention string // the error must name this
	}{
		{"ok", func(map[string]*Tensor) {}, nil, ""},
		{"f16 norm is converted", func(ts map[string]*Tensor) { ts["blk.1.ffn_norm.weight"] = f16Norm }, nil, ""},
		{"missing ffn_up", func(ts map[string]*Tensor) { delete(ts, "blk.1.ffn_up.weight") }, ErrMissingTensor, "blk.1.ffn_up.weight"},
		{"missing bias", func(ts map[string]*Tensor) { delete(ts, "blk.0.attn_v.bias") }, ErrMissingTensor, "blk.0.attn_v.bias"},
		{"missing q norm", func(ts map[string]*Tensor) { delete(ts, "blk.0.attn_q_norm.weight") }, ErrMissingTensor, "blk.0.attn_q_norm.weight"},
		{"transposed", func(ts map[string]*Tensor) {
			c := *ts["blk.0.attn_output.weight"]
			c.Shape = []int{256, 256, 1}
			ts["blk.0.ffn_down.weight"] = &c
		}, ErrShape, "blk.0.ffn_down.weight"},
		{"bias wrong length", func(ts map[string]*Tensor) { ts["blk.1.attn_q.bias"] = ts["blk.1.attn_k.bias"] }, ErrShape, "blk.1.attn_q.bias"},
		{"unsupported type", func(ts map[string]*Tensor) {
			c := *ts["blk.1.attn_q.weight"]
			c.Type = 16 // IQ2_XXS
			ts["blk.1.attn_q.weight"] = &c
		}, ErrUnsupportedType, "DType(16)"},
		{"quantized norm", func(ts map[string]*Tensor) { ts["output_norm.weight"] = ts["blk.0.attn_k.weight"] }, ErrUnsupportedType, "output_norm.weight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := w.Tensors()
			tt.edit(ts)
			_, err := FromTensors(cfg, ts)
			if (tt.want == nil) != (err == nil) || (err != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("FromTensors = %v, want %v", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not name %s", err, tt.mention)
			}
		})
	}
}
