package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/spec"
)

// specFlags are the engine's speculative decoding flags: vLLM's
// --speculative-config and llama-server's --spec-type with its n-gram
// sizes (docs/architecture.md#speculative-decoding).
type specFlags struct {
	config       string  // --speculative-config JSON
	typ          string  // --spec-type
	sizeN, sizeM int     // --spec-ngram-simple-size-n, -size-m
	draft        string  // -md: the draft model
	nMax, nMin   int     // --spec-draft-n-max, -n-min
	pMin         float64 // --spec-draft-p-min
	synthRates   string  // --spec-synth-rates
}

// specFlagNames are the flags serve and run-batch pass to engines.
var specFlagNames = []string{"speculative-config", "spec-type", "spec-ngram-simple-size-n", "spec-ngram-simple-size-m",
	"md", "model-draft", "spec-draft-model", "spec-draft-n-max", "spec-draft-n-min", "spec-draft-p-min", "spec-synth-rates"}

func (f *specFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "speculative-config", "", `vLLM's speculative decoding `+"`JSON`"+`: {"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": N, "prompt_lookup_max": M} drafts up to K tokens by prompt lookup (the longest recurring suffix of N..M tokens, default 5..5) and verifies them in one step; output is unchanged (exact rejection sampling), decode faster where text repeats (code edits, quoting, RAG)`)
	fs.StringVar(&f.typ, "spec-type", "none", "llama-server's speculative decoding `type`: none, ngram-simple (the last --spec-ngram-simple-size-n tokens' latest earlier occurrence; the draft is the up to --spec-ngram-simple-size-m tokens after it) or draft-simple (a draft model, -md; the default when -md is given)")
	fs.IntVar(&f.sizeN, "spec-ngram-simple-size-n", spec.DefaultSimpleSizeN, "ngram-simple: `tokens` of the n-gram looked up")
	fs.IntVar(&f.sizeM, "spec-ngram-simple-size-m", spec.DefaultSimpleSizeM, "ngram-simple: most `tokens` drafted")
	md := "llama-server's draft model for speculative decoding: a GGUF `file` (or Hugging Face directory) of a small model with the model's tokenizer; it drafts greedily, the model verifies (vLLM's method draft_model)"
	fs.StringVar(&f.draft, "md", "", md)
	fs.StringVar(&f.draft, "model-draft", "", md)
	fs.StringVar(&f.draft, "spec-draft-model", "", md)
	fs.IntVar(&f.nMax, "spec-draft-n-max", spec.DefaultDraftNMax, "draft model: most `tokens` drafted per step")
	fs.IntVar(&f.nMin, "spec-draft-n-min", 0, "fewest draft `tokens` worth verifying: a shorter draft is dropped (a request's speculative.n_min overrides it)")
	fs.Float64Var(&f.pMin, "spec-draft-p-min", 0, "draft model: stop drafting at a token whose draft `probability` is below this")
	fs.StringVar(&f.synthRates, "spec-synth-rates", "", "benchmarking only, llama-server's: comma-separated `P0,P1,…` (one per draft position, non-increasing): keep draft token j with probability Pj whatever the model samples, to measure speed at that acceptance; the output is not the model's")
}

// resolve is the engine's speculative decoding config, nil when off.
func (f *specFlags) resolve() (*spec.Config, error) {
	c, err := f.method()
	if err != nil || c == nil {
		if err == nil && f.synthRates != "" {
			err = fmt.Errorf("engine: --spec-synth-rates without speculative decoding")
		}
		return c, err
	}
	if f.synthRates != "" {
		for _, p := range strings.Split(f.synthRates, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, fmt.Errorf("engine: --spec-synth-rates %q: %w", f.synthRates, err)
			}
			c.SynthRates = append(c.SynthRates, v)
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("engine: --spec-synth-rates: %w", err)
		}
	}
	return c, nil
}

// method is the speculative decoding method the flags name.
func (f *specFlags) method() (*spec.Config, error) {
	llama := f.typ != "none" || f.draft != ""
	switch {
	case f.config != "" && llama:
		return nil, fmt.Errorf("engine: --speculative-config and --spec-type or -md: give one")
	case f.config != "":
		c, err := spec.ParseVLLM(f.config)
		if err != nil {
			return nil, fmt.Errorf("engine: --%w", err)
		}
		return &c, nil
	}
	typ := f.typ
	if typ == "none" && f.draft != "" {
		typ = "draft-simple" // llama-server infers it from the draft model
	}
	var c spec.Config
	var err error
	switch typ {
	case "none", "":
		return nil, nil
	case spec.MethodNgramSimple:
		c, err = spec.SimpleConfig(f.sizeN, f.sizeM)
	case "draft-simple":
		if f.draft == "" {
			return nil, fmt.Errorf("engine: --spec-type draft-simple needs the draft model, -md")
		}
		c = spec.Config{Method: spec.MethodDraftModel, Model: f.draft, NumSpeculativeTokens: f.nMax, PMin: f.pMin}
		err = c.Validate()
	default:
		return nil, fmt.Errorf("engine: --spec-type %q: Tandem runs none, ngram-simple and draft-simple (EAGLE, MTP, DFlash and the other n-gram maps are not built)", f.typ)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: --spec-type %s: %w", typ, err)
	}
	c.MinDraft = f.nMin
	return &c, nil
}
