package loader_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// moeSpecs are small mixtures of experts of each family, with the
// config each must load as.
var moeSpecs = []moeSpec{
	{"mixtral", testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 48,
		Experts: 4, ExpertsUsed: 2, Seed: 21},
		model.Config{NumExperts: 4, NumExpertsUsed: 2, ExpertFFNDim: 48, ExpertWeightsNorm: true}},
	{"qwen2moe", testmodel.Spec{Arch: "qwen2moe", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 64,
		Experts: 6, ExpertsUsed: 3, ExpertFFNDim: 16, SharedFFNDim: 40, Seed: 22},
		model.Config{NumExperts: 6, NumExpertsUsed: 3, ExpertFFNDim: 16, SharedExpertFFNDim: 40, SharedExpertGate: true}},
	{"granitemoe", testmodel.Spec{Arch: "granitemoe", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 24,
		Experts: 5, ExpertsUsed: 2, Seed: 24, Granite: testmodel.GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.22, Logit: 6}},
		model.Config{NumExperts: 5, NumExpertsUsed: 2, ExpertFFNDim: 24, ExpertWeightsNorm: true}},
	{"granitemoe shared", testmodel.Spec{Arch: "granitemoe", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 24,
		Experts: 5, ExpertsUsed: 2, SharedFFNDim: 40, Seed: 25, Granite: testmodel.GraniteScales{Logit: 6}},
		model.Config{NumExperts: 5, NumExpertsUsed: 2, ExpertFFNDim: 24, ExpertWeightsNorm: true, SharedExpertFFNDim: 40}},
	{"olmoe", testmodel.Spec{Arch: "olmoe", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 24,
		Experts: 6, ExpertsUsed: 2, Seed: 29},
		model.Config{NumExperts: 6, NumExpertsUsed: 2, ExpertFFNDim: 24}},
	{"ernie4_5-moe", testmodel.Spec{Arch: "ernie4_5-moe", VocabSize: 300, Dim: 32, NumLayers: 3, NumHeads: 4, NumKVHeads: 2, FFNDim: 48,
		Experts: 4, ExpertsUsed: 2, ExpertFFNDim: 16, SharedFFNDim: 32, DenseLead: 1, SelectionBias: 0.2, Tied: true, Seed: 26},
		model.Config{NumExperts: 4, NumExpertsUsed: 2, ExpertFFNDim: 16, ExpertWeightsNorm: true, SharedExpertFFNDim: 32, MoELayers: []bool{false, true, true}}},
	{"qwen3moe", testmodel.Spec{Arch: "qwen3moe", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 64,
		Experts: 8, ExpertsUsed: 2, ExpertFFNDim: 24, NormTopK: true, Seed: 23},
		model.Config{NumExperts: 8, NumExpertsUsed: 2, ExpertFFNDim: 24, ExpertWeightsNorm: true}},
}

type moeSpec struct {
	name string
	spec testmodel.Spec
	want model.Config // the MoE fields only
}

// moeFields is the MoE part of c.
func moeFields(c model.Config) model.Config {
	return model.Config{NumExperts: c.NumExperts, NumExpertsUsed: c.NumExpertsUsed, ExpertFFNDim: c.ExpertFFNDim,
		ExpertWeightsNorm: c.ExpertWeightsNorm, SharedExpertFFNDim: c.SharedExpertFFNDim, SharedExpertGate: c.SharedExpertGate, MoELayers: c.MoELayers}
}

