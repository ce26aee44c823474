package main

import (
	"strings"
	"testing"
)

// TestPoolingType: --pooling (either case) and --pooler-config's
// pooling_type name the engine's default pooling; both must agree, and
// what Tandem does not read is an error that says so.
func TestPoolingType(t *testing.T) {
	for _, tc := range []struct {
		flag, config string
		want, err    string
	}{
		{"", "", "", ""},
		{"mean", "", "MEAN", ""},
		{"LAST", "", "LAST", ""},
		{"", `{"pooling_type": "CLS"}`, "CLS", ""},
		{"cls", `{"pooling_type": "cls", "normalize": true}`, "CLS", ""},
		{"", `{"normalize": true}`, "", ""},
		{"rank", "", "", "want last, mean, cls or none"},
		{"none", "", "NONE", ""},
		{"", `{"pooling_type": "ALL"}`, "NONE", ""},
		{"last", `{"pooling_type": "MEAN"}`, "", "disagree"},
		{"", `{"pooling_type": "STEP"}`, "", "pooling_type"},
		{"", `{"dimensions": 64}`, "", "unknown field"},
		{"", `{"normalize": false}`, "", "normalize false"},
		{"", `{"pooling_type": `, "", "--pooler-config"},
	} {
		got, err := poolingType(tc.flag, tc.config)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--pooling %q --pooler-config %q: error %v, want one with %q", tc.flag, tc.config, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("--pooling %q --pooler-config %q: %q, %v; want %q", tc.flag, tc.config, got, err, tc.want)
		}
	}
}

// TestEmbedFlags: vLLM's and llama-server's embedding switches are read;
// the values asking for what Tandem does not serve are refused.
func TestEmbedFlags(t *testing.T) {
	for _, tc := range []struct {
		f   embedFlags
		err string
	}{
		{embedFlags{runner: "auto", convert: "auto", task: "auto"}, ""},
		{embedFlags{runner: "pooling", convert: "embed", task: "embed", embeddings: true}, ""},
		{embedFlags{runner: "generate", convert: "none", task: "embedding"}, ""},
		{embedFlags{runner: "classify", convert: "auto", task: "auto"}, "--runner classify"},
		{embedFlags{runner: "auto", convert: "reward", task: "auto"}, "--convert reward"},
		{embedFlags{runner: "auto", convert: "auto", task: "score"}, "--task score"},
	} {
		err := tc.f.check()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.err)
		}
	}
}
