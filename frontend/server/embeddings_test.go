package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/ollama"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// embedEngine answers an embedding request with [len(prompt), last
// token, Dimensions] (after a progress output), a generation with an
// error: what the server sends and reads shows in the vectors.
func embedEngine() *fakeEngine {
	return &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		if req.Pooling == nil {
			return []wire.EngineCoreOutput{{RequestID: req.RequestID, FinishReason: wire.FinishError, StopReason: "not an embedding"}}
		}
		v := []float32{float32(len(req.PromptTokenIDs)), float32(req.PromptTokenIDs[len(req.PromptTokenIDs)-1]), float32(req.Pooling.Dimensions)}
		return []wire.EngineCoreOutput{{RequestID: req.RequestID},
			{RequestID: req.RequestID, FinishReason: wire.FinishStop, PoolingOutput: v}}
	}}
}

// TestEmbeddings: every input becomes one pooled engine request, the
// answers come back in input order as floats or base64, usage counts the
// prompt tokens, and bad requests get 400s without reaching the engine.
func TestEmbeddings(t *testing.T) {
	f := embedEngine()
	url := newTestServer(t, f, "").URL
	code, body := postTo(t, url, "/v1/embeddings", `{"model":"dummy","input":["ab","xyz"],"encoding_format":"float","dimensions":2}`)
	var resp openai.EmbeddingResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	want := [][]float32{{3, 'b', 2}, {4, 'z', 2}} // the byte tokenizer adds a BOS
	if resp.Object != "list" || resp.Model != "dummy" || len(resp.Data) != 2 || resp.Usage.PromptTokens != 7 || resp.Usage.TotalTokens != 7 {
		t.Fatalf("response %s", body)
	}
	for i, d := range resp.Data {
		var v []float32
		if err := json.Unmarshal(d.Embedding, &v); err != nil || d.Index != i || d.Object != "embedding" {
			t.Fatalf("item %d: %s", i, body)
		}
		if !equalF32(v, want[i]) {
			t.Errorf("item %d: %v, want %v", i, v, want[i])
		}
	}
	for _, r := range f.requests() {
		if p := r.Pooling; p == nil || !p.Normalize || p.Dimensions != 2 || p.PoolingType != wire.PoolingDefault {
			t.Errorf("engine request pooling %+v, want normalized, 2 dimensions, the engine's type", p)
		}
	}

	// base64 (the Python SDK's default), one string input, normalize false.
	code, body = postTo(t, url, "/v1/embeddings", `{"input":"hello","normalize":false}`)
	resp = openai.EmbeddingResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || len(resp.Data) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	var v []float32
	_ = json.Unmarshal(resp.Data[0].Embedding, &v)
	if !equalF32(v, []float32{6, 'o', 0}) {
		t.Fatalf("float default: %s", body)
	}
	if r := f.requests(); r[len(r)-1].Pooling.Normalize {
		t.Error("normalize false reached the engine as true")
	}
	code, body = postTo(t, url, "/v1/embeddings", `{"input":"hello","encoding_format":"base64"}`)
	resp = openai.EmbeddingResponse{}
	var s string
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || json.Unmarshal(resp.Data[0].Embedding, &s) != nil {
		t.Fatalf("%d %s", code, body)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) != 12 {
		t.Fatalf("base64 %q: %v", s, err)
	}
	for i, x := range []float32{6, 'o', 0} {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != x {
			t.Errorf("base64 value %d: %v, want %v", i, got, x)
		}
	}

	n := len(f.requests())
	for _, tc := range []struct{ body, param string }{
		{`{"model":"dummy"}`, "input"},
		{`{"input":"","add_special_tokens":false}`, "input"},
		{`{"input":[]}`, "input"},
		{`{"input":["a",""],"add_special_tokens":false}`, "input"},
		{`{"input":[[]]}`, "input"},
		{`{"input":{}}`, "input"},
		{`{"input":[1.5]}`, "input"},
		{`{"input":[[999999]]}`, "input"},
		{`{"input":"a","encoding_format":"int8"}`, "encoding_format"},
		{`{"input":"a","dimensions":0}`, "dimensions"},
		{`{"input":"` + strings.Repeat("a", 65) + `"}`, "input"},
	} {
		code, body := postTo(t, url, "/v1/embeddings", tc.body)
		var e struct{ Error openai.Error }
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != 400 || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, code, body, tc.param)
		}
	}
	if len(f.requests()) != n {
		t.Error("a refused request reached the engine")
	}
	// An empty string embeds the special tokens the tokenizer adds (the
	// byte tokenizer's BOS), as llama-server; llama-server's mixed inputs
	// read too: an array with a number is one input.
	code, body = postTo(t, url, "/v1/embeddings", `{"input":["c",2]}`)
	if code != 200 || !slices.Equal(f.requests()[len(f.requests())-1].PromptTokenIDs, []int32{256, 'c', 2}) {
		t.Errorf("[\"c\", 2]: %d %s, engine got %v; want one input: the BOS, c and 2", code, body, f.requests()[len(f.requests())-1].PromptTokenIDs)
	}
	code, body = postTo(t, url, "/v1/embeddings", `{"input":["",[72,"ab",9]],"encoding_format":"float"}`)
	resp = openai.EmbeddingResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || len(resp.Data) != 2 {
		t.Fatalf("mixed: %d %s", code, body)
	}
	for i, want := range []string{"[1,256,0]", "[4,9,0]"} {
		if got := string(resp.Data[i].Embedding); got != want {
			t.Errorf("mixed input %d: %s, want %s", i, got, want)
		}
	}
	// Token ids go in as they are.
	code, body = postTo(t, url, "/v1/embeddings", `{"input":[[7,8,9,10],[11]],"encoding_format":"float"}`)
	resp = openai.EmbeddingResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || resp.Usage.PromptTokens != 5 || string(resp.Data[1].Embedding) != "[1,11,0]" {
		t.Fatalf("token ids: %d %s", code, body)
	}
	// truncate_prompt_tokens -1 cuts to max_model_len (64) rather than
	// refusing.
	code, body = postTo(t, url, "/v1/embeddings", `{"input":"`+strings.Repeat("a", 65)+`","truncate_prompt_tokens":-1,"encoding_format":"float"}`)
	resp = openai.EmbeddingResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 || resp.Usage.PromptTokens != 64 {
		t.Fatalf("truncated: %d %s", code, body)
	}
}

