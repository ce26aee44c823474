package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Methods are the Method values Config accepts.
const (
	MethodNgram       = "ngram"        // vLLM's prompt lookup
	MethodNgramSimple = "ngram-simple" // llama.cpp's --spec-type ngram-simple
	MethodDraftModel  = "draft_model"  // vLLM's draft model (llama.cpp's draft-simple, -md): enginecore/drafter
)

// Config is the engine's speculative decoding setting (vLLM's
// --speculative-config, or llama.cpp's --spec-type with its sizes).
type Config struct {
	Method string
	// NumSpeculativeTokens (k) caps a draft's length: a step verifies at
	// most 1+k positions of a request.
	NumSpeculativeTokens int
	// PromptLookupMin and PromptLookupMax bound the n-gram the draft
	// follows: [Ngram] takes the longest in that range; [Simple] takes
	// exactly PromptLookupMax (llama.cpp's size N).
	PromptLookupMin, PromptLookupMax int
	// Model is the draft model (MethodDraftModel): a path the engine
	// loads as it loads its own model.
	Model string
	// PMin stops a draft model's draft at a token whose probability is
	// below it (llama.cpp's --spec-draft-p-min); 0 = never.
	PMin float64
	// MinDraft drops drafts shorter than it (llama.cpp's
	// --spec-draft-n-min); a request's speculative.n_min overrides it.
	MinDraft int
	// SynthRates (benchmarking only: llama-server's --spec-synth-rates)
	// keeps draft token j with probability SynthRates[j], whatever the
	// model samples, to measure speed at a chosen acceptance rate: the
	// output is not the model's. k values in [0, 1], non-increasing.
	SynthRates []float64
}

// Defaults of vLLM's ngram method and of llama.cpp's ngram-simple
// (--spec-ngram-simple-size-n and -size-m).
const (
	DefaultPromptLookup = 5
	DefaultSimpleSizeN  = 12
	DefaultSimpleSizeM  = 48
	DefaultDraftNMax    = 3 // llama.cpp's --spec-draft-n-max
)

