package gguf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// vocabFiles finds llama.cpp's vocab-only GGUFs: in $TANDEM_LLAMA_MODELS,
// or in a llama.cpp checkout extracted from the node-llama-cpp bundle under
// tools/oracle (they are test data from an npm package and never
// committed).
func vocabFiles(t *testing.T) []string {
	t.Helper()
	dirs := []string{
		os.Getenv("TANDEM_LLAMA_MODELS"),
		filepath.Join("..", "..", "tools", "oracle", "llama.cpp", "models"),
		filepath.Join("..", "..", "tools", "oracle", "node_modules", "node-llama-cpp", "llama", "llama.cpp", "models"),
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(d, "ggml-vocab-*.gguf")); len(m) > 0 {
			return m
		}
	}
	t.Skip("no ggml-vocab-*.gguf: set TANDEM_LLAMA_MODELS to llama.cpp's models/ " +
		"(git clone node_modules/node-llama-cpp/llama/gitRelease.bundle)")
	return nil
}

// TestRealVocab reads llama.cpp's own files through both entry points.
func TestRealVocab(t *testing.T) {
	for _, path := range vocabFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, ok := f.String("general.architecture"); !ok {
				t.Error("no general.architecture")
			}
			tokens, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(tokens) == 0 {
				t.Fatal("no tokenizer.ggml.tokens")
			}
			if types, ok := f.Int32s("tokenizer.ggml.token_type"); ok && len(types) != len(tokens) {
				t.Errorf("%d token types for %d tokens", len(types), len(tokens))
			}
			if model, ok := f.String("tokenizer.ggml.model"); !ok || model == "" {
				t.Error("no tokenizer.ggml.model")
			}
			for _, ti := range f.Tensors() {
				if _, err := f.TensorData(ti); err != nil {
					t.Error(err)
				}
			}

			fd, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			st, _ := fd.Stat()
			md, err := gguf.ParseMetadata(fd, st.Size())
			if err != nil {
				t.Fatal(err)
			}
			if len(md.Keys()) != len(f.Keys()) {
				t.Errorf("ParseMetadata: %d keys, Open: %d", len(md.Keys()), len(f.Keys()))
			}
			t.Logf("%d keys, %d tokens, %d tensors", len(f.Keys()), len(tokens), len(f.Tensors()))
		})
	}
}
