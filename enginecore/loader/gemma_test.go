package loader_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLoadGemma3 reads Gemma 3's hyper-parameters as llama.cpp does:
// which layers are local (the pattern's default of 6, another period,
// 0 for all, or one flag per layer), the local RoPE base (default
// 10000), the 27B's query scale, and the optional logit softcap.
func TestLoadGemma3(t *testing.T) {
	base := testmodel.Spec{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 7, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
		FFNDim: 32, Seed: 5, SlidingWindow: 12}
	flags := func(s string) []bool {
		out := make([]bool, len(s))
		for i, c := range s {
			out[i] = c == 'L'
		}
		return out
	}
	tests := []struct {
		name  string
		edit  func(*testmodel.Spec)
		kv    func(*kvs) // edits the written metadata; nil: none
		check func(t *testing.T, c model.Config)
	}{
		{"default pattern", nil, nil, func(t *testing.T, c model.Config) {
			want := model.Config{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 7, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
				FFNDim: 32, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6, MaxContextLen: 2048, BOSTokenID: 1,
				EOSTokenIDs: []int32{2}, QKNorm: true, EmbedScale: 4, FFNAct: model.ActGELUTanh, PostNorms: true,
				SlidingWindow: 12, LocalLayers: flags("LLLLLGL"), LocalRopeTheta: 10000, Name: "m"}
			if diff := cmp.Diff(want, c); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			if got := c.Scale(); got != 1/math.Sqrt(32) {
				t.Errorf("attention scale %g, want 1/√32", got)
			}
		}},
		{"pattern 3, local base 500, softcap", func(s *testmodel.Spec) {
			s.WindowPattern, s.LocalRopeTheta, s.FinalSoftcap = 3, 500, 30
		}, nil, func(t *testing.T, c model.Config) {
			if !cmp.Equal(c.LocalLayers, flags("LLGLLGL")) || c.LocalRopeTheta != 500 || c.FinalSoftcap != 30 {
				t.Errorf("local %v, base %g, softcap %g", c.LocalLayers, c.LocalRopeTheta, c.FinalSoftcap)
			}
		}},
		{"pattern 0: all local", nil, func(k *kvs) { k.set("gemma3.attention.sliding_window_pattern", uint32(0)) }, func(t *testing.T, c model.Config) {
			if !cmp.Equal(c.LocalLayers, flags("LLLLLLL")) {
				t.Errorf("local %v", c.LocalLayers)
			}
		}},
		{"per-layer flags", nil, func(k *kvs) {
			k.set("gemma3.attention.sliding_window_pattern", flags("GLGLGLL"))
		}, func(t *testing.T, c model.Config) {
			if !cmp.Equal(c.LocalLayers, flags("GLGLGLL")) {
				t.Errorf("local %v", c.LocalLayers)
			}
		}},
		{"no window", func(s *testmodel.Spec) { s.SlidingWindow = 0 }, nil, func(t *testing.T, c model.Config) {
			if c.SlidingWindow != 0 || c.LocalLayers != nil || c.LocalRopeTheta != 0 {
				t.Errorf("window %d, local %v, base %g", c.SlidingWindow, c.LocalLayers, c.LocalRopeTheta)
			}
		}},
		{"27B query scale", func(s *testmodel.Spec) { s.NumLayers = 62 }, nil, func(t *testing.T, c model.Config) {
			if got, want := c.Scale(), 1/math.Sqrt(8); got != want { // Dim/H = 8, not HeadDim 32
				t.Errorf("attention scale %g, want %g", got, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := base
			if tt.edit != nil {
				tt.edit(&spec)
			}
			path := rewrite(t, t.TempDir(), spec, func(k *kvs, _ *tensors) {
				if tt.kv != nil {
					tt.kv(k)
				}
			})
			m := load(t, path)
			m.Config.Name = "m"
			tt.check(t, m.Config)
			w, err := model.FromTensors(m.Config, m.Tensors)
			if err != nil {
				t.Fatalf("model.FromTensors: %v", err)
			}
			if w.Layers[0].PostAttnNorm == nil || w.Layers[0].PostFFNNorm == nil {
				t.Error("post-norms not loaded")
			}
		})
	}
}

// TestGemma3Refused checks malformed Gemma 3 files fail with the reason.
func TestGemma3Refused(t *testing.T) {
	base := testmodel.Spec{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 2, NumHeads: 2, FFNDim: 32, Seed: 6, SlidingWindow: 8}
	runErrorCases(t, []errorCase{
		{"flags not per layer", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(k *kvs, _ *tensors) { k.set("gemma3.attention.sliding_window_pattern", []bool{true}) })
		}, loader.ErrInvalid, "gemma3.attention.sliding_window_pattern is not one flag per layer"},
		{"post-norm missing", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.drop("blk.1.post_ffw_norm.weight") })
		}, loader.ErrInvalid, `tensor "blk.1.post_ffw_norm.weight" is missing`},
	})
}
