package openai

import (
	"math"
	"testing"
)

// TestNormalizeEmbedding: llama-server's embd_normalize norms.
func TestNormalizeEmbedding(t *testing.T) {
	for _, tc := range []struct {
		p       int
		in, out []float32
	}{
		{-1, []float32{3, -4}, []float32{3, -4}},
		{0, []float32{3, -4}, []float32{24570, -32760}},
		{1, []float32{3, -4, 1}, []float32{0.375, -0.5, 0.125}},
		{2, []float32{3, -4}, []float32{0.6, -0.8}},
		{3, []float32{1, -1}, []float32{float32(1 / math.Cbrt(2)), float32(-1 / math.Cbrt(2))}},
		{2, []float32{0, 0}, []float32{0, 0}},
		{0, []float32{0}, []float32{0}},
	} {
		v := append([]float32(nil), tc.in...)
		NormalizeEmbedding(v, tc.p)
		for i := range v {
			if math.Abs(float64(v[i]-tc.out[i])) > 1e-5*math.Max(1, math.Abs(float64(tc.out[i]))) {
				t.Errorf("p=%d %v: %v, want %v", tc.p, tc.in, v, tc.out)
				break
			}
		}
	}
}

// TestEmbeddingRequestContent: llama-server's content stands in for a
// missing input; embd_normalize decides who normalizes.
func TestEmbeddingRequestContent(t *testing.T) {
	var r EmbeddingRequest
	if e := Decode([]byte(`{"content":["a","b"],"embd_normalize":1}`), &r); e != nil {
		t.Fatal(e)
	}
	if e := r.Validate(); e != nil || string(r.Input) != `["a","b"]` || r.EngineNormalizes() {
		t.Fatalf("content: %v %s engine normalizes %v", e, r.Input, r.EngineNormalizes())
	}
	for _, body := range []string{`{}`, `{"input":null}`, `{"content":null}`} {
		var r EmbeddingRequest
		if e := Decode([]byte(body), &r); e != nil || r.Validate() == nil {
			t.Errorf("%s: no error", body)
		}
	}
	for body, want := range map[string]bool{`{"input":"a"}`: true, `{"input":"a","normalize":false}`: false,
		`{"input":"a","normalize":false,"embd_normalize":2}`: true, `{"input":"a","embd_normalize":-1}`: false} {
		var r EmbeddingRequest
		if e := Decode([]byte(body), &r); e != nil || r.Validate() != nil || r.EngineNormalizes() != want {
			t.Errorf("%s: engine normalizes %v, want %v", body, r.EngineNormalizes(), want)
		}
	}
}