// TestLoadMoE loads each family's mixture of experts from GGUF (experts
// stacked in ffn_*_exps, viewed in place) and from a Hugging Face
// directory (one tensor per expert), and checks both give the config
// llama.cpp and transformers read and the same weights, expert by
// expert.
func TestLoadMoE(t *testing.T) {
	for _, tt := range moeSpecs {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "m.gguf")
			if err := testmodel.WriteGGUF(path, tt.spec); err != nil {
				t.Fatal(err)
			}
			hf := filepath.Join(dir, "hf")
			if err := testmodel.WriteHF(hf, tt.spec); err != nil {
				t.Fatal(err)
			}
			var weights []map[string][]float32
			for _, p := range []string{path, hf} {
				s, err := loader.Open(p, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Release() })
				if got := moeFields(s.Config); !cmp.Equal(got, tt.want) {
					t.Errorf("%s: MoE config %+v, want %+v", filepath.Base(p), got, tt.want)
				}
				l := s.Weights.Layers[1]
				if l.W1 != nil || len(l.Experts) != tt.want.NumExperts || (l.SharedGate != nil) != tt.want.SharedExpertGate || (l.Shared.W2 != nil) != (tt.want.SharedExpertFFNDim > 0) {
					t.Fatalf("%s: layer 1 has dense %v, %d experts, shared gate %v", filepath.Base(p), l.W1 != nil, len(l.Experts), l.SharedGate != nil)
				}
				weights = append(weights, weightFloats(t, s.Weights))
			}
			if _, ok := weights[0]["blk.1.ffn_down.3.weight"]; !ok {
				t.Fatalf("no expert 3 in %v", keys(weights[0]))
			}
			if diff := cmp.Diff(weights[0], weights[1]); diff != "" {
				t.Errorf("GGUF and Hugging Face weights differ (-gguf +hf):\n%.2000s", diff)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestLoadMoERefused checks what a mixture of experts is refused for.
func TestLoadMoERefused(t *testing.T) {
	qwen3 := moeSpecs[slices.IndexFunc(moeSpecs, func(m moeSpec) bool { return m.name == "qwen3moe" })].spec
	runErrorCases(t, []errorCase{
		{"no expert_count", func(t *testing.T, dir string) string {
			return rewrite(t, dir, qwen3, func(k *kvs, _ *tensors) { k.drop("qwen3moe.expert_count") })
		}, loader.ErrInvalid, "no qwen3moe.expert_count"},
		{"more experts used than there are", func(t *testing.T, dir string) string {
			return rewrite(t, dir, qwen3, func(k *kvs, _ *tensors) { k.set("qwen3moe.expert_used_count", uint32(9)) })
		}, loader.ErrInvalid, "9 experts used per token of 8"},
		{"experts used per layer", func(t *testing.T, dir string) string {
			return rewrite(t, dir, qwen3, func(k *kvs, _ *tensors) { k.set("qwen3moe.expert_used_count", []uint32{2, 2}) })
		}, loader.ErrUnsupported, "per-layer qwen3moe.expert_used_count"},
		{"a missing expert stack", func(t *testing.T, dir string) string {
			return rewrite(t, dir, qwen3, func(_ *kvs, ts *tensors) { ts.drop("blk.1.ffn_up_exps.weight") })
		}, loader.ErrInvalid, `"blk.1.ffn_up_exps.weight" is missing`},
		{"a dense MLP in a mixture", func(t *testing.T, dir string) string {
			return rewrite(t, dir, qwen3, func(_ *kvs, ts *tensors) { ts.add("blk.0.ffn_gate.weight", 32) })
		}, loader.ErrUnsupported, `"blk.0.ffn_gate.weight" is not supported`},
		{"hf mlp_only_layers without the dense layer's tensors", func(t *testing.T, dir string) string {
			return editHF(t, dir, qwen3, func(cfg map[string]any, _ *[]hfTensor) { cfg["mlp_only_layers"] = []int{0} })
		}, loader.ErrInvalid, `"blk.0.ffn_gate.weight" is missing`},
		{"hf decoder_sparse_step 0", func(t *testing.T, dir string) string {
			return editHF(t, dir, qwen3, func(cfg map[string]any, _ *[]hfTensor) { cfg["decoder_sparse_step"] = 0 })
		}, loader.ErrInvalid, "decoder_sparse_step 0"},
		{"hf a missing expert", func(t *testing.T, dir string) string {
			return editHF(t, dir, qwen3, func(_ map[string]any, ts *[]hfTensor) {
				for i, e := range *ts {
					if e.name == "model.layers.0.mlp.experts.5.up_proj.weight" {
						*ts = append((*ts)[:i], (*ts)[i+1:]...)
						return
					}
				}
				t.Fatal("no expert 5")
			})
		}, loader.ErrInvalid, `"blk.0.ffn_up.5.weight" is missing`},
	})
}

// TestLoadZeroExperts: a llama file whose expert_count is 0, of any
// integer type, is a dense model (llama.cpp's converter writes the key
// for Mistral too).
func TestLoadZeroExperts(t *testing.T) {
	dense := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
	for _, zero := range []any{uint32(0), int32(0), uint64(0)} {
		path := rewrite(t, t.TempDir(), dense, func(k *kvs, _ *tensors) { k.set("llama.expert_count", zero) })
		if m := load(t, path); m.Config.NumExperts != 0 || m.Config.NumExpertsUsed != 0 {
			t.Errorf("expert_count %T 0: %d experts, %d used", zero, m.Config.NumExperts, m.Config.NumExpertsUsed)
		}
	}
}

// TestHFErnieCheckpoints reads ERNIE 4.5's own checkpoint layouts as
// llama.cpp's converter does: tensors under ernie. instead of model., and
// Q, K, V fused in qkv_proj and the gate and up projections in
// up_gate_proj (the gate's rows first, despite the name).
func TestHFErnieCheckpoints(t *testing.T) {
	spec := testmodel.Spec{Arch: "ernie4_5", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, Tied: true, Seed: 27}
	want := floatsOf(t, editHF(t, t.TempDir(), spec, func(map[string]any, *[]hfTensor) {}))
	got := floatsOf(t, editHF(t, t.TempDir(), spec, func(_ map[string]any, ts *[]hfTensor) {
		byName := map[string]hfTensor{}
		for _, e := range *ts {
			byName[e.name] = e
		}
		fuse := func(p, fused string, parts ...string) {
			out := hfTensor{name: p + fused, dtype: byName[p+parts[0]].dtype}
			rows := uint64(0)
			for _, part := range parts {
				e := byName[p+part]
				out.data, rows = append(out.data, e.data...), rows+e.shape[0]
				out.shape = []uint64{rows, e.shape[1]}
				delete(byName, p+part)
			}
			byName[out.name] = out
		}
		for l := range spec.NumLayers {
			p := fmt.Sprintf("model.layers.%d.", l)
			fuse(p, "self_attn.qkv_proj.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight")
			fuse(p, "mlp.up_gate_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight")
		}
		*ts = (*ts)[:0]
		for name, e := range byName {
			e.name = strings.Replace(name, "model.", "ernie.", 1)
			*ts = append(*ts, e)
		}
	}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fused ernie.* checkpoint differs (-separate +fused):\n%.2000s", diff)
	}
}

// floatsOf loads the model at path and returns its weights as floats by
// GGUF name.
func floatsOf(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	s, err := loader.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	return weightFloats(t, s.Weights)
}

// weightFloats is w as floats by GGUF name.
func weightFloats(t *testing.T, w *model.Weights) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for name, x := range w.Tensors() {
		var err error
		if out[name], err = x.Float32s(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestHFQwenDenseLayers reads a Qwen MoE checkpoint's dense layers
// (mlp_only_layers, decoder_sparse_step) as transformers does: dense
// MLPs of intermediate_size, the other layers mixtures.
func TestHFQwenDenseLayers(t *testing.T) {
	spec := testmodel.Spec{Arch: "qwen3moe", VocabSize: 300, Dim: 32, NumLayers: 3, NumHeads: 4, NumKVHeads: 2, FFNDim: 40,
		Experts: 4, ExpertsUsed: 2, ExpertFFNDim: 16, NormTopK: true, DenseLead: 1, Seed: 28}
	dir := t.TempDir()
	if err := testmodel.WriteHF(dir, spec); err != nil {
		t.Fatal(err)
	}
	s, err := loader.Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if got := s.Config.MoELayers; !slices.Equal(got, []bool{false, true, true}) {
		t.Errorf("MoELayers %v", got)
	}
	if l := s.Weights.Layers[0]; l.W1 == nil || l.W1.Rows() != 40 || l.Experts != nil {
		t.Errorf("layer 0: dense %v, %d experts", l.W1 != nil, len(l.Experts))
	}
	step := t.TempDir()
	editHF(t, step, spec, func(cfg map[string]any, _ *[]hfTensor) {
		cfg["mlp_only_layers"], cfg["decoder_sparse_step"] = []int{}, 3 // only layer 2 sparse: the files' layer 1 experts are then unknown
	})
	if _, err := loader.Open(step, 0); err == nil || !strings.Contains(err.Error(), "blk.1.ffn_gate.weight") {
		t.Errorf("decoder_sparse_step 3: %v, want layer 1's dense MLP missing", err)
	}
	if err := testmodel.WriteGGUF(filepath.Join(t.TempDir(), "m.gguf"), spec); err == nil {
		t.Error("a qwen3moe GGUF with dense layers was written")
	}
}
