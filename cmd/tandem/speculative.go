package main

import (
	"flag"
	"fmt"

	"github.com/tandem-llm/tandem/enginecore/spec"
)

// specFlags are the engine's speculative decoding flags: vLLM's
// --speculative-config and llama-server's --spec-type with its n-gram
// sizes (docs/architecture.md#speculative-decoding).
type specFlags struct {
	config       string // --speculative-config JSON
	typ          string // --spec-type
	sizeN, sizeM int    // --spec-ngram-simple-size-n, -size-m
}

// specFlagNames are the flags serve and run-batch pass to engines.
var specFlagNames = []string{"speculative-config", "spec-type", "spec-ngram-simple-size-n", "spec-ngram-simple-size-m"}

func (f *specFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "speculative-config", "", `vLLM's speculative decoding `+"`JSON`"+`: {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": N, "prompt_lookup_max": M} drafts up to K tokens by prompt lookup (the longest recurring suffix of N..M tokens, default 5..5) and verifies them in one step; output is unchanged (exact rejection sampling), decode faster where text repeats (code edits, quoting, RAG)`)
	fs.StringVar(&f.typ, "spec-type", "none", "llama-server's speculative decoding `type`: none or ngram-simple (the last --spec-ngram-simple-size-n tokens' latest earlier occurrence; the draft is the up to --spec-ngram-simple-size-m tokens after it); draft-model types need a second model, which Tandem does not run")
	fs.IntVar(&f.sizeN, "spec-ngram-simple-size-n", spec.DefaultSimpleSizeN, "ngram-simple: `tokens` of the n-gram looked up")
	fs.IntVar(&f.sizeM, "spec-ngram-simple-size-m", spec.DefaultSimpleSizeM, "ngram-simple: most `tokens` drafted")
}

// resolve is the engine's speculative decoding config, nil when off.
func (f *specFlags) resolve() (*spec.Config, error) {
	switch {
	case f.config != "" && f.typ != "none":
		return nil, fmt.Errorf("engine: --speculative-config and --spec-type: give one")
	case f.config != "":
		c, err := spec.ParseVLLM(f.config)
		if err != nil {
			return nil, fmt.Errorf("engine: --%w", err)
		}
		return &c, nil
	}
	switch f.typ {
	case "none", "":
		return nil, nil
	case spec.MethodNgramSimple:
		c, err := spec.SimpleConfig(f.sizeN, f.sizeM)
		if err != nil {
			return nil, fmt.Errorf("engine: --spec-type ngram-simple: %w", err)
		}
		return &c, nil
	}
	return nil, fmt.Errorf("engine: --spec-type %q: Tandem runs none or ngram-simple (draft models, EAGLE, MTP and the other n-gram maps are not built)", f.typ)
}
