package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/loader"
)

// hfOverridesUsage is --hf-overrides' help.
const hfOverridesUsage = "vLLM's `JSON` object of changes to the model's config: Tandem reads architectures, classifier_from_token, method and is_original_qwen3_reranker, " +
	`which serve a causal LM as a reranker or classifier with a head built from its LM head's rows of the named tokens, as vLLM builds it, e.g. ` +
	`'{"architectures":["Qwen3ForSequenceClassification"],"classifier_from_token":["no","yes"],"is_original_qwen3_reranker":true}' (docs/api.md#scoring-and-reranking)`

// parseHFOverrides reads --hf-overrides: nil when not given; another key
// than those Tandem reads is an error that names them, so that an
// override never goes silently unapplied.
func parseHFOverrides(s string) ([]loader.OpenOption, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &keys); err != nil {
		return nil, fmt.Errorf("--hf-overrides: want a JSON object: %w", err)
	}
	for k := range keys {
		if !slices.Contains(loader.HFOverrideKeys, k) {
			return nil, fmt.Errorf("--hf-overrides: key %q is not supported (Tandem reads %s)", k, strings.Join(loader.HFOverrideKeys, ", "))
		}
	}
	var o loader.HFOverrides
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("--hf-overrides: %w", err)
	}
	return []loader.OpenOption{loader.WithHFOverrides(o)}, nil
}
