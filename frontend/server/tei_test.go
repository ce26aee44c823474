package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTEIEmbed: TEI's POST /embed (and POST /, where huggingface_hub's
// InferenceClient posts) embeds each input as /v1/embeddings does and
// answers a bare array of vectors; truncate cuts from the end (or the
// start with truncation_direction Left); what TEI refuses is its 422
// Validation error, and reaches no engine.
func TestTEIEmbed(t *testing.T) {
	f := cohereEngine() // [len, first, last, dims, …]
	url := newTestServer(t, f, "").URL
	long := strings.Repeat("a", 70) + "bc" // over the context of 64 with the BOS
	for _, tc := range []struct {
		name, path, body string
		want             [][]float32
	}{
		{"one string, at the root", "/", `{"inputs":"ab"}`, [][]float32{{3, 256, 'b', 0, -1, 1, -2, 0}}},
		{"strings", "/embed", `{"inputs":["ab","xyz"],"normalize":false}`, [][]float32{{3, 256, 'b', 0, -1, 1, -2, 0}, {4, 256, 'z', 0, -1, 1, -2, 0}}},
		{"dimensions", "/embed", `{"inputs":"ab","dimensions":4}`, [][]float32{{3, 256, 'b', 4}}},
		{"truncate keeps the start", "/embed", fmt.Sprintf(`{"inputs":%q,"truncate":true}`, long), [][]float32{{64, 256, 'a', 0, -1, 1, -2, 0}}},
		{"truncate Left keeps the end", "/embed", fmt.Sprintf(`{"inputs":%q,"truncate":true,"truncation_direction":"Left"}`, long), [][]float32{{64, 'a', 'c', 0, -1, 1, -2, 0}}},
	} {
		code, body := postTo(t, url, tc.path, tc.body)
		var got [][]float32
		if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
			t.Fatalf("%s: %d %s", tc.name, code, body)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	reqs := f.requests()
	if p := reqs[1].Pooling; p.Normalize || !reqs[0].Pooling.Normalize {
		t.Errorf("normalize: default %v, false %v", reqs[0].Pooling.Normalize, p.Normalize)
	}

	before := len(f.requests())
	for _, tc := range []struct{ name, body string }{
		{"no inputs", `{}`},
		{"an object", `{"inputs":{"a":1}}`},
		{"a prompt name", `{"inputs":"ab","prompt_name":"query"}`},
		{"base64", `{"inputs":"ab","encoding_format":"base64"}`},
		{"a bad direction", `{"inputs":"ab","truncate":true,"truncation_direction":"Up"}`},
		{"too long without truncate", fmt.Sprintf(`{"inputs":%q}`, long)},
	} {
		code, body := postTo(t, url, "/embed", tc.body)
		var e teiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 422 || e.ErrorType != "Validation" || e.Error == "" {
			t.Errorf("%s: %d %s, want TEI's 422 Validation error", tc.name, code, body)
		}
	}
	if n := len(f.requests()); n != before {
		t.Errorf("refused requests reached the engine: %d", n-before)
	}
}