// TestEmbeddingsMetrics: an embedding counts in vLLM's request and
// prompt-token series (finished_reason stop) and llama-server's, and
// generates nothing.
func TestEmbeddingsMetrics(t *testing.T) {
	url := newTestServer(t, embedEngine(), "").URL
	if code, body := postTo(t, url, "/v1/embeddings", `{"input":["ab","xyz"]}`); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	for _, want := range []string{
		`vllm:request_success_total{engine="",finished_reason="stop",model_name="dummy"} 2`,
		`vllm:request_prompt_tokens_sum{engine="",model_name="dummy"} 7`,
		`vllm:request_generation_tokens_sum{engine="",model_name="dummy"} 0`,
		`llamacpp:prompt_tokens_total 7`,
		`llamacpp:tokens_predicted_total 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s in:\n%s", want, grepLines(text, "request_success|prompt_tokens|generation_tokens_sum|predicted_total"))
		}
	}
}

// TestEmbeddingsEngineError: an engine's refusal is the request's 400.
func TestEmbeddingsEngineError(t *testing.T) {
	f := &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return []wire.EngineCoreOutput{{RequestID: req.RequestID, FinishReason: wire.FinishError, StopReason: "dimensions 9999: want 1 to the model's hidden size 64"}}
	}}
	url := newTestServer(t, f, "").URL
	code, body := postTo(t, url, "/v1/embeddings", `{"input":["a","b"],"dimensions":9999}`)
	if code != 400 || !strings.Contains(body, "hidden size 64") {
		t.Fatalf("%d %s", code, body)
	}
}

// TestOllamaEmbed: /api/embed embeds each input normalized, truncating
// to the context by default; /api/embeddings one prompt, not normalized.
func TestOllamaEmbed(t *testing.T) {
	f := embedEngine()
	url := newTestServer(t, f, "").URL
	code, body := postTo(t, url, "/api/embed", `{"model":"dummy","input":["ab","`+strings.Repeat("c", 70)+`"],"dimensions":3}`)
	var resp ollama.EmbedResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if resp.Model != "dummy" || len(resp.Embeddings) != 2 || resp.PromptEvalCount != 3+64 ||
		!equalF32(resp.Embeddings[0], []float32{3, 'b', 3}) || !equalF32(resp.Embeddings[1], []float32{64, 'c', 3}) {
		t.Fatalf("response %s", body)
	}
	if p := f.requests()[0].Pooling; !p.Normalize {
		t.Error("/api/embed: not normalized")
	}
	code, body = postTo(t, url, "/api/embed", `{"model":"dummy","input":"`+strings.Repeat("c", 70)+`","truncate":false}`)
	if code != 400 {
		t.Fatalf("truncate false: %d %s", code, body)
	}
	code, body = postTo(t, url, "/api/embeddings", `{"model":"dummy","prompt":"hey"}`)
	var old ollama.EmbeddingsResponse
	if err := json.Unmarshal([]byte(body), &old); err != nil || code != 200 || !equalF32(old.Embedding, []float32{4, 'y', 0}) {
		t.Fatalf("%d %s", code, body)
	}
	if r := f.requests(); r[len(r)-1].Pooling.Normalize {
		t.Error("/api/embeddings: normalized")
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLlamaCppEmbedding: llama-server's /embedding takes content and
// answers [{"index", "embedding": [[…]]}]; embd_normalize 1 divides by
// the sum of magnitudes here, the engine's normalization off.
func TestLlamaCppEmbedding(t *testing.T) {
	f := embedEngine()
	url := newTestServer(t, f, "").URL
	for _, path := range []string{"/embedding", "/embeddings"} {
		code, body := postTo(t, url, path, `{"content":["ab","xyz"],"embd_normalize":1}`)
		var out []llamaEmbedding
		if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 || len(out) != 2 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if out[1].Index != 1 || len(out[1].Embedding) != 1 || !equalF32(out[1].Embedding[0], []float32{4.0 / 126, 122.0 / 126, 0}) {
			t.Errorf("%s: %s", path, body)
		}
		if r := f.requests(); r[len(r)-1].Pooling.Normalize {
			t.Errorf("%s: embd_normalize 1 reached the engine normalized", path)
		}
	}
	code, body := postTo(t, url, "/embedding", `{"content":"ab"}`)
	if code != 200 || !f.requests()[len(f.requests())-1].Pooling.Normalize {
		t.Fatalf("default euclidean: %d %s", code, body)
	}
	if code, body := postTo(t, url, "/embedding", `{"nothing":1}`); code != 400 {
		t.Fatalf("no content: %d %s", code, body)
	}
}

// grepLines returns text's lines that match the regular expression re.
func grepLines(text, re string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if ok, _ := regexp.MatchString(re, l); ok && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestEmbeddingsPoolingNone: with engines that pool nothing (READY's
// pooling NONE), llama-server's /embedding answers a vector per token,
// not normalized, and the OpenAI and Ollama routes refuse with
// llama-server's words.
func TestEmbeddingsPoolingNone(t *testing.T) {
	f := &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		var v []float32 // [P][2]: position, token
		for i, id := range req.PromptTokenIDs {
			v = append(v, float32(i), float32(id))
		}
		return []wire.EngineCoreOutput{{RequestID: req.RequestID, FinishReason: wire.FinishStop, PoolingOutput: v}}
	}}
	url := newTestServerWith(t, f, func(c *Config) { c.Pooling = wire.PoolingNone }, tokenizer.NewByte()).URL
	code, body := postTo(t, url, "/embedding", `{"content":["ab",[7,8]],"embd_normalize":2}`)
	var out []llamaEmbedding
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != 200 || len(out) != 2 {
		t.Fatalf("%d %s", code, body)
	}
	want := [][][]float32{{{0, 256}, {1, 'a'}, {2, 'b'}}, {{0, 7}, {1, 8}}}
	for i := range want {
		if len(out[i].Embedding) != len(want[i]) {
			t.Fatalf("input %d: %d rows, want %d: %s", i, len(out[i].Embedding), len(want[i]), body)
		}
		for j := range want[i] {
			if !equalF32(out[i].Embedding[j], want[i][j]) {
				t.Errorf("input %d row %d: %v, want %v", i, j, out[i].Embedding[j], want[i][j])
			}
		}
	}
	for _, r := range f.requests() {
		if p := r.Pooling; p.PoolingType != wire.PoolingNone || p.Normalize {
			t.Errorf("engine request pooling %+v, want NONE, not normalized", p)
		}
	}
	for _, path := range []string{"/v1/embeddings", "/api/embed"} {
		code, body := postTo(t, url, path, `{"model":"dummy","input":"ab"}`)
		if code != 400 || !strings.Contains(body, "Pooling type 'none' is not OAI compatible") {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
}
