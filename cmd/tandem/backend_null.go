package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/null"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// nullDevice is --device null: the null backend (package null), which
// computes nothing and generates null.Text in the model's vocabulary; a
// benchmarking aid for everything around the forward pass. null:STEP
// (a Go duration, e.g. null:10ms) makes every forward pass take STEP.
const nullDevice = "null"

// parseNull reads --device null or null:STEP; ok is false for another
// device.
func parseNull(device string) (step time.Duration, ok bool, err error) {
	rest, ok := strings.CutPrefix(device, nullDevice)
	switch {
	case !ok || (rest != "" && rest[0] != ':'):
		return 0, false, nil
	case rest == "":
		return 0, true, nil
	}
	step, err = time.ParseDuration(rest[1:])
	if err != nil || step < 0 {
		return 0, true, fmt.Errorf("--device %q: want null or null:STEP with STEP a duration ≥ 0 (e.g. null:10ms)", device)
	}
	return step, true, nil
}

// newNull is the null backend for the model cfg describes, spelling
// null.Text in vocab (nil: the script falls back to every non-EOS id),
// each forward pass taking step.
func newNull(cfg model.Config, vocab *gguf.Vocab, step time.Duration) (runner.Backend, error) {
	info := runner.ModelInfo{
		Name: cfg.Name, Arch: cfg.Arch, VocabSize: cfg.VocabSize, MaxContextLen: cfg.MaxContextLen,
		EOSTokenIDs: slices.Clone(cfg.EOSTokenIDs), BOSTokenID: cfg.BOSTokenID,
		NumLayers: cfg.NumLayers, NumKVHeads: cfg.NumKVHeads, HeadDim: cfg.HeadDim,
	}
	var pieces [][]byte
	if vocab != nil {
		pieces = vocab.Pieces
	}
	b, err := null.NewPaced(info, null.NewScript(pieces, cfg.VocabSize, null.Text, cfg.EOSTokenIDs), step)
	if err != nil {
		return nil, err
	}
	return b, nil
}
