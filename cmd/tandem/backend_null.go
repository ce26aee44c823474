package main

import (
	"slices"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/null"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// nullDevice is --device null: the null backend (package null), which
// computes nothing and generates null.Text in the model's vocabulary; a
// benchmarking aid for everything around the forward pass.
const nullDevice = "null"

// newNull is the null backend for the model cfg describes, spelling
// null.Text in vocab (nil: the script falls back to every non-EOS id).
func newNull(cfg model.Config, vocab *gguf.Vocab) (runner.Backend, error) {
	info := runner.ModelInfo{
		Name: cfg.Name, Arch: cfg.Arch, VocabSize: cfg.VocabSize, MaxContextLen: cfg.MaxContextLen,
		EOSTokenIDs: slices.Clone(cfg.EOSTokenIDs), BOSTokenID: cfg.BOSTokenID,
		NumLayers: cfg.NumLayers, NumKVHeads: cfg.NumKVHeads, HeadDim: cfg.HeadDim,
	}
	var pieces [][]byte
	if vocab != nil {
		pieces = vocab.Pieces
	}
	b, err := null.New(info, null.NewScript(pieces, cfg.VocabSize, null.Text, cfg.EOSTokenIDs))
	if err != nil {
		return nil, err
	}
	return b, nil
}
