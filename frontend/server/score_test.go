package server

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// headEngine answers RANK pooling with logits [P/10, 0, …] (P the
// prompt's length, classes of them), an embedding as embedEngine does:
// scores grow with a pair's length.
func headEngine(classes int) *fakeEngine {
	emb := embedEngine()
	return &fakeEngine{script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		if req.Pooling == nil || req.Pooling.PoolingType != wire.PoolingRank {
			return emb.script(req)
		}
		logits := make([]float32, classes)
		for k := range logits {
			logits[k] = float32(k + 1)
		}
		logits[0] = float32(len(req.PromptTokenIDs)) / 10
		if classes > 1 {
			logits[1] = 0
		}
		return []wire.EngineCoreOutput{{RequestID: req.RequestID, FinishReason: wire.FinishStop, PoolingOutput: logits}}
	}}
}

func headServer(t *testing.T, f *fakeEngine, labels ...string) string {
	t.Helper()
	return newTestServerWith(t, f, func(c *Config) { c.ClassifierLabels = labels }, tokenizer.NewByte()).URL
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// TestRerankWithHead: every rerank route scores query+document prompts
// through the head (sigmoid of the yes−no logits), best first, top_n of
// them, with the documents and the prompt tokens; TEI's texts get TEI's
// array.
func TestRerankWithHead(t *testing.T) {
	f := headEngine(2)
	url := headServer(t, f, "yes", "no")
	// The byte tokenizer: BOS + query + document, so prompts of 3, 5, 4.
	for _, route := range []string{"/rerank", "/v1/rerank", "/v2/rerank", "/reranking", "/v1/reranking"} {
		code, body := postTo(t, url, route, `{"model":"dummy","query":"q","documents":["a","ccc","bb"],"top_n":2}`)
		var resp openai.RerankResponse
		if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 {
			t.Fatalf("%s: %d %s", route, code, body)
		}
		if len(resp.Results) != 2 || resp.Usage.PromptTokens != 12 || resp.Model != "dummy" {
			t.Fatalf("%s: %s", route, body)
		}
		for k, want := range []struct {
			index int
			doc   string
			score float64
		}{{1, "ccc", sigmoid(0.5)}, {2, "bb", sigmoid(0.4)}} {
			r := resp.Results[k]
			if r.Index != want.index || r.Document == nil || r.Document.Text != want.doc || math.Abs(r.RelevanceScore-want.score) > 1e-6 {
				t.Errorf("%s: result %d = %+v, want index %d %q score %v", route, k, r, want.index, want.doc, want.score)
			}
		}
	}
	for _, r := range f.requests() {
		if r.Pooling == nil || r.Pooling.PoolingType != wire.PoolingRank {
			t.Fatalf("engine request pooling %+v, want RANK", r.Pooling)
		}
	}
	code, body := postTo(t, url, "/rerank", `{"query":"q","texts":["a","ccc"],"return_text":true}`)
	var tei []openai.TEIRank
	if err := json.Unmarshal([]byte(body), &tei); err != nil || code != 200 || len(tei) != 2 {
		t.Fatalf("TEI: %d %s", code, body)
	}
	if tei[0].Index != 1 || tei[0].Text == nil || *tei[0].Text != "ccc" || math.Abs(tei[0].Score-sigmoid(0.5)) > 1e-6 {
		t.Errorf("TEI first %+v", tei[0])
	}
	code, body = postTo(t, url, "/v1/rerank", `{"query":"q","documents":["abcdef"],"max_tokens_per_doc":2}`)
	if code != 200 || !strings.Contains(body, `"text":"abcdef"`) || !strings.Contains(body, `"prompt_tokens":4`) {
		t.Errorf("max_tokens_per_doc: %d %s, want the document as sent, scored on BOS+q+ab", code, body)
	}
	code, body = postTo(t, url, "/v1/rerank", `{"query":"q","documents":["a"],"return_documents":false,"use_activation":false}`)
	if code != 200 || strings.Contains(body, `"document"`) || !strings.Contains(body, `"relevance_score":0.3`) {
		t.Errorf("without documents and activation: %d %s", code, body)
	}
}

// TestScorePairs: vLLM's /score pairs 1:N and N:N under each of its
// field names, in order; mismatched sides are a 400.
func TestScorePairs(t *testing.T) {
	url := headServer(t, headEngine(1), "LABEL_0")
	for _, body := range []string{
		`{"model":"dummy","text_1":"q","text_2":["a","bb"]}`,
		`{"queries":["q","q"],"documents":["a","bb"]}`,
		`{"queries":"q","items":["a","bb"]}`,
		`{"data_1":["q"],"data_2":["a","bb"]}`,
	} {
		code, out := postTo(t, url, "/v1/score", body)
		var resp openai.ScoreResponse
		if err := json.Unmarshal([]byte(out), &resp); err != nil || code != 200 || len(resp.Data) != 2 {
			t.Fatalf("%s: %d %s", body, code, out)
		}
		for i, want := range []float64{sigmoid(0.3), sigmoid(0.4)} { // one class: the sigmoid of its logit
			if d := resp.Data[i]; d.Index != i || d.Object != "score" || math.Abs(d.Score-want) > 1e-6 {
				t.Errorf("%s: item %d %+v, want %v", body, i, d, want)
			}
		}
		if resp.Object != "list" || resp.Usage.PromptTokens != 7 {
			t.Errorf("%s: %s", body, out)
		}
	}
	for _, bad := range []string{
		`{"text_1":["a","b"],"text_2":["a","b","c"]}`,
		`{"text_1":"a"}`,
		`{"queries":[],"documents":["a"]}`,
		`{"queries":"a","documents":[1,2]}`,
		`{"queries":"a","documents":"b","max_tokens_per_doc":-1}`,
	} {
		if code, out := postTo(t, url, "/score", bad); code != 400 || !strings.Contains(out, `"error"`) {
			t.Errorf("%s: %d %s, want a 400", bad, code, out)
		}
	}
}

// TestScoreWithoutHead: a model with no classification head scores by
// the cosine of the two texts' embeddings, each embedded once and
// normalized, as vLLM scores with an embedding model.
func TestScoreWithoutHead(t *testing.T) {
	f := embedEngine()
	url := newTestServer(t, f, "").URL
	code, out := postTo(t, url, "/rerank", `{"query":"q","documents":["a","bb"]}`)
	var resp openai.RerankResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil || code != 200 || len(resp.Results) != 2 {
		t.Fatalf("%d %s", code, out)
	}
	cos := func(a, b []float64) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab, aa, bb = ab+a[i]*b[i], aa+a[i]*a[i], bb+b[i]*b[i]
		}
		return ab / math.Sqrt(aa*bb)
	}
	q := []float64{2, 'q', 0} // embedEngine: [prompt length, last token, dimensions]
	want := map[int]float64{0: cos(q, []float64{2, 'a', 0}), 1: cos(q, []float64{3, 'b', 0})}
	for _, r := range resp.Results {
		if math.Abs(r.RelevanceScore-want[r.Index]) > 1e-6 {
			t.Errorf("document %d: %v, want %v", r.Index, r.RelevanceScore, want[r.Index])
		}
	}
	if resp.Results[0].RelevanceScore < resp.Results[1].RelevanceScore {
		t.Errorf("not best first: %s", out)
	}
	if n := len(f.requests()); n != 3 {
		t.Errorf("%d texts embedded, want 3: the query once, each document once", n)
	}
	for _, r := range f.requests() {
		if r.Pooling == nil || !r.Pooling.Normalize || r.Pooling.PoolingType != wire.PoolingDefault {
			t.Fatalf("engine request pooling %+v, want the engine's default, normalized", r.Pooling)
		}
	}
	if code, out := postTo(t, url, "/classify", `{"input":"x"}`); code != 400 || !strings.Contains(out, "no classification head") {
		t.Errorf("classify without a head: %d %s", code, out)
	}
}