// ParseVLLM reads vLLM's --speculative-config JSON. Of its methods
// "ngram" and "draft_model" run here (EAGLE, MTP and the others need
// their own heads); num_speculative_tokens is required, as in vLLM;
// prompt_lookup_min/max default to each other, or both to 5; a
// "model" without a "method" is a draft model, as in vLLM.
func ParseVLLM(s string) (Config, error) {
	var raw struct {
		Method               *string `json:"method"`
		Model                *string `json:"model"`
		NumSpeculativeTokens *int    `json:"num_speculative_tokens"`
		PromptLookupMax      *int    `json:"prompt_lookup_max"`
		PromptLookupMin      *int    `json:"prompt_lookup_min"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if err := dec.Decode(&raw); err != nil {
		return Config{}, fmt.Errorf("speculative-config: %w", err)
	}
	method := ""
	switch {
	case raw.Method != nil:
		method = *raw.Method
	case raw.Model != nil && (*raw.Model == "ngram" || *raw.Model == "[ngram]"):
		method = MethodNgram // vLLM's older spelling: "model": "[ngram]"
	case raw.Model != nil:
		method = "draft_model"
	}
	switch method {
	case MethodNgram, MethodDraftModel:
	case "":
		return Config{}, errors.New(`speculative-config: "method" is required (Tandem runs "ngram" and "draft_model")`)
	default:
		return Config{}, fmt.Errorf("speculative-config: method %q is not built (Tandem runs \"ngram\" and \"draft_model\")", method)
	}
	if raw.NumSpeculativeTokens == nil {
		return Config{}, errors.New("speculative-config: num_speculative_tokens is required")
	}
	if method == MethodDraftModel {
		if raw.Model == nil || *raw.Model == "" {
			return Config{}, errors.New(`speculative-config: method "draft_model" needs "model", the draft model`)
		}
		c := Config{Method: MethodDraftModel, NumSpeculativeTokens: *raw.NumSpeculativeTokens, Model: *raw.Model}
		return c, c.Validate()
	}
	c := Config{Method: MethodNgram, NumSpeculativeTokens: *raw.NumSpeculativeTokens}
	switch lo, hi := raw.PromptLookupMin, raw.PromptLookupMax; {
	case lo == nil && hi == nil:
		c.PromptLookupMin, c.PromptLookupMax = DefaultPromptLookup, DefaultPromptLookup
	case lo == nil:
		c.PromptLookupMin, c.PromptLookupMax = *hi, *hi
	case hi == nil:
		c.PromptLookupMin, c.PromptLookupMax = *lo, *lo
	default:
		c.PromptLookupMin, c.PromptLookupMax = *lo, *hi
	}
	return c, c.Validate()
}

// SimpleConfig is llama.cpp's ngram-simple with n-gram size n and draft
// size m.
func SimpleConfig(n, m int) (Config, error) {
	c := Config{Method: MethodNgramSimple, NumSpeculativeTokens: m, PromptLookupMin: n, PromptLookupMax: n}
	return c, c.Validate()
}

// MaxDraft bounds NumSpeculativeTokens: a verification step's logits rows
// are [1+k][V] float32 per request.
const MaxDraft = 256

// Validate checks c's ranges.
func (c Config) Validate() error {
	switch {
	case c.Method != MethodNgram && c.Method != MethodNgramSimple && c.Method != MethodDraftModel:
		return fmt.Errorf("speculative decoding: unknown method %q (want %s, %s or %s)", c.Method, MethodNgram, MethodNgramSimple, MethodDraftModel)
	case c.NumSpeculativeTokens < 1 || c.NumSpeculativeTokens > MaxDraft:
		return fmt.Errorf("speculative decoding: num_speculative_tokens %d: want 1..%d", c.NumSpeculativeTokens, MaxDraft)
	case c.Method == MethodDraftModel && c.Model == "":
		return errors.New("speculative decoding: a draft model method needs the draft model")
	case c.PMin < 0 || c.PMin > 1 || c.MinDraft < 0:
		return fmt.Errorf("speculative decoding: p_min %g (want 0..1) and n_min %d (want ≥ 0)", c.PMin, c.MinDraft)
	case len(c.SynthRates) > 0 && len(c.SynthRates) != c.NumSpeculativeTokens:
		return fmt.Errorf("speculative decoding: synthetic acceptance rates must contain %d values, got %d", c.NumSpeculativeTokens, len(c.SynthRates))
	case !validRates(c.SynthRates):
		return errors.New("speculative decoding: synthetic acceptance rates must be within [0, 1] and must not increase")
	case c.Method == MethodDraftModel:
		return nil
	case c.PromptLookupMin < 1 || c.PromptLookupMax > 1024:
		return fmt.Errorf("speculative decoding: n-gram sizes %d..%d: want 1..1024", c.PromptLookupMin, c.PromptLookupMax)
	case c.PromptLookupMin > c.PromptLookupMax:
		return fmt.Errorf("speculative decoding: prompt_lookup_min=%d must be <= prompt_lookup_max=%d", c.PromptLookupMin, c.PromptLookupMax)
	}
	return nil
}

func validRates(rates []float64) bool {
	for i, p := range rates {
		if !(p >= 0 && p <= 1) || i > 0 && p > rates[i-1] {
			return false
		}
	}
	return true
}

// Proposer drafts up to k tokens to follow tokens.
type Proposer interface {
	Propose(tokens []int32, k int) []int32
}

// Proposer is c's n-gram method; nil for a draft model (the engine runs
// it: enginecore/drafter).
func (c Config) Proposer() Proposer {
	switch c.Method {
	case MethodNgramSimple:
		return Simple{N: c.PromptLookupMax}
	case MethodNgram:
		return Ngram{Min: c.PromptLookupMin, Max: c.PromptLookupMax}
	}
	return nil
}
