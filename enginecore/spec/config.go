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
}

// Defaults of vLLM's ngram method and of llama.cpp's ngram-simple
// (--spec-ngram-simple-size-n and -size-m).
const (
	DefaultPromptLookup = 5
	DefaultSimpleSizeN  = 12
	DefaultSimpleSizeM  = 48
)

// ParseVLLM reads vLLM's --speculative-config JSON. Of its methods only
// "ngram" runs here (a draft model, EAGLE or MTP needs a second model in
// the engine); num_speculative_tokens is required, as in vLLM, and
// prompt_lookup_min/max default to each other, or both to 5.
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
	if method != MethodNgram {
		if method == "" {
			return Config{}, errors.New(`speculative-config: "method" is required (Tandem runs "ngram")`)
		}
		return Config{}, fmt.Errorf("speculative-config: method %q needs a draft model in the engine, which Tandem does not run yet; use \"ngram\"", method)
	}
	if raw.NumSpeculativeTokens == nil {
		return Config{}, errors.New("speculative-config: num_speculative_tokens is required")
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
	case c.Method != MethodNgram && c.Method != MethodNgramSimple:
		return fmt.Errorf("speculative decoding: unknown method %q (want %s or %s)", c.Method, MethodNgram, MethodNgramSimple)
	case c.NumSpeculativeTokens < 1 || c.NumSpeculativeTokens > MaxDraft:
		return fmt.Errorf("speculative decoding: num_speculative_tokens %d: want 1..%d", c.NumSpeculativeTokens, MaxDraft)
	case c.PromptLookupMin < 1 || c.PromptLookupMax > 1024:
		return fmt.Errorf("speculative decoding: n-gram sizes %d..%d: want 1..1024", c.PromptLookupMin, c.PromptLookupMax)
	case c.PromptLookupMin > c.PromptLookupMax:
		return fmt.Errorf("speculative decoding: prompt_lookup_min=%d must be <= prompt_lookup_max=%d", c.PromptLookupMin, c.PromptLookupMax)
	}
	return nil
}

// Proposer drafts up to k tokens to follow tokens.
type Proposer interface {
	Propose(tokens []int32, k int) []int32
}

// Proposer is c's method.
func (c Config) Proposer() Proposer {
	if c.Method == MethodNgramSimple {
		return Simple{N: c.PromptLookupMax}
	}
	return Ngram{Min: c.PromptLookupMin, Max: c.PromptLookupMax}
}
