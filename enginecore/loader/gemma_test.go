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

// TestLoadHFGemma3 reads Gemma3ForCausalLM's config.json the ways
// transformers writes it: layer_types, rope_parameters keyed by layer
// type (v5), and a query_pre_attn_scalar other than the head dim.
func TestLoadHFGemma3(t *testing.T) {
	base := testmodel.Spec{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 4, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
		FFNDim: 32, Tied: true, Seed: 7, SlidingWindow: 12}
	tests := []struct {
		name  string
		edit  func(cfg map[string]any)
		check func(t *testing.T, c model.Config)
	}{
		{"layer_types", func(cfg map[string]any) {
			delete(cfg, "sliding_window_pattern")
			cfg["layer_types"] = []string{"full_attention", "sliding_attention", "sliding_attention", "full_attention"}
		}, func(t *testing.T, c model.Config) {
			if !cmp.Equal(c.LocalLayers, []bool{false, true, true, false}) {
				t.Errorf("local %v", c.LocalLayers)
			}
		}},
		{"rope_parameters by layer type", func(cfg map[string]any) {
			delete(cfg, "rope_theta")
			delete(cfg, "rope_local_base_freq")
			cfg["rope_parameters"] = map[string]any{
				"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0 / 4},
			}
		}, func(t *testing.T, c model.Config) {
			want := model.RopeScaling{Type: "linear", Factor: 8}
			if c.RopeTheta != 1e6 || c.RopeScaling != want || c.LocalRopeTheta != 2500 {
				t.Errorf("rope theta %g, scaling %+v, local theta %g", c.RopeTheta, c.RopeScaling, c.LocalRopeTheta)
			}
		}},
		{"query_pre_attn_scalar", func(cfg map[string]any) { cfg["query_pre_attn_scalar"] = 64 }, func(t *testing.T, c model.Config) {
			if got := c.Scale(); got != 1.0/8 {
				t.Errorf("attention scale %g, want 1/8", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			editHF(t, dir, base, func(cfg map[string]any, _ *[]hfTensor) { tt.edit(cfg) })
			tt.check(t, load(t, dir).Config)
		})
	}
}

// TestHFGemma3Refused checks what Tandem does not compute fails with the
// reason: Gemma 2's attention softcap, another activation, and
// layer_types of the wrong length.
func TestHFGemma3Refused(t *testing.T) {
	base := testmodel.Spec{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 2, NumHeads: 2, FFNDim: 32, Seed: 8, SlidingWindow: 8}
	hf := func(edit func(cfg map[string]any)) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string {
			return editHF(t, dir, base, func(cfg map[string]any, _ *[]hfTensor) { edit(cfg) })
		}
	}
	runErrorCases(t, []errorCase{
		{"attention softcap", hf(func(cfg map[string]any) { cfg["attn_logit_softcapping"] = 50.0 }),
			loader.ErrUnsupported, "attn_logit_softcapping is Gemma 2's, not gemma3's"},
		{"erf gelu", hf(func(cfg map[string]any) { cfg["hidden_activation"] = "gelu" }),
			loader.ErrUnsupported, `hidden_activation "gelu" is not supported`},
		{"layer_types length", hf(func(cfg map[string]any) { cfg["layer_types"] = []string{"full_attention"} }),
			loader.ErrInvalid, "layer_types lists 1 layers, num_hidden_layers is 2"},
	})
}

// TestLoadGemma2Defaults reads a Gemma 2 file without the optional keys
// as llama.cpp does: a 4096-token window on every other layer (layer 0
// local), rotating as the global ones, and soft-caps 50 (attention) and
// 30 (logits).
func TestLoadGemma2Defaults(t *testing.T) {
	spec := testmodel.Spec{Arch: "gemma2", VocabSize: 300, Dim: 16, NumLayers: 4, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
		FFNDim: 32, Tied: true, Seed: 10}
	path := rewrite(t, t.TempDir(), spec, func(*kvs, *tensors) {})
	c := load(t, path).Config
	if c.SlidingWindow != 4096 || !cmp.Equal(c.LocalLayers, []bool{true, false, true, false}) || c.LocalRopeTheta != 0 ||
		c.AttnSoftcap != 50 || c.FinalSoftcap != 30 || c.QKNorm || !c.PostNorms || c.EmbedScale != 4 {
		t.Errorf("window %d, local %v, local theta %g, softcaps %g/%g, QK norm %v, post-norms %v, embed scale %g",
			c.SlidingWindow, c.LocalLayers, c.LocalRopeTheta, c.AttnSoftcap, c.FinalSoftcap, c.QKNorm, c.PostNorms, c.EmbedScale)
	}
}
