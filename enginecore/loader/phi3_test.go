package loader_test

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLoadPhi3 reads Phi-3's fused attn_qkv and ffn_up as the separate
// tensors (Q, K, V rows in that order; the gate, then up), shares the
// file's bytes, and picks the LongRoPE factors as llama.cpp does: short
// ones up to the original context, long ones beyond.
func TestLoadPhi3(t *testing.T) {
	short, long := []float32{1, 1.5, 2, 2.5}, []float32{3, 4, 5, 6}
	spec := testmodel.Spec{Arch: "phi3", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 64,
		ContextLen: 8192, Seed: 16, Quantize: func(typ model.DType, v []float32) []byte { b, _ := model.Quantize(typ, v); return b },
		MatrixType: model.Q8_0, Phi3: testmodel.LongRope{Short: short, Long: long, OrigContextLen: 1024, AttnFactor: 1.19}}
	path := filepath.Join(t.TempDir(), "phi3.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	c := m.Config
	if c.Arch != "phi3" || !c.RopeNeox || c.RopeAttnFactor != 1.19 || c.HeadDim != 8 || c.FFNDim != 64 {
		t.Errorf("config %+v", c)
	}
	want := map[string][]int{"attn_q": {32, 32}, "attn_k": {32, 16}, "attn_v": {32, 16}, "ffn_gate": {32, 64}, "ffn_up": {32, 64}}
	for name, shape := range want {
		if got := m.Tensors["blk.1."+name+".weight"]; got == nil || !cmp.Equal(got.Shape, shape) {
			t.Errorf("blk.1.%s.weight: %+v, want shape %v", name, got, shape)
		}
	}
	if _, fused := m.Tensors["blk.0.attn_qkv.weight"]; fused {
		t.Error("the fused attn_qkv is still there")
	}
	q, v := m.Tensors["blk.0.attn_q.weight"], m.Tensors["blk.0.attn_v.weight"]
	rb := model.Q8_0.RowBytes(32)
	if len(q.Data) != 32*rb || len(v.Data) != 16*rb {
		t.Errorf("Q %d bytes, V %d bytes, want %d and %d", len(q.Data), len(v.Data), 32*rb, 16*rb)
	}
	factors := func(served int) []float32 {
		s, err := loader.Open(path, served)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		return s.Weights.RopeFreqs
	}
	if got := factors(1024); !slices.Equal(got, short) {
		t.Errorf("serving 1024 (the original context): factors %v, want the short ones %v", got, short)
	}
	if got := factors(4096); !slices.Equal(got, long) {
		t.Errorf("serving 4096: factors %v, want the long ones %v", got, long)
	}
}

// TestHFPhi3LongRope: without attention_factor, config.json's LongRoPE
// scales RoPE by sqrt(1 + ln(s)/ln(original)), s the context over the
// original, as HF and llama.cpp's converter do; longrope on another
// architecture, and partial rotary there or over an odd number of dims,
// are refused.
func TestHFPhi3LongRope(t *testing.T) {
	spec := testmodel.Spec{Arch: "phi3", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 4, FFNDim: 48, ContextLen: 131072, Seed: 18,
		Phi3: testmodel.LongRope{Short: []float32{1, 1, 1, 1}, Long: []float32{2, 2, 2, 2}, OrigContextLen: 4096}}
	dir := t.TempDir()
	editHF(t, dir, spec, func(map[string]any, *[]hfTensor) {})
	want := math.Sqrt(1 + math.Log(32)/math.Log(4096))
	if got := load(t, dir).Config.RopeAttnFactor; math.Abs(got-want) > 1e-12 {
		t.Errorf("RopeAttnFactor %v, want %v", got, want)
	}
	runErrorCases(t, []errorCase{
		{"partial rotary over an odd number of dims", func(t *testing.T, dir string) string {
			return editHF(t, dir, spec, func(cfg map[string]any, _ *[]hfTensor) { cfg["partial_rotary_factor"] = 0.375 })
		}, loader.ErrInvalid, "partial_rotary_factor 0.375: RoPE over 3 of 8 dims"},
		{"partial rotary on llama", func(t *testing.T, dir string) string {
			llama := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
			return editHF(t, dir, llama, func(cfg map[string]any, _ *[]hfTensor) { cfg["partial_rotary_factor"] = 0.5 })
		}, loader.ErrUnsupported, "partial_rotary_factor 0.5 (partial RoPE) is not supported for llama"},
		{"longrope on llama", func(t *testing.T, dir string) string {
			llama := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
			return editHF(t, dir, llama, func(cfg map[string]any, _ *[]hfTensor) {
				cfg["rope_scaling"] = map[string]any{"type": "longrope", "short_factor": []float64{1}, "long_factor": []float64{1}}
			})
		}, loader.ErrUnsupported, `RoPE scaling "longrope" is Phi-3's, not llama's`},
	})
}

// TestLoadPhi3PartialRope reads Phi-4-mini's partial RoPE from GGUF
// (rope.dimension_count) and from config.json (partial_rotary_factor)
// alike, with LongRoPE factors for the rotated dims only.
func TestLoadPhi3PartialRope(t *testing.T) {
	spec := testmodel.Spec{Arch: "phi3", VocabSize: 300, Dim: 64, NumLayers: 1, NumHeads: 4, FFNDim: 48, RopeDim: 12, Seed: 19,
		ContextLen: 8192, Phi3: testmodel.LongRope{Short: []float32{1, 1, 1, 1, 1, 1}, Long: []float32{2, 2, 2, 3, 3, 3}, OrigContextLen: 4096, AttnFactor: 1.2}}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "hf")
	if err := testmodel.WriteHF(hf, spec); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, hf} {
		s, err := loader.Open(p, 8192)
		if err != nil {
			t.Fatal(err)
		}
		if s.Config.RopeDim != 12 || s.Config.HeadDim != 16 || !slices.Equal(s.Weights.RopeFreqs, spec.Phi3.Long) {
			t.Errorf("%s: RoPE over %d of %d dims, factors %v; want 12 of 16, %v", filepath.Base(p), s.Config.RopeDim, s.Config.HeadDim, s.Weights.RopeFreqs, spec.Phi3.Long)
		}
		s.Release()
	}
}