// TestClassifyAndPooling: /classify gives each input's softmax over the
// classes and the best label; /pooling defaults to that with a head, and
// embeds with task embed; a head of 3 classes cannot score pairs.
func TestClassifyAndPooling(t *testing.T) {
	url := headServer(t, headEngine(3), "neg", "neu", "pos")
	code, out := postTo(t, url, "/classify", `{"model":"dummy","input":["hello world, long enough","x"]}`)
	var resp openai.ClassificationResponse
	if err := json.Unmarshal([]byte(out), &resp); err != nil || code != 200 || len(resp.Data) != 2 {
		t.Fatalf("%d %s", code, out)
	}
	// Logits [P/10, 0, 3]: P = 25 → "neg" is not the best (2.5 < 3) …
	// and for "x" (P = 2) "pos" wins too.
	for i, d := range resp.Data {
		if d.Index != i || d.Label != "pos" || d.NumClasses != 3 || len(d.Probs) != 3 {
			t.Fatalf("item %d: %+v", i, d)
		}
		if s := d.Probs[0] + d.Probs[1] + d.Probs[2]; math.Abs(s-1) > 1e-9 {
			t.Errorf("item %d: probabilities sum to %v", i, s)
		}
	}
	if resp.Usage.PromptTokens != 27 {
		t.Errorf("usage %+v, want 27 prompt tokens", resp.Usage)
	}
	code, out = postTo(t, url, "/pooling", `{"input":"x"}`)
	if code != 200 || !strings.Contains(out, `"object":"pooling"`) {
		t.Fatalf("pooling: %d %s", code, out)
	}
	var pr openai.PoolingResponse
	if err := json.Unmarshal([]byte(out), &pr); err != nil || len(pr.Data) != 1 {
		t.Fatalf("pooling: %s", out)
	}
	if probs, ok := pr.Data[0].Data.([]any); !ok || len(probs) != 3 {
		t.Errorf("pooling with a head: %s, want the 3 class probabilities", out)
	}
	code, out = postTo(t, url, "/pooling", `{"input":"x","task":"embed"}`)
	if code != 200 || !strings.Contains(out, `"data":[2,120,0]`) {
		t.Errorf("pooling task embed: %d %s", code, out)
	}
	if code, out = postTo(t, url, "/pooling", `{"input":"x","task":"generate"}`); code != 400 {
		t.Errorf("pooling task generate: %d %s", code, out)
	}
	if code, out = postTo(t, url, "/rerank", `{"query":"q","documents":["a"]}`); code != 400 || !strings.Contains(out, "/classify") {
		t.Errorf("rerank with 3 classes: %d %s", code, out)
	}
}
