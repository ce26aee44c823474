package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/null"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// nullDevice is --device null: the null backend (package null), which
// computes nothing and generates null.Text in the model's vocabulary; a
// benchmarking aid for everything around the forward pass. Options follow
// a colon, comma-separated: STEP (a Go duration, e.g. null:10ms) makes
// every forward pass take STEP; fail-after=N makes every forward pass
// after the first N (warm-up's included) fail, so the engine core dies
// as on a device error (fault injection, e.g. null:10ms,fail-after=20).
const nullDevice = "null"

// nullOptions are --device null's options.
type nullOptions struct {
	step      time.Duration // every forward pass takes this long
	failAfter int           // forward passes before all fail; 0 = never
}

// parseNull reads --device null[:OPTION,…]; ok is false for another
// device.
func parseNull(device string) (opts nullOptions, ok bool, err error) {
	rest, ok := strings.CutPrefix(device, nullDevice)
	switch {
	case !ok || (rest != "" && rest[0] != ':'):
		return nullOptions{}, false, nil
	case rest == "":
		return nullOptions{}, true, nil
	}
	for _, o := range strings.Split(rest[1:], ",") {
		if n, isFail := strings.CutPrefix(o, "fail-after="); isFail {
			if opts.failAfter, err = strconv.Atoi(n); err != nil || opts.failAfter < 1 {
				return nullOptions{}, true, fmt.Errorf("--device %q: fail-after=N wants N ≥ 1", device)
			}
			continue
		}
		if opts.step, err = time.ParseDuration(o); err != nil || opts.step < 0 {
			return nullOptions{}, true, fmt.Errorf("--device %q: want null or null:STEP with STEP a duration ≥ 0 (e.g. null:10ms), optionally with ,fail-after=N", device)
		}
	}
	return opts, true, nil
}

// newNull is the null backend for the model cfg describes, spelling
// null.Text in vocab (nil: the script falls back to every non-EOS id),
// as opts say.
func newNull(cfg model.Config, vocab *gguf.Vocab, opts nullOptions) (runner.Backend, error) {
	info := runner.ModelInfo{
		Name: cfg.Name, Arch: cfg.Arch, VocabSize: cfg.VocabSize, MaxContextLen: cfg.MaxContextLen,
		EOSTokenIDs: slices.Clone(cfg.EOSTokenIDs), BOSTokenID: cfg.BOSTokenID,
		NumLayers: cfg.NumLayers, NumKVHeads: cfg.NumKVHeads, HeadDim: cfg.HeadDim,
	}
	var pieces [][]byte
	if vocab != nil {
		pieces = vocab.Pieces
	}
	b, err := null.NewPaced(info, null.NewScript(pieces, cfg.VocabSize, null.Text, cfg.EOSTokenIDs), opts.step)
	if err != nil {
		return nil, err
	}
	b.FailAfter(opts.failAfter)
	return b, nil
}
