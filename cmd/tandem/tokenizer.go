package main

import (
	"fmt"
	"path/filepath"

	"github.com/tandem-llm/tandem/frontend/llm"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// loadTokenizer loads a frontend's tokenizer: --tokenizer, else the model
// the engines report in READY, which an engine sends as an absolute path
// (modelRef) so a frontend in another directory opens the same file.
// When the frontend cannot open it (the engines' files are elsewhere) or
// what it opens has more tokens than the engines' model (not the same
// model), the error says so and names --tokenizer.
func loadTokenizer(info wire.Ready, override, chatTemplate string) (tokenizer.Tokenizer, error) {
	path := override
	if path == "" {
		path = info.Model
	}
	tok, err := llm.LoadTokenizer(path, chatTemplate)
	switch {
	case err != nil && override == "":
		return nil, fmt.Errorf("the engines serve the model %q, which this frontend cannot open: %w; "+
			"it reads the tokenizer from that path on its own file system, so give --tokenizer with a copy of the model's tokenizer", info.Model, err)
	case err != nil:
		return nil, fmt.Errorf("--tokenizer: %w", err)
	case path != "dummy" && info.VocabSize > 0 && tok.VocabSize() > info.VocabSize:
		return nil, fmt.Errorf("the tokenizer of %s has %d tokens and the engines' model %s has %d: they are not the same model (give --tokenizer with the engines' model's tokenizer)",
			path, tok.VocabSize(), info.Model, info.VocabSize)
	}
	return tok, nil
}

// modelRef is what an engine reports as its model in READY: --model as an
// absolute, clean path (a relative one means nothing in a frontend's
// working directory), or "dummy" as it is.
func modelRef(model string) (string, error) {
	if model == "dummy" {
		return model, nil
	}
	abs, err := filepath.Abs(model)
	if err != nil {
		return "", fmt.Errorf("engine: --model %s: %w", model, err)
	}
	return abs, nil
}
