package loader_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// hfTensor is a safetensors entry in row-major (Hugging Face) shape.
type hfTensor struct {
	name  string
	dtype string
	shape []uint64
	data  []byte
}

// writeHF writes config.json and model.safetensors to dir.
func writeHF(t *testing.T, dir string, cfg map[string]any, ts []hfTensor) string {
	t.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "config.json"), js)
	w := safetensors.NewWriter()
	for _, e := range ts {
		if err := w.Add(e.name, e.dtype, e.shape, e.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "model.safetensors"), buf.Bytes())
	return dir
}

// editHF writes spec as a Hugging Face directory, then lets edit change
// config.json and the tensors.
func editHF(t *testing.T, dir string, spec testmodel.Spec, edit func(cfg map[string]any, ts *[]hfTensor)) string {
	t.Helper()
	if err := testmodel.WriteHF(dir, spec); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{}
	if err := json.Unmarshal(js, &cfg); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []hfTensor
	for _, ti := range f.Infos() {
		tn, err := f.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, hfTensor{ti.Name, ti.DType, ti.Shape, bytes.Clone(tn.Data)})
	}
	f.Close()
	edit(cfg, &ts)
	return writeHF(t, dir, cfg, ts)
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// numpyPermute is convert_hf_to_gguf.py's LlamaModel.permute spelled as
// numpy does it: view the [rows][cols] matrix as [heads][2][rows/heads/2]
// [cols], swap axes 1 and 2, flatten. It shares no code with the loader.
func numpyPermute(w []float32, rows, cols, heads int) []float32 {
	dims := [4]int{heads, 2, rows / heads / 2, cols}
	strides := [4]int{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1} // of the input view
	out := make([]float32, 0, len(w))
	// Iterate the swapped view [heads][rows/heads/2][2][cols] in order.
	for a := range dims[0] {
		for c := range dims[2] {
			for b := range dims[1] {
				for d := range dims[3] {
					out = append(out, w[a*strides[0]+b*strides[1]+c*strides[2]+d*strides[3]])
				}
			}
		}
	}
	return out
}

