package loader_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// specs are tiny models of each architecture; vocab 300 (ByteVocab).
var specs = []struct {
	name string
	spec testmodel.Spec
	want model.Config // Name is filled per test
}{
	{
		name: "llama-gqa",
		spec: testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, Seed: 1},
		want: model.Config{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 8,
			FFNDim: 48, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2}},
	},
	{
		name: "llama-tied",
		spec: testmodel.Spec{Arch: "llama", VocabSize: 260, Dim: 16, NumLayers: 1, NumHeads: 2, FFNDim: 32, Tied: true, ContextLen: 512, Seed: 2},
		want: model.Config{Arch: "llama", VocabSize: 260, Dim: 16, NumLayers: 1, NumHeads: 2, NumKVHeads: 2, HeadDim: 8,
			FFNDim: 32, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 512, BOSTokenID: 1, EOSTokenIDs: []int32{2}, TiedEmbeddings: true},
	},
	{
		name: "qwen2",
		spec: testmodel.Spec{Arch: "qwen2", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 1, FFNDim: 40, Tied: true, Seed: 3},
		want: model.Config{Arch: "qwen2", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 1, HeadDim: 8,
			FFNDim: 40, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			TiedEmbeddings: true, QKVBias: true},
	},
	{
		name: "qwen3-wide-heads",
		spec: testmodel.Spec{Arch: "qwen3", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, FFNDim: 40, Seed: 4},
		want: model.Config{Arch: "qwen3", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 16,
			FFNDim: 40, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			QKNorm: true},
	},
	{
		name: "smollm3",
		spec: testmodel.Spec{Arch: "smollm3", VocabSize: 300, Dim: 32, NumLayers: 5, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, Tied: true, Seed: 13},
		want: model.Config{Arch: "smollm3", VocabSize: 300, Dim: 32, NumLayers: 5, NumHeads: 4, NumKVHeads: 2, HeadDim: 8,
			FFNDim: 48, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			TiedEmbeddings: true, NoRopeLayers: []bool{false, false, false, true, false}},
	},
	{
		name: "phi3-longrope",
		spec: testmodel.Spec{Arch: "phi3", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, ContextLen: 4096, Seed: 17,
			Phi3: testmodel.LongRope{Short: []float32{1, 1.25, 1.5, 2}, Long: []float32{2, 3, 5, 8}, OrigContextLen: 1024, AttnFactor: 1.1}},
		want: model.Config{Arch: "phi3", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 8,
			FFNDim: 48, RopeTheta: 10000, RopeNeox: true, NormEps: 1e-5, MaxContextLen: 4096, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			RopeAttnFactor: 1.1},
	},
	{
		name: "granite",
		spec: testmodel.Spec{Arch: "granite", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, Tied: true, Seed: 15,
			Granite: testmodel.GraniteScales{Embedding: 12, Attention: 0.0078125, Residual: 0.22, Logit: 8}},
		want: model.Config{Arch: "granite", VocabSize: 300, Dim: 32, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 8,
			FFNDim: 48, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			TiedEmbeddings: true, EmbedScale: 12, AttnScale: 0.0078125, ResidualScale: 0.22, LogitScale: 8},
	},
	{
		name: "gemma2",
		spec: testmodel.Spec{Arch: "gemma2", VocabSize: 300, Dim: 16, NumLayers: 3, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
			FFNDim: 32, Tied: true, Seed: 9, SlidingWindow: 12, AttnSoftcap: 20, FinalSoftcap: 10},
		want: model.Config{Arch: "gemma2", VocabSize: 300, Dim: 16, NumLayers: 3, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
			FFNDim: 32, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			TiedEmbeddings: true, EmbedScale: 4, FFNAct: model.ActGELUTanh, PostNorms: true, SlidingWindow: 12,
			LocalLayers: []bool{true, false, true}, FinalSoftcap: 10, AttnSoftcap: 20},
	},
	{
		name: "gemma3-window",
		spec: testmodel.Spec{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 7, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
			FFNDim: 32, Tied: true, Seed: 5, SlidingWindow: 12, WindowPattern: 3, LocalRopeTheta: 500, FinalSoftcap: 30},
		want: model.Config{Arch: "gemma3", VocabSize: 300, Dim: 16, NumLayers: 7, NumHeads: 2, NumKVHeads: 1, HeadDim: 32,
			FFNDim: 32, RopeTheta: 1e6, RopeNeox: true, NormEps: 1e-6, MaxContextLen: 2048, BOSTokenID: 1, EOSTokenIDs: []int32{2},
			TiedEmbeddings: true, QKNorm: true, EmbedScale: 4, FFNAct: model.ActGELUTanh, PostNorms: true, SlidingWindow: 12,
			LocalLayers: []bool{true, true, false, true, true, false, true}, LocalRopeTheta: 500, FinalSoftcap: 30},
	},
}

