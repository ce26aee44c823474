package cohere

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	text := "a"
	for _, tc := range []struct {
		name, body, param string // param "" = valid
	}{
		{"texts", `{"texts":["a","b"],"input_type":"search_query"}`, ""},
		{"inputs", `{"inputs":[{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, ""},
		{"every type and truncate", `{"texts":["a"],"embedding_types":["float","base64","binary","ubinary"],"truncate":"START","max_tokens":3,"output_dimension":8}`, ""},
		{"nothing to embed", `{"model":"m"}`, "texts"},
		{"empty texts", `{"texts":[]}`, "texts"},
		{"texts and inputs", `{"texts":["a"],"inputs":[{"content":[{"type":"text","text":"a"}]}]}`, "texts"},
		{"images", `{"images":["data:image/png;base64,AA=="]}`, "images"},
		{"an image part", `{"inputs":[{"content":[{"type":"image_url","image_url":{"url":"data:,"}}]}]}`, "inputs"},
		{"a text part without text", `{"inputs":[{"content":[{"type":"text"}]}]}`, "inputs"},
		{"an unknown part", `{"inputs":[{"content":[{"type":"audio"}]}]}`, "inputs"},
		{"an input without content", `{"inputs":[{"content":[]}]}`, "inputs"},
		{"unknown input_type", `{"texts":["a"],"input_type":"query"}`, "input_type"},
		{"int8, whose calibration is Cohere's own", `{"texts":["a"],"embedding_types":["int8"]}`, "embedding_types"},
		{"bad truncate", `{"texts":["a"],"truncate":"end"}`, "truncate"},
		{"max_tokens 0", `{"texts":["a"],"max_tokens":0}`, "max_tokens"},
		{"output_dimension 0", `{"texts":["a"],"output_dimension":0}`, "output_dimension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r EmbedRequest
			if err := json.Unmarshal([]byte(tc.body), &r); err != nil {
				t.Fatal(err)
			}
			err := r.Validate()
			switch {
			case tc.param == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.param == "":
				if r.Truncate == "" {
					t.Error("truncate has no default")
				}
			case err == nil:
				t.Fatal("accepted")
			case err.Param == nil || *err.Param != tc.param || err.Message == "":
				t.Fatalf("param %v (%q), want %q", err.Param, err.Message, tc.param)
			}
		})
	}
	r := EmbedRequest{Inputs: []EmbedInput{{Content: []EmbedContent{{Type: "text", Text: &text}, {Type: "text", Text: &text}}}}}
	if got := r.TextParts(); !cmp.Equal(got, [][]string{{"a", "a"}}) {
		t.Errorf("TextParts %v", got)
	}
}

// TestTyped checks each encoding by hand: binary packs the sign bits
// (≥ 0 is 1) first value highest, eight to a byte, minus 128 when
// signed; base64 is the little-endian float32 bytes.
func TestTyped(t *testing.T) {
	v := []float32{1, -1, 0, -0.5, 2, 2, -3, 0.25, -1, -1, -1, -1, -1, -1, -1, 1}
	got, err := Typed([][]float32{v}, []string{"binary", "ubinary", "base64", "float"})
	if err != nil {
		t.Fatal(err)
	}
	// 1 0 1 0 1 1 0 1 = 0xAD = 173; 0 0 0 0 0 0 0 1 = 1
	if !cmp.Equal(got.Ubinary, [][]int{{173, 1}}) || !cmp.Equal(got.Binary, [][]int{{45, -127}}) {
		t.Errorf("ubinary %v binary %v", got.Ubinary, got.Binary)
	}
	raw, err := base64.StdEncoding.DecodeString(got.Base64[0])
	if err != nil || len(raw) != 4*len(v) {
		t.Fatalf("base64 %q: %v", got.Base64[0], err)
	}
	for i, x := range v {
		if y := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); y != x {
			t.Fatalf("base64 value %d: %v, want %v", i, y, x)
		}
	}
	if !cmp.Equal(got.Float, [][]float32{v}) {
		t.Errorf("float %v", got.Float)
	}
	if only, _ := Typed([][]float32{v}, nil); only.Float == nil || only.Base64 != nil || only.Binary != nil {
		t.Errorf("no types: %+v, want float only", only)
	}
	if _, err := Typed([][]float32{v[:12]}, []string{"ubinary"}); err == nil || !strings.Contains(err.Error(), "multiple of 8") {
		t.Errorf("12 values packed: %v", err)
	}
}

// TestResponse: v1 without embedding_types answers plain floats, as
// Cohere's v1 clients decode them (response_type embeddings_floats);
// with them, and always on v2, the embeddings by type.
func TestResponse(t *testing.T) {
	vecs := [][]float32{{0.5, -0.5, 0, 1, -1, 0.25, -0.25, 2}}
	for _, tc := range []struct {
		name  string
		v1    bool
		types []string
		want  string
	}{
		{"v1 floats", true, nil, `{"id":"e","embeddings":[[0.5,-0.5,0,1,-1,0.25,-0.25,2]],"texts":["x"],"meta":{"api_version":{"version":"1"},"billed_units":{"input_tokens":3}},"response_type":"embeddings_floats"}`},
		{"v1 by type", true, []string{"ubinary"}, `{"id":"e","embeddings":{"ubinary":[[181]]},"texts":["x"],"meta":{"api_version":{"version":"1"},"billed_units":{"input_tokens":3}},"response_type":"embeddings_by_type"}`},
		{"v2", false, nil, `{"id":"e","embeddings":{"float":[[0.5,-0.5,0,1,-1,0.25,-0.25,2]]},"texts":["x"],"meta":{"api_version":{"version":"2"},"billed_units":{"input_tokens":3}},"response_type":"embeddings_by_type"}`},
	} {
		r := EmbedRequest{Texts: []string{"x"}, EmbeddingTypes: tc.types}
		out, err := r.Response("e", tc.v1, vecs, 3)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out)
		if diff := cmp.Diff(tc.want, string(b)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
