package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// Load loads the tokenizer at path: a GGUF file (its tokenizer.ggml.*
// metadata only; tensor data is not read), a Hugging Face model directory,
// or its tokenizer.json.
func Load(path string) (*BPE, error) {
	if strings.EqualFold(filepath.Ext(path), ".gguf") {
		return loadGGUF(path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if !fi.IsDir() {
		if filepath.Base(path) != "tokenizer.json" {
			return nil, fmt.Errorf("%w: %s is neither a model directory nor a tokenizer.json", ErrUnsupported, path)
		}
		path = filepath.Dir(path)
	}
	return FromHFDir(path)
}

func loadGGUF(path string) (*BPE, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	md, err := gguf.ParseMetadata(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t, err := FromGGUF(md)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}