// wantShapes lists the tensors a config implies, with ggml shapes.
func wantShapes(c model.Config) map[string][]int {
	d, qd, kvd := c.Dim, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	m := map[string][]int{"token_embd.weight": {d, c.VocabSize}, "output_norm.weight": {d}}
	if !c.TiedEmbeddings {
		m["output.weight"] = []int{d, c.VocabSize}
	}
	for i := range c.NumLayers {
		p := "blk." + string(rune('0'+i)) + "."
		m[p+"attn_norm.weight"] = []int{d}
		m[p+"attn_q.weight"] = []int{d, qd}
		m[p+"attn_k.weight"] = []int{d, kvd}
		m[p+"attn_v.weight"] = []int{d, kvd}
		m[p+"attn_output.weight"] = []int{qd, d}
		m[p+"ffn_norm.weight"] = []int{d}
		m[p+"ffn_gate.weight"] = []int{d, c.FFNDim}
		m[p+"ffn_up.weight"] = []int{d, c.FFNDim}
		m[p+"ffn_down.weight"] = []int{c.FFNDim, d}
		if c.QKVBias {
			m[p+"attn_q.bias"], m[p+"attn_k.bias"], m[p+"attn_v.bias"] = []int{qd}, []int{kvd}, []int{kvd}
		}
		if c.QKNorm {
			m[p+"attn_q_norm.weight"], m[p+"attn_k_norm.weight"] = []int{c.HeadDim}, []int{c.HeadDim}
		}
		if c.PostNorms {
			m[p+"post_attention_norm.weight"], m[p+"post_ffw_norm.weight"] = []int{d}, []int{d}
		}
	}
	if c.RopeAttnFactor > 0 { // the specs' LongRoPE models: the short factors
		m["rope_freqs.weight"] = []int{c.HeadDim / 2}
	}
	return m
}

func shapes(m *loader.Model) map[string][]int {
	out := map[string][]int{}
	for name, t := range m.Tensors {
		if name != t.Name {
			out["mismatched name "+name+" vs "+t.Name] = nil
		}
		out[name] = t.Shape
	}
	return out
}

func load(t *testing.T, path string) *loader.Model {
	t.Helper()
	m, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func TestLoadGGUF(t *testing.T) {
	for _, tt := range specs {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.name+".gguf")
			if err := testmodel.WriteGGUF(path, tt.spec); err != nil {
				t.Fatal(err)
			}
			m := load(t, path)
			want := tt.want
			want.Name = tt.name
			if diff := cmp.Diff(want, m.Config); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantShapes(want), shapes(m)); diff != "" {
				t.Errorf("tensors (-want +got):\n%s", diff)
			}
			if m.Source != path {
				t.Errorf("Source %q", m.Source)
			}
			if _, err := model.FromTensors(m.Config, m.Tensors); err != nil {
				t.Errorf("model.FromTensors: %v", err)
			}
		})
	}
}

