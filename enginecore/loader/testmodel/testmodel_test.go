package testmodel_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

var small = testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32, Seed: 9}

func TestByteVocab(t *testing.T) {
	if testmodel.ByteVocab(258) != nil {
		t.Error("ByteVocab(258) is not nil")
	}
	for _, n := range []int{259, 354, 400} {
		v := testmodel.ByteVocab(n)
		tokens := v["tokenizer.ggml.tokens"].([]string)
		types := v["tokenizer.ggml.token_type"].([]int32)
		scores := v["tokenizer.ggml.scores"].([]float32)
		if len(tokens) != n || len(types) != n || len(scores) != n {
			t.Fatalf("n=%d: %d tokens, %d types, %d scores", n, len(tokens), len(types), len(scores))
		}
		if tokens[1] != "<s>" || tokens[2] != "</s>" || tokens[3] != "<0x00>" || tokens[258] != "<0xFF>" || types[3] != 6 {
			t.Errorf("n=%d: tokens %q...", n, tokens[:4])
		}
	}
}

func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s testmodel.Spec) []byte {
		p := filepath.Join(dir, name)
		if err := testmodel.WriteGGUF(p, s); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := write("a.gguf", small), write("b.gguf", small)
	other := small
	other.Seed++
	c := write("c.gguf", other)
	if !bytes.Equal(a, b) {
		t.Error("same spec, different files")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same file")
	}
}

func TestQuantizeCallback(t *testing.T) {
	var calls []model.DType
	spec := small
	spec.MatrixType = model.Q8_0
	spec.Types = map[string]model.DType{"token_embd.weight": model.F32}
	spec.Quantize = func(typ model.DType, v []float32) []byte {
		calls = append(calls, typ)
		return bytes.Repeat([]byte{1}, typ.RowBytes(len(v)))
	}
	p := filepath.Join(t.TempDir(), "q.gguf")
	if err := testmodel.WriteGGUF(p, spec); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 8 { // 7 layer matrices and output
		t.Errorf("Quantize called %d times: %v", len(calls), calls)
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("blk.0.ffn_up.weight")
	data, _ := f.TensorData(ti)
	if ti.Type != uint32(model.Q8_0) || !bytes.Equal(data, bytes.Repeat([]byte{1}, len(data))) {
		t.Errorf("ffn_up is %s with data %v...", gguf.TypeName(ti.Type), data[:4])
	}

	tests := []struct {
		name string
		edit func(*testmodel.Spec)
		want string
	}{
		{"no quantizer", func(s *testmodel.Spec) { s.Quantize = nil }, "needs Spec.Quantize"},
		{"short output", func(s *testmodel.Spec) {
			s.Quantize = func(model.DType, []float32) []byte { return []byte{1} }
		}, "Quantize gave 1 bytes"},
		{"bad arch", func(s *testmodel.Spec) { s.Arch = "gpt2" }, `architecture "gpt2"`},
		{"no vocab", func(s *testmodel.Spec) { s.VocabSize = 0 }, "no VocabSize"},
		{"bad heads", func(s *testmodel.Spec) { s.NumKVHeads = 3 }, "KV heads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec
			tt.edit(&s)
			err := testmodel.WriteGGUF(filepath.Join(t.TempDir(), "x.gguf"), s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	if err := testmodel.WriteHF(t.TempDir(), spec); err == nil || !strings.Contains(err.Error(), "cannot be stored in safetensors") {
		t.Errorf("WriteHF of Q8_0: %v", err)
	}
}

// TestHalfTypes writes F16 and BF16 matrices and checks the values against
// the F32 model with the same seed, within each type's precision.
func TestHalfTypes(t *testing.T) {
	dir := t.TempDir()
	load := func(name string, typ model.DType) *loader.Model {
		s := small
		s.MatrixType = typ
		p := filepath.Join(dir, name)
		if err := testmodel.WriteGGUF(p, s); err != nil {
			t.Fatal(err)
		}
		m, err := loader.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ref := load("f32.gguf", model.F32)
	for _, tt := range []struct {
		typ model.DType
		tol float64 // relative
	}{{model.F16, 1.0 / 1024}, {model.BF16, 1.0 / 128}} {
		m := load(tt.typ.String()+".gguf", tt.typ)
		for name, rt := range ref.Tensors {
			got := m.Tensors[name]
			if len(rt.Shape) > 1 && got.Type != tt.typ {
				t.Errorf("%s is %v", name, got.Type)
			}
			want, _ := rt.Float32s()
			vals, err := got.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if d := float64(vals[i] - want[i]); d > tt.tol*float64(abs(want[i])) || -d > tt.tol*float64(abs(want[i])) {
					t.Fatalf("%v %s[%d] = %g, want %g", tt.typ, name, i, vals[i], want[i])
				}
			}
		}
	}
}

func abs(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// vocabDir finds llama.cpp's vocab-only GGUFs (see wire/gguf's vocab test).
func vocabDir(t *testing.T) string {
	for _, d := range []string{
		os.Getenv("TANDEM_LLAMA_MODELS"),
		filepath.Join("..", "..", "..", "tools", "oracle", "llama.cpp", "models"),
		filepath.Join("..", "..", "..", "tools", "oracle", "node_modules", "node-llama-cpp", "llama", "llama.cpp", "models"),
	} {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "ggml-vocab-llama-spm.gguf")); err == nil {
			return d
		}
	}
	t.Skip("no ggml-vocab-llama-spm.gguf: set TANDEM_LLAMA_MODELS to llama.cpp's models/ " +
		"(git clone node_modules/node-llama-cpp/llama/gitRelease.bundle)")
	return ""
}

// TestRealTokenizer attaches llama.cpp's own vocabularies.
func TestRealTokenizer(t *testing.T) {
	dir := vocabDir(t)
	for _, tt := range []struct{ vocab, arch string }{{"llama-spm", "llama"}, {"qwen2", "qwen2"}} {
		t.Run(tt.vocab, func(t *testing.T) {
			tok, err := testmodel.ReadTokenizer(filepath.Join(dir, "ggml-vocab-"+tt.vocab+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			spec := testmodel.Spec{Arch: tt.arch, Dim: 16, NumLayers: 1, NumHeads: 2, FFNDim: 16, Tied: true,
				MatrixType: model.BF16, Tokenizer: tok}
			p := filepath.Join(t.TempDir(), tt.vocab+".gguf")
			if err := testmodel.WriteGGUF(p, spec); err != nil {
				t.Fatal(err)
			}
			m, err := loader.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			tokens := tok["tokenizer.ggml.tokens"].([]string)
			if m.Config.VocabSize != len(tokens) {
				t.Errorf("VocabSize %d, %d tokens", m.Config.VocabSize, len(tokens))
			}
			back, err := testmodel.ReadTokenizer(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tok, back); diff != "" {
				t.Errorf("tokenizer changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTypesByFullName checks that a full tensor name in Spec.Types types
// that one layer's tensor, over the per-layer key and MatrixType.
func TestTypesByFullName(t *testing.T) {
	s := small
	s.NumLayers = 2
	s.MatrixType = model.F16
	s.Types = map[string]model.DType{"ffn_down.weight": model.BF16, "blk.1.ffn_down.weight": model.F32}
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := testmodel.WriteGGUF(p, s); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, want := range map[string]model.DType{
		"blk.0.ffn_down.weight": model.BF16,
		"blk.1.ffn_down.weight": model.F32,
		"blk.1.ffn_up.weight":   model.F16,
	} {
		if got := m.Tensors[name].Type; got != want {
			t.Errorf("%s is %v, want %v", name, got, want)
		}
	}
}
