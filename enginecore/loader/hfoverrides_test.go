package loader_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestHFOverridesClassifier: vLLM's --hf-overrides keys build a head
// from the LM head's rows of the named tokens: from_2_way_softmax (and
// is_original_qwen3_reranker) one class, the second row minus the first;
// no_post_processing one class per token; for a tied model the rows are
// the token embedding's, for an untied one output.weight's. What vLLM
// would refuse is an error naming the key.
func TestHFOverridesClassifier(t *testing.T) {
	for _, tied := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		spec := testmodel.Spec{Arch: "qwen3", VocabSize: 400, Dim: 32, NumLayers: 1, NumHeads: 2, NumKVHeads: 1, FFNDim: 64,
			ContextLen: 256, Seed: 3, Tied: tied, MatrixType: model.F32, Tokenizer: testmodel.ByteVocab(400)}
		if err := testmodel.WriteGGUF(path, spec); err != nil {
			t.Fatal(err)
		}
		m, err := loader.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		head := m.Tensors["output.weight"]
		if tied {
			head = m.Tensors["token_embd.weight"]
		}
		row := func(tok string) []float32 {
			for id, text := range m.Vocab.Texts {
				if text == tok {
					r := make([]float32, spec.Dim)
					if err := head.DequantizeRow(id, r); err != nil {
						t.Fatal(err)
					}
					return r
				}
			}
			t.Fatalf("no token %q", tok)
			return nil
		}
		n, y, q := row("n"), row("y"), row("q")
		_ = m.Close()

		for _, tc := range []struct {
			name string
			o    loader.HFOverrides
			want [][]float32 // the head's rows
		}{
			{"is_original_qwen3_reranker", loader.HFOverrides{Architectures: []string{"Qwen3ForSequenceClassification"},
				ClassifierFromToken: []string{"n", "y"}, IsOriginalQwen3Reranker: true}, [][]float32{sub(y, n)}},
			{"from_2_way_softmax", loader.HFOverrides{ClassifierFromToken: []string{"y", "n"}, Method: "from_2_way_softmax"}, [][]float32{sub(n, y)}},
			{"no_post_processing", loader.HFOverrides{ClassifierFromToken: []string{"q", "y", "n"}, Method: "no_post_processing"}, [][]float32{q, y, n}},
		} {
			s, err := loader.Open(path, 0, loader.WithHFOverrides(tc.o))
			if err != nil {
				t.Fatalf("tied %v, %s: %v", tied, tc.name, err)
			}
			c := s.Weights.Classifier
			if c == nil || c.NumClasses != len(tc.want) || c.Labels != nil || c.Dense != nil || c.OutBias != nil {
				t.Fatalf("tied %v, %s: head %+v", tied, tc.name, c)
			}
			for k, w := range tc.want {
				for j := range w {
					if got := c.Out[k*spec.Dim+j]; got != w[j] {
						t.Fatalf("tied %v, %s: row %d [%d] = %v, want %v", tied, tc.name, k, j, got, w[j])
					}
				}
			}
			_ = s.Release()
		}
	}

	path := filepath.Join(t.TempDir(), "m.gguf")
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 400, Dim: 32, NumLayers: 1, NumHeads: 2, NumKVHeads: 1, FFNDim: 64,
		ContextLen: 256, Seed: 3, Tied: true, MatrixType: model.F32, Tokenizer: testmodel.ByteVocab(400)}
	headed := filepath.Join(t.TempDir(), "headed.gguf")
	withHead := spec
	withHead.Classes, withHead.Labels = 2, []string{"yes", "no"}
	for p, s := range map[string]testmodel.Spec{path: spec, headed: withHead} {
		if err := testmodel.WriteGGUF(p, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, path string
		o          loader.HFOverrides
		err        string
	}{
		{"no method", path, loader.HFOverrides{ClassifierFromToken: []string{"n", "y"}}, "needs a method"},
		{"an unknown method", path, loader.HFOverrides{ClassifierFromToken: []string{"n", "y"}, Method: "softmax"}, `method "softmax"`},
		{"three tokens, two-way", path, loader.HFOverrides{ClassifierFromToken: []string{"n", "y", "q"}, IsOriginalQwen3Reranker: true}, "needs 2 tokens"},
		{"a token not in the vocabulary", path, loader.HFOverrides{ClassifierFromToken: []string{"n", "yes"}, IsOriginalQwen3Reranker: true}, `"yes"`},
		{"a classifier without tokens or head", path, loader.HFOverrides{Architectures: []string{"Qwen3ForSequenceClassification"}}, "needs classifier_from_token"},
		{"an architecture of another kind", path, loader.HFOverrides{Architectures: []string{"Qwen3Model"}}, `"Qwen3Model"`},
		{"a head already", headed, loader.HFOverrides{ClassifierFromToken: []string{"n", "y"}, IsOriginalQwen3Reranker: true}, "has a classification head"},
	} {
		if _, err := loader.Open(tc.path, 0, loader.WithHFOverrides(tc.o)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
		}
	}
	if _, err := loader.Open("dummy", 0, loader.WithHFOverrides(loader.HFOverrides{Method: "no_post_processing"})); err == nil {
		t.Error("the dummy model took --hf-overrides")
	}
	// The checkpoint's own head, named as a classifier: nothing to build.
	s, err := loader.Open(headed, 0, loader.WithHFOverrides(loader.HFOverrides{Architectures: []string{"Qwen3ForSequenceClassification"}}))
	if err != nil || s.Weights.Classifier == nil || s.Weights.Classifier.NumClasses != 2 {
		t.Fatalf("a headed checkpoint named a classifier: %v", err)
	}
	_ = s.Release()
}

func sub(a, b []float32) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

// TestHFOverridesHFDirectory: a Hugging Face directory (the original
// Qwen3-Reranker as the hub has it) gets its head the same way, its
// tokens found as tokenizer.json spells them ("Ġyes" in a byte-level BPE).
func TestHFOverridesHFDirectory(t *testing.T) {
	dir := t.TempDir()
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 64, Dim: 32, NumLayers: 1, NumHeads: 2, NumKVHeads: 1, FFNDim: 64,
		ContextLen: 256, Seed: 4, Tied: true}
	if err := testmodel.WriteHF(dir, spec); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	for i := range spec.VocabSize {
		vocab[fmt.Sprintf("t%d", i)] = i
	}
	delete(vocab, "t7")
	delete(vocab, "t9")
	vocab["Ġyes"], vocab["no"] = 7, 9
	tj, _ := json.Marshal(map[string]any{"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"decoder": map[string]any{"type": "ByteLevel"}, "added_tokens": []any{}})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int) []float32 {
		r := make([]float32, spec.Dim)
		if err := m.Tensors["token_embd.weight"].DequantizeRow(id, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := sub(row(7), row(9))
	_ = m.Close()
	s, err := loader.Open(dir, 0, loader.WithHFOverrides(loader.HFOverrides{Architectures: []string{"Qwen3ForSequenceClassification"},
		ClassifierFromToken: []string{"no", "Ġyes"}, IsOriginalQwen3Reranker: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if c := s.Weights.Classifier; c == nil || c.NumClasses != 1 || !slices.Equal(c.Out, want) {
		t.Fatalf("head %+v, want the Ġyes row minus the no row", c)
	}
}
