package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// cohereEngine answers an embedding request with 8 values: the prompt's
// length, its first and last token, Dimensions, then -1, 1, -2, 0 (so
// the binary encodings have both signs), the first Dimensions of them.
func cohereEngine() *fakeEngine {
	return &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		p := req.PromptTokenIDs
		v := []float32{float32(len(p)), float32(p[0]), float32(p[len(p)-1]), float32(req.Pooling.Dimensions), -1, 1, -2, 0}
		if d := req.Pooling.Dimensions; d > 0 && d < len(v) {
			v = v[:d]
		}
		return []wire.EngineCoreOutput{{RequestID: req.RequestID, FinishReason: wire.FinishStop, PoolingOutput: v}}
	}}
}

// TestCohereEmbed: /v2/embed and /v1/embed embed each text as
// /v1/embeddings does (normalized, the model's special tokens,
// output_dimension as dimensions) and answer in Cohere's shapes; truncate
// END keeps the first max_tokens tokens, START the last, NONE refuses a
// longer input; inputs' text parts go through the chat template as one
// user message; what Cohere or vLLM refuse is a 400 that reaches no
// engine.
func TestCohereEmbed(t *testing.T) {
	f := cohereEngine()
	url := newTestServer(t, f, "").URL

	code, body := postTo(t, url, "/v2/embed", `{"model":"dummy","texts":["ab","xyz"],"input_type":"search_document","output_dimension":8}`)
	want := `{"id":"embd-fixed","embeddings":{"float":[[3,256,98,8,-1,1,-2,0],[4,256,122,8,-1,1,-2,0]]},"texts":["ab","xyz"],"meta":{"api_version":{"version":"2"},"billed_units":{"input_tokens":7}},"response_type":"embeddings_by_type"}`
	if code != 200 || body != want+"\n" {
		t.Fatalf("v2: %d %s\nwant %s", code, body, want)
	}
	for _, r := range f.requests() {
		if p := r.Pooling; p == nil || !p.Normalize || p.Dimensions != 8 {
			t.Errorf("engine request pooling %+v, want normalized, 8 dimensions", p)
		}
	}

	code, body = postTo(t, url, "/v1/embed", `{"texts":["ab"]}`)
	var floats struct {
		Embeddings   [][]float32 `json:"embeddings"`
		Texts        []string    `json:"texts"`
		ResponseType string      `json:"response_type"`
	}
	if err := json.Unmarshal([]byte(body), &floats); err != nil || code != 200 || floats.ResponseType != "embeddings_floats" ||
		!cmp.Equal(floats.Embeddings, [][]float32{{3, 256, 98, 0, -1, 1, -2, 0}}) || !cmp.Equal(floats.Texts, []string{"ab"}) {
		t.Fatalf("v1 floats: %d %s", code, body)
	}

	code, body = postTo(t, url, "/v1/embed", `{"model":"dummy","texts":["ab"],"embedding_types":["ubinary","binary","base64"]}`)
	var typed struct {
		Embeddings struct {
			Float   [][]float32 `json:"float"`
			Base64  []string    `json:"base64"`
			Binary  [][]int     `json:"binary"`
			Ubinary [][]int     `json:"ubinary"`
		} `json:"embeddings"`
		ResponseType string `json:"response_type"`
	}
	// signs of 3 256 98 0 -1 1 -2 0: 1 1 1 1 0 1 0 1 = 245
	if err := json.Unmarshal([]byte(body), &typed); err != nil || code != 200 || typed.ResponseType != "embeddings_by_type" ||
		typed.Embeddings.Float != nil || !cmp.Equal(typed.Embeddings.Ubinary, [][]int{{245}}) || !cmp.Equal(typed.Embeddings.Binary, [][]int{{117}}) ||
		len(typed.Embeddings.Base64) != 1 {
		t.Fatalf("v1 by type: %d %s", code, body)
	}

	// Truncation: "abcdef" is BOS a b c d e f.
	for _, tc := range []struct {
		name, fields   string
		n, first, last int
	}{
		{"END (the default) keeps the start", `"max_tokens":3`, 3, 256, 'b'},
		{"START keeps the end", `"max_tokens":3,"truncate":"START"`, 3, 'd', 'f'},
		{"NONE within max_tokens", `"max_tokens":7,"truncate":"NONE"`, 7, 256, 'f'},
	} {
		code, body := postTo(t, url, "/v2/embed", `{"texts":["abcdef"],`+tc.fields+`}`)
		var out struct {
			Embeddings struct{ Float [][]float32 } `json:"embeddings"`
			Meta       struct {
				BilledUnits struct {
					InputTokens int `json:"input_tokens"`
				} `json:"billed_units"`
			} `json:"meta"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 {
			t.Fatalf("%s: %d %s", tc.name, code, body)
		}
		if v := out.Embeddings.Float[0]; int(v[0]) != tc.n || int(v[1]) != tc.first || int(v[2]) != tc.last || out.Meta.BilledUnits.InputTokens != tc.n {
			t.Errorf("%s: %s; want %d tokens from %d to %d", tc.name, body, tc.n, tc.first, tc.last)
		}
	}

	// Mixed inputs: the text parts as one user message, no generation prompt.
	code, body = postTo(t, url, "/v2/embed", `{"inputs":[{"content":[{"type":"text","text":"ab"},{"type":"text","text":"cd"}]}]}`)
	if code != 200 {
		t.Fatalf("inputs: %d %s", code, body)
	}
	reqs := f.requests()
	got := reqs[len(reqs)-1].PromptTokenIDs
	rendered, err := tokenizer.NewByte().ChatTemplate().Render([]tokenizer.Message{{Role: "user", Content: "ab\ncd"}}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wantIDs := tokenizer.NewByte().Encode(rendered, false); !cmp.Equal(got, wantIDs) {
		t.Errorf("inputs prompt %v, want the chat template's %q", got, rendered)
	}

	before := len(f.requests())
	for _, tc := range []struct{ name, path, body, param string }{
		{"no texts", "/v2/embed", `{"model":"dummy"}`, "texts"},
		{"images", "/v2/embed", `{"images":["data:image/png;base64,AA=="]}`, "images"},
		{"an image part", "/v2/embed", `{"inputs":[{"content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, "inputs"},
		{"unknown input_type", "/v1/embed", `{"texts":["a"],"input_type":"query"}`, "input_type"},
		{"int8", "/v2/embed", `{"texts":["a"],"embedding_types":["int8"]}`, "embedding_types"},
		{"truncate NONE over max_tokens", "/v2/embed", `{"texts":["abcdef"],"truncate":"NONE","max_tokens":3}`, "max_tokens"},
		{"truncate NONE over the context", "/v2/embed", fmt.Sprintf(`{"texts":[%q],"truncate":"NONE"}`, strings.Repeat("a", 80)), "input"},
		{"bad JSON", "/v1/embed", `{"texts":`, ""},
	} {
		code, body := postTo(t, url, tc.path, tc.body)
		var e struct {
			Error struct {
				Param *string `json:"param"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 || (tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param)) {
			t.Errorf("%s: %d %s, want a 400 on %q", tc.name, code, body, tc.param)
		}
	}
	if n := len(f.requests()); n != before {
		t.Errorf("refused requests reached the engine: %d", n-before)
	}
	if code, body := postTo(t, url, "/v2/embed", `{"model":"other","texts":["a"]}`); code != 404 {
		t.Errorf("another model: %d %s", code, body)
	}
	// Binary encodings need a multiple of 8 values: the engine's 8 cut to 4.
	if code, body := postTo(t, url, "/v2/embed", `{"texts":["a"],"output_dimension":4,"embedding_types":["binary"]}`); code == 200 {
		t.Errorf("binary of a 4-value vector: %d %s", code, body)
	}
}