// TestLoadHF loads each spec written both ways: the Hugging Face directory
// must give the GGUF file's config and the very same tensor bytes (Llama's
// Q/K rows permuted back).
func TestLoadHF(t *testing.T) {
	for _, tt := range specs {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tt.name)
			if err := testmodel.WriteHF(dir, tt.spec); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), tt.name+".gguf")
			if err := testmodel.WriteGGUF(path, tt.spec); err != nil {
				t.Fatal(err)
			}
			hf, gg := load(t, dir), load(t, path)
			if viaFile := load(t, filepath.Join(dir, "config.json")); viaFile.Source != dir {
				t.Errorf("Load(config.json) loaded %q", viaFile.Source)
			}
			if diff := cmp.Diff(gg.Config, hf.Config); diff != "" {
				t.Errorf("Config (-gguf +hf):\n%s", diff)
			}
			if diff := cmp.Diff(gg.Tensors, hf.Tensors); diff != "" {
				t.Errorf("tensors (-gguf +hf):\n%s", diff)
			}
		})
	}
}

func TestLoadTypes(t *testing.T) {
	// A stand-in quantizer: the right number of bytes is all the loader
	// checks.
	fake := func(typ model.DType, v []float32) []byte { return make([]byte, typ.RowBytes(len(v))) }
	spec := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 256, NumLayers: 1, NumHeads: 4, FFNDim: 256,
		MatrixType: model.Q8_0, Quantize: fake,
		Types: map[string]model.DType{"token_embd.weight": model.BF16, "ffn_down.weight": model.Q4_K, "attn_v.weight": model.F16}}
	path := filepath.Join(t.TempDir(), "q.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	got := map[string]model.DType{}
	for n, ts := range m.Tensors {
		got[n] = ts.Type
	}
	want := map[string]model.DType{
		"token_embd.weight": model.BF16, "output.weight": model.Q8_0, "output_norm.weight": model.F32,
		"blk.0.attn_norm.weight": model.F32, "blk.0.ffn_norm.weight": model.F32,
		"blk.0.attn_q.weight": model.Q8_0, "blk.0.attn_k.weight": model.Q8_0, "blk.0.attn_v.weight": model.F16,
		"blk.0.attn_output.weight": model.Q8_0, "blk.0.ffn_gate.weight": model.Q8_0, "blk.0.ffn_up.weight": model.Q8_0,
		"blk.0.ffn_down.weight": model.Q4_K,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
}

func TestRopeFreqsGGUF(t *testing.T) {
	freqs := []float32{1, 1, 2.5, 8}
	spec := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 16, NumLayers: 1, NumHeads: 2, FFNDim: 16, RopeFreqs: freqs}
	path := filepath.Join(t.TempDir(), "r.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	m := load(t, path)
	got, err := m.Tensors["rope_freqs.weight"].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(freqs, got); diff != "" {
		t.Errorf("rope_freqs (-want +got):\n%s", diff)
	}
	if m.Config.RopeScaling != (model.RopeScaling{}) {
		t.Errorf("RopeScaling %+v, want none (rope_freqs carries it)", m.Config.RopeScaling)
	}
}

// errorCase is a model that must not load.
type errorCase struct {
	name  string
	write func(t *testing.T, dir string) string // returns the path to load
	is    error                                 // ErrUnsupported or ErrInvalid
	want  string                                // substring of the message
}

func runErrorCases(t *testing.T, cases []errorCase) {
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			m, err := loader.Load(tt.write(t, t.TempDir()))
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q is not %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestGGUFRefused(t *testing.T) {
	base := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
	runErrorCases(t, []errorCase{
		{"architecture", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("general.architecture", "mamba") })
		}, loader.ErrUnsupported, `loader: architecture "mamba" is not supported (supported: ernie4_5, ernie4_5-moe, gemma2, gemma3, gpt-oss, granite, granitemoe, llama, olmo2, olmoe, phi3, qwen2, qwen2moe, qwen3, qwen3moe, smollm3)`},
		{"tensor type", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.retype("blk.0.ffn_up.weight", 9) }) // Q8_1
		}, loader.ErrUnsupported, `tensor "blk.0.ffn_up.weight" has type Q8_1, which is not supported`},
		{"vector type", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.retype("output_norm.weight", 8) }) // Q8_0
		}, loader.ErrUnsupported, `vector "output_norm.weight" has type Q8_0`},
		{"dynamic rope scaling", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) {
				kv.set("llama.rope.scaling.type", "dynamic")
				kv.set("llama.rope.scaling.factor", float32(4))
			})
		}, loader.ErrUnsupported, `RoPE scaling "dynamic"`},
		{"partial rope", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("llama.rope.dimension_count", uint32(8)) })
		}, loader.ErrUnsupported, "partial RoPE (8 of 16 dims) is not supported for llama (only phi3)"},
		{"per-layer heads", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("llama.attention.head_count", []uint32{2}) })
		}, loader.ErrUnsupported, "per-layer llama.attention.head_count"},
		{"unknown tensor", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.add("blk.0.attn_output.bias", 32) })
		}, loader.ErrUnsupported, `tensor "blk.0.attn_output.bias" is not supported for architecture "llama"`},
		{"extra layer", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.add("blk.1.attn_norm.weight", 32) })
		}, loader.ErrUnsupported, `"blk.1.attn_norm.weight"`},
		{"missing tensor", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.drop("blk.0.ffn_gate.weight") })
		}, loader.ErrInvalid, `tensor "blk.0.ffn_gate.weight" is missing`},
		{"missing embedding", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(_ *kvs, ts *tensors) { ts.drop("token_embd.weight") })
		}, loader.ErrInvalid, `"token_embd.weight" is missing`},
		{"missing key", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.drop("llama.block_count") })
		}, loader.ErrInvalid, "no llama.block_count"},
		{"wrong shape", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("llama.feed_forward_length", uint32(64)) })
		}, loader.ErrInvalid, `"blk.0.ffn_gate.weight" has shape [32 32], want [32 64]`},
		{"huge block count", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("llama.block_count", uint32(1<<30)) })
		}, loader.ErrInvalid, "1073741824 layers but only"},
		{"heads not divisible", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("llama.attention.head_count_kv", uint32(3)) })
		}, loader.ErrInvalid, "not a multiple"},
		{"classifier labels for another head", func(t *testing.T, dir string) string {
			head := base
			head.Classes, head.Labels = 2, []string{"yes", "no"}
			return rewrite(t, dir, head, func(kv *kvs, _ *tensors) { kv.set("llama.classifier.output_labels", []string{"a", "b", "c"}) })
		}, loader.ErrInvalid, "3 classifier labels for a head of 2 classes"},
		{"classifier head of another width", func(t *testing.T, dir string) string {
			head := base
			head.Classes = 1
			return rewrite(t, dir, head, func(_ *kvs, ts *tensors) { ts.add("cls.output.bias", 2) })
		}, loader.ErrInvalid, `tensor "cls.output.bias" has shape [2], want [1]`},
		{"eos outside vocab", func(t *testing.T, dir string) string {
			return rewrite(t, dir, base, func(kv *kvs, _ *tensors) { kv.set("tokenizer.ggml.eos_token_id", uint32(300)) })
		}, loader.ErrInvalid, "EOS token 300"},
	})
}

func TestNotAModel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.bin")
	writeFile(t, p, []byte("hello"))
	if _, err := loader.Load(p); err == nil || !strings.Contains(err.Error(), "neither a GGUF file") {
		t.Errorf("Load(x.bin) = %v", err)
	}
	if _, err := loader.Load(filepath.Join(dir, "nope")); err == nil {
		t.Error("Load of a missing path succeeded")
	}
	if _, err := loader.Load(dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("Load(empty dir) = %v", err)
	}
}

func TestEOSIDs(t *testing.T) {
	spec := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 16, NumLayers: 1, NumHeads: 2, FFNDim: 16}
	path := rewrite(t, t.TempDir(), spec, func(kv *kvs, _ *tensors) {
		kv.set("tokenizer.ggml.eot_token_id", uint32(7))
		kv.set("tokenizer.ggml.eom_token_id", uint32(2)) // a duplicate of EOS
	})
	m := load(t, path)
	if !slices.Equal(m.Config.EOSTokenIDs, []int32{2, 7}) {
		t.Errorf("EOSTokenIDs %v, want [2 7]", m.Config.EOSTokenIDs)
	}
}
