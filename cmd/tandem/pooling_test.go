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
		{"rank", "", "", "want last, mean or cls"},
		{"none", "", "", "want last, mean or cls"},
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