// TestHFMatchesConversion builds one random Llama checkpoint (GQA, llama3
// RoPE scaling) and its GGUF conversion done here the way llama.cpp's
// converter does it; loading either must give identical tensors and
// config.
func TestHFMatchesConversion(t *testing.T) {
	const (
		v, d, layers, heads, kvHeads, ffn = 300, 32, 2, 4, 2, 48
		headDim                           = d / heads
		theta                             = 500000.0
	)
	rng := rand.New(rand.NewPCG(7, 0))
	randn := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64())
		}
		return out
	}
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "hidden_size": d, "num_hidden_layers": layers,
		"intermediate_size": ffn, "num_attention_heads": heads, "num_key_value_heads": kvHeads,
		"rope_theta": theta, "rms_norm_eps": 1e-5, "max_position_embeddings": 4096, "vocab_size": v,
		"bos_token_id": 1, "eos_token_id": []int{2, 5}, "tie_word_embeddings": false, "hidden_act": "silu",
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 256},
	}
	var hf []hfTensor
	w := gguf.NewWriter()
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"}, {"llama.context_length", uint32(4096)},
		{"llama.embedding_length", uint32(d)}, {"llama.block_count", uint32(layers)},
		{"llama.feed_forward_length", uint32(ffn)}, {"llama.attention.head_count", uint32(heads)},
		{"llama.attention.head_count_kv", uint32(kvHeads)}, {"llama.rope.freq_base", float32(theta)},
		{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
		{"tokenizer.ggml.bos_token_id", uint32(1)}, {"tokenizer.ggml.eos_token_id", uint32(2)},
		{"tokenizer.ggml.eot_token_id", uint32(5)},
	} {
		if err := w.AddKV(kv.k, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	// add puts one weight in both files; hfShape is row-major.
	add := func(hfName, ggufName string, hfShape []uint64, values []float32, permuteHeads int) {
		hf = append(hf, hfTensor{hfName, "F32", hfShape, f32Bytes(values)})
		if permuteHeads > 0 {
			values = numpyPermute(values, int(hfShape[0]), int(hfShape[1]), permuteHeads)
		}
		shape := slices.Clone(hfShape)
		slices.Reverse(shape)
		if err := w.AddTensor(ggufName, 0, shape, f32Bytes(values)); err != nil {
			t.Fatal(err)
		}
	}
	// llama3 factors as the converter computes them.
	factors := make([]float32, headDim/2)
	for i := range factors {
		freq := 1 / math.Pow(theta, float64(2*i)/headDim)
		wavelen := 2 * math.Pi / freq
		switch lowWL, highWL := 256.0/1, 256.0/4; {
		case wavelen < highWL:
			factors[i] = 1
		case wavelen > lowWL:
			factors[i] = 8
		default:
			smooth := (256/wavelen - 1) / (4 - 1)
			factors[i] = float32(1 / ((1-smooth)/8 + smooth))
		}
	}
	if err := w.AddTensor("rope_freqs.weight", 0, []uint64{headDim / 2}, f32Bytes(factors)); err != nil {
		t.Fatal(err)
	}
	add("model.embed_tokens.weight", "token_embd.weight", []uint64{v, d}, randn(v*d), 0)
	for i := range layers {
		hp, gp := "model.layers."+string(rune('0'+i))+".", "blk."+string(rune('0'+i))+"."
		add(hp+"input_layernorm.weight", gp+"attn_norm.weight", []uint64{d}, randn(d), 0)
		add(hp+"self_attn.q_proj.weight", gp+"attn_q.weight", []uint64{heads * headDim, d}, randn(heads*headDim*d), heads)
		add(hp+"self_attn.k_proj.weight", gp+"attn_k.weight", []uint64{kvHeads * headDim, d}, randn(kvHeads*headDim*d), kvHeads)
		add(hp+"self_attn.v_proj.weight", gp+"attn_v.weight", []uint64{kvHeads * headDim, d}, randn(kvHeads*headDim*d), 0)
		add(hp+"self_attn.o_proj.weight", gp+"attn_output.weight", []uint64{d, heads * headDim}, randn(d*heads*headDim), 0)
		add(hp+"post_attention_layernorm.weight", gp+"ffn_norm.weight", []uint64{d}, randn(d), 0)
		add(hp+"mlp.gate_proj.weight", gp+"ffn_gate.weight", []uint64{ffn, d}, randn(ffn*d), 0)
		add(hp+"mlp.up_proj.weight", gp+"ffn_up.weight", []uint64{ffn, d}, randn(ffn*d), 0)
		add(hp+"mlp.down_proj.weight", gp+"ffn_down.weight", []uint64{d, ffn}, randn(d*ffn), 0)
	}
	add("model.norm.weight", "output_norm.weight", []uint64{d}, randn(d), 0)
	add("lm_head.weight", "output.weight", []uint64{v, d}, randn(v*d), 0)
	hf = append(hf, hfTensor{"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", []uint64{headDim / 2}, f32Bytes(randn(headDim / 2))})

	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeHF(t, dir, cfg, hf)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ckpt.gguf")
	writeFile(t, path, buf.Bytes())

	fromHF, fromGGUF := load(t, dir), load(t, path)
	if diff := cmp.Diff(fromGGUF.Config, fromHF.Config); diff != "" {
		t.Errorf("Config (-gguf +hf):\n%s", diff)
	}
	if diff := cmp.Diff(fromGGUF.Tensors, fromHF.Tensors); diff != "" {
		t.Errorf("tensors (-gguf +hf):\n%s", diff)
	}
	want := model.Config{Name: "ckpt", Arch: "llama", VocabSize: v, Dim: d, NumLayers: layers, NumHeads: heads,
		NumKVHeads: kvHeads, HeadDim: headDim, FFNDim: ffn, RopeTheta: theta, NormEps: 1e-5, MaxContextLen: 4096,
		BOSTokenID: 1, EOSTokenIDs: []int32{2, 5}}
	if diff := cmp.Diff(want, fromHF.Config); diff != "" {
		t.Errorf("Config (-want +got):\n%s", diff)
	}
	// The factors span all three llama3 regimes, so the test means something.
	if factors[0] != 1 || factors[len(factors)-1] != 8 || !slices.ContainsFunc(factors, func(f float32) bool { return f > 1 && f < 8 }) {
		t.Errorf("factors %v do not cover the three regimes", factors)
	}
}

func TestHFVariants(t *testing.T) {
	base := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
	tests := []struct {
		name  string
		spec  testmodel.Spec
		edit  func(cfg map[string]any, ts *[]hfTensor)
		extra map[string]string // more files
		check func(t *testing.T, m *loader.Model)
	}{
		{
			name:  "generation config EOS",
			spec:  base,
			extra: map[string]string{"generation_config.json": `{"bos_token_id": 1, "eos_token_id": [2, 7, 9]}`},
			check: func(t *testing.T, m *loader.Model) {
				if !slices.Equal(m.Config.EOSTokenIDs, []int32{2, 7, 9}) {
					t.Errorf("EOS %v", m.Config.EOSTokenIDs)
				}
			},
		},
		{
			name:  "BOS from generation config",
			spec:  base,
			edit:  func(cfg map[string]any, _ *[]hfTensor) { cfg["bos_token_id"] = nil },
			extra: map[string]string{"generation_config.json": `{"bos_token_id": 3}`},
			check: func(t *testing.T, m *loader.Model) {
				if m.Config.BOSTokenID != 3 {
					t.Errorf("BOS %d", m.Config.BOSTokenID)
				}
			},
		},
		{
			name: "mistral sliding window",
			spec: base,
			edit: func(cfg map[string]any, _ *[]hfTensor) {
				cfg["architectures"] = []string{"MistralForCausalLM"}
				cfg["sliding_window"] = 1024
			},
			check: func(t *testing.T, m *loader.Model) {
				if m.Config.MaxContextLen != 1024 || m.Config.Arch != "llama" {
					t.Errorf("context %d arch %q", m.Config.MaxContextLen, m.Config.Arch)
				}
			},
		},
		{
			name: "qwen sliding window off",
			spec: testmodel.Spec{Arch: "qwen2", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32},
			edit: func(cfg map[string]any, _ *[]hfTensor) {
				cfg["sliding_window"] = 1024
				cfg["use_sliding_window"] = false
			},
			check: func(t *testing.T, m *loader.Model) {
				if m.Config.MaxContextLen != 2048 {
					t.Errorf("context %d", m.Config.MaxContextLen)
				}
			},
		},
		{
			name: "tied with lm_head saved",
			spec: base,
			edit: func(cfg map[string]any, ts *[]hfTensor) {
				cfg["tie_word_embeddings"] = true
			},
			check: func(t *testing.T, m *loader.Model) {
				if _, ok := m.Tensors["output.weight"]; ok || !m.Config.TiedEmbeddings {
					t.Errorf("output.weight kept, tied %v", m.Config.TiedEmbeddings)
				}
			},
		},
		{
			name: "lm_head absent means tied",
			spec: base,
			edit: func(_ map[string]any, ts *[]hfTensor) {
				*ts = slices.DeleteFunc(*ts, func(e hfTensor) bool { return e.name == "lm_head.weight" })
			},
			check: func(t *testing.T, m *loader.Model) {
				if !m.Config.TiedEmbeddings {
					t.Error("not tied")
				}
			},
		},
		{
			name: "bf16 kept",
			spec: testmodel.Spec{Arch: "qwen3", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32, MatrixType: model.BF16},
			check: func(t *testing.T, m *loader.Model) {
				if m.Tensors["blk.0.ffn_up.weight"].Type != model.BF16 || m.Tensors["blk.0.attn_q_norm.weight"].Type != model.F32 {
					t.Errorf("types %v %v", m.Tensors["blk.0.ffn_up.weight"].Type, m.Tensors["blk.0.attn_q_norm.weight"].Type)
				}
				if _, err := model.FromTensors(m.Config, m.Tensors); err != nil {
					t.Error(err)
				}
			},
		},
		{
			name: "linear rope scaling",
			spec: base,
			edit: func(cfg map[string]any, _ *[]hfTensor) {
				cfg["rope_scaling"] = map[string]any{"type": "linear", "factor": 2.0}
			},
			check: func(t *testing.T, m *loader.Model) {
				if m.Config.RopeScaling != (model.RopeScaling{Type: "linear", Factor: 2}) {
					t.Errorf("RopeScaling %+v", m.Config.RopeScaling)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			edit := tt.edit
			if edit == nil {
				edit = func(map[string]any, *[]hfTensor) {}
			}
			editHF(t, dir, tt.spec, edit)
			for name, content := range tt.extra {
				writeFile(t, filepath.Join(dir, name), []byte(content))
			}
			tt.check(t, load(t, dir))
		})
	}
}

func TestHFRefused(t *testing.T) {
	base := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
	hf := func(edit func(cfg map[string]any, ts *[]hfTensor)) func(t *testing.T, dir string) string {
		return func(t *testing.T, dir string) string { return editHF(t, dir, base, edit) }
	}
	runErrorCases(t, []errorCase{
		{"architecture", hf(func(cfg map[string]any, _ *[]hfTensor) {
			cfg["architectures"] = []string{"MambaForCausalLM"}
		}), loader.ErrUnsupported, `architecture "MambaForCausalLM" is not supported`},
		{"no architecture", hf(func(cfg map[string]any, _ *[]hfTensor) { delete(cfg, "architectures") }),
			loader.ErrInvalid, "want exactly one"},
		{"dynamic rope scaling", hf(func(cfg map[string]any, _ *[]hfTensor) {
			cfg["rope_scaling"] = map[string]any{"rope_type": "dynamic", "factor": 4.0}
		}), loader.ErrUnsupported, `RoPE scaling "dynamic"`},
		{"yarn with DeepSeek's mscale", hf(func(cfg map[string]any, _ *[]hfTensor) {
			cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4.0, "mscale": 0.707, "mscale_all_dim": 0.707}
		}), loader.ErrUnsupported, "mscale"},
		{"activation", hf(func(cfg map[string]any, _ *[]hfTensor) { cfg["hidden_act"] = "gelu" }),
			loader.ErrUnsupported, `hidden_act "gelu"`},
		{"unknown tensor", hf(func(_ map[string]any, ts *[]hfTensor) {
			*ts = append(*ts, hfTensor{"model.layers.0.mlp.experts.0.w1.weight", "F32", []uint64{1}, make([]byte, 4)})
		}), loader.ErrUnsupported, `tensor "model.layers.0.mlp.experts.0.w1.weight" is not supported`},
		{"output bias", hf(func(cfg map[string]any, ts *[]hfTensor) {
			cfg["attention_bias"] = true
			for _, p := range []string{"q", "k", "v", "o"} {
				*ts = append(*ts, hfTensor{"model.layers.0.self_attn." + p + "_proj.bias", "F32", []uint64{32}, make([]byte, 128)})
			}
		}), loader.ErrUnsupported, `"blk.0.attn_output.bias" is not supported`},
		{"integer dtype", hf(func(_ map[string]any, ts *[]hfTensor) {
			for i := range *ts {
				if e := &(*ts)[i]; e.name == "model.norm.weight" {
					e.dtype = "I32"
				}
			}
		}), loader.ErrUnsupported, `"model.norm.weight" is I32`},
		{"vocab mismatch", hf(func(cfg map[string]any, _ *[]hfTensor) { cfg["vocab_size"] = 301 }),
			loader.ErrInvalid, "vocab_size 301"},
		{"missing tensor", hf(func(_ map[string]any, ts *[]hfTensor) {
			*ts = slices.DeleteFunc(*ts, func(e hfTensor) bool { return e.name == "model.layers.0.mlp.up_proj.weight" })
		}), loader.ErrInvalid, `"blk.0.ffn_up.weight" is missing`},
		{"bad eos", hf(func(cfg map[string]any, _ *[]hfTensor) { cfg["eos_token_id"] = "x" }),
			loader.ErrInvalid, "eos_token_id"},
	})
}
