package main

import (
	"strings"
	"testing"
)

// TestParseHFOverrides: --hf-overrides takes vLLM's JSON; a key Tandem
// does not read is an error naming the keys it reads, so that an override
// is never silently dropped.
func TestParseHFOverrides(t *testing.T) {
	for _, tc := range []struct {
		in, err string // err "" = accepted
		opts    int
	}{
		{"", "", 0},
		{`{"architectures":["Qwen3ForSequenceClassification"],"classifier_from_token":["no","yes"],"is_original_qwen3_reranker":true}`, "", 1},
		{`{"classifier_from_token":["Yes"],"method":"no_post_processing"}`, "", 1},
		{`{"max_position_embeddings":65536}`, `key "max_position_embeddings" is not supported (Tandem reads architectures, classifier_from_token, method, is_original_qwen3_reranker)`, 0},
		{`["no","yes"]`, "want a JSON object", 0},
		{`{"classifier_from_token":"yes"}`, "--hf-overrides", 0},
	} {
		opts, err := parseHFOverrides(tc.in)
		switch {
		case tc.err == "" && (err != nil || len(opts) != tc.opts):
			t.Errorf("%s: %d options, %v", tc.in, len(opts), err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error with %q", tc.in, err, tc.err)
		}
	}
}
