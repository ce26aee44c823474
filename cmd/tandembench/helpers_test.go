package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
)

// tinyModel writes the quick tests' model into dir: a tiny random Llama
// (512-token vocabulary, 2 layers), and returns its path.
func tinyModel(t *testing.T, dir string) string {
	t.Helper()
	model := filepath.Join(dir, "tiny.gguf")
	err := testmodel.WriteGGUF(model, testmodel.Spec{
		Arch: "llama", VocabSize: 512, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 128, ContextLen: 256, Seed: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// readReport decodes the phase report at path.
func readReport[T any](t *testing.T, path string) T {
	t.Helper()
	var rep T
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
