package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestServeReranker serves a random-weight reranker written as
// convert_hf_to_gguf.py writes Qwen3-Reranker (a yes/no head, pooling
// rank, a rerank template) and ranks documents on every route: the
// scores are probabilities, best first, and each equals /classify's
// probability of "yes" for the template filled in by hand — the pair
// went through the model's template and its head — and /score gives the
// same numbers in request order. Then Cohere's own Python SDK reranks and
// embeds against it (scripts/sdktests/test_cohere.py), and huggingface_hub's
// InferenceClient embeds as against text-embeddings-inference
// (test_tei.py).
func TestServeReranker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts tandem serve")
	}
	const template = "<Query>: {query}\n<Document>: {document}\nRelevant:"
	tok := testmodel.ByteVocab(512)
	tok["tokenizer.chat_template.rerank"] = template
	path := filepath.Join(t.TempDir(), "tiny-reranker.gguf")
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 512, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 128,
		ContextLen: 1024, Seed: 5, Tied: true, Classes: 2, Labels: []string{"yes", "no"}, MatrixType: model.F32, Tokenizer: tok}
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "512", "--kv-cache-memory", "32Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)

	query := "what do bakers do at dawn?"
	docs := []string{"Bakers light their ovens before sunrise.", "The river is wide.", "zzz", "Dawn: bread, ovens, flour."}
	num := func(v any) float64 { f, _ := v.(float64); return f }
	var ranked map[int]float64
	for _, route := range []string{"/v1/rerank", "/rerank", "/v2/rerank"} {
		code, resp := postJSON(t, base+route, map[string]any{"model": "tiny-reranker", "query": query, "documents": docs}, nil)
		results, _ := resp["results"].([]any)
		if code != 200 || len(results) != len(docs) {
			t.Fatalf("%s: %d %v", route, code, resp)
		}
		got := map[int]float64{}
		prev := 2.0
		for _, r := range results {
			m := r.(map[string]any)
			s := num(m["relevance_score"])
			if s <= 0 || s >= 1 || s > prev {
				t.Fatalf("%s: scores not probabilities, best first: %v", route, results)
			}
			prev = s
			got[int(num(m["index"]))] = s
		}
		if ranked == nil {
			ranked = got
		}
		for i, s := range got {
			if s != ranked[i] {
				t.Errorf("%s: document %d scored %v, %v on /v1/rerank", route, i, s, ranked[i])
			}
		}
	}
	for i, d := range docs {
		filled := strings.NewReplacer("{query}", query, "{document}", d).Replace(template)
		code, resp := postJSON(t, base+"/classify", map[string]any{"input": filled, "add_special_tokens": false}, nil)
		data, _ := resp["data"].([]any)
		if code != 200 || len(data) != 1 {
			t.Fatalf("classify: %d %v", code, resp)
		}
		probs, _ := data[0].(map[string]any)["probs"].([]any)
		if len(probs) != 2 || math.Abs(num(probs[0])-ranked[i]) > 1e-6 {
			t.Errorf("document %d: rerank %v, classify of the filled template %v (labels yes, no)", i, ranked[i], probs)
		}
	}
	code, resp := postJSON(t, base+"/v1/score", map[string]any{"text_1": query, "text_2": docs}, nil)
	data, _ := resp["data"].([]any)
	if code != 200 || len(data) != len(docs) {
		t.Fatalf("score: %d %v", code, resp)
	}
	for i, d := range data {
		if s := num(d.(map[string]any)["score"]); s != ranked[i] {
			t.Errorf("score %d: %v, rerank %v", i, s, ranked[i])
		}
	}
	t.Run("cohere", func(t *testing.T) {
		runSDKScript(t, pythonWith(t, "cohere", "Cohere's Python SDK"), "test_cohere.py", base, "tiny-reranker")
	})
	t.Run("tei", func(t *testing.T) {
		runSDKScript(t, pythonWith(t, "huggingface_hub, numpy", "huggingface_hub and numpy"), "test_tei.py", base)
	})
}

// TestServeHFOverridesReranker serves a causal LM as a reranker the way
// Qwen3-Reranker's vLLM command does: --hf-overrides builds a one-class
// head from its LM head's rows of two tokens (the second minus the
// first), --chat-template renders each pair as a "query" and a
// "document" message. Each /rerank score equals the sigmoid of that row
// difference dotted with the pair's hidden state, as /v1/embeddings
// returns it for the prompt rendered by hand (the head is checked
// against the model's own weights, not against Tandem's head code), and
// /classify names the one class LABEL_0.
func TestServeHFOverridesReranker(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts tandem serve")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny-lm.gguf")
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 512, Dim: 64, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 128,
		ContextLen: 1024, Seed: 9, Tied: true, MatrixType: model.F32, Tokenizer: testmodel.ByteVocab(512)}
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	// A score template in the shape of vLLM's qwen3_reranker.jinja: the
	// pair picked out of the messages by role.
	tmpl := filepath.Join(dir, "score.jinja")
	body := `Judge the document.{{ "\n" }}<Query>: {{ messages | selectattr("role", "eq", "query") | map(attribute="content") | first }}` +
		`{{ "\n" }}<Document>: {{ messages | selectattr("role", "eq", "document") | map(attribute="content") | first }}{{ "\n" }}Answer:`
	if err := os.WriteFile(tmpl, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "512", "--kv-cache-memory", "32Mi", "--runner", "pooling",
		"--hf-overrides", `{"architectures": ["Qwen3ForSequenceClassification"], "classifier_from_token": ["n", "y"], "is_original_qwen3_reranker": true}`,
		"--chat-template", tmpl)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)

	m, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	row := func(tok string) []float32 {
		for id, text := range m.Vocab.Texts {
			if text == tok {
				r := make([]float32, spec.Dim)
				if err := m.Tensors["token_embd.weight"].DequantizeRow(id, r); err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
		t.Fatalf("no token %q", tok)
		return nil
	}
	no, yes := row("n"), row("y")
	_ = m.Close()

	num := func(v any) float64 { f, _ := v.(float64); return f }
	query := "what do bakers do at dawn?"
	docs := []string{"Bakers light their ovens before sunrise.", "The river is wide.", "Dawn: bread, ovens, flour."}
	code, resp := postJSON(t, base+"/rerank", map[string]any{"query": query, "documents": docs}, nil)
	results, _ := resp["results"].([]any)
	if code != 200 || len(results) != len(docs) {
		t.Fatalf("rerank: %d %v", code, resp)
	}
	for _, r := range results {
		res := r.(map[string]any)
		i := int(num(res["index"]))
		prompt := fmt.Sprintf("Judge the document.\n<Query>: %s\n<Document>: %s\nAnswer:", query, docs[i])
		code, emb := postJSON(t, base+"/v1/embeddings", map[string]any{"input": prompt, "add_special_tokens": false, "normalize": false, "encoding_format": "float"}, nil)
		data, _ := emb["data"].([]any)
		if code != 200 || len(data) != 1 {
			t.Fatalf("embeddings: %d %v", code, emb)
		}
		h := data[0].(map[string]any)["embedding"].([]any)
		logit := 0.0
		for j := range h {
			logit += (float64(yes[j]) - float64(no[j])) * num(h[j])
		}
		// Compared as logits: the probabilities of a random model are small.
		if got := num(res["relevance_score"]); math.Abs(math.Log(got/(1-got))-logit) > 1e-3 {
			t.Errorf("document %d: score %v (logit %v), (y - n)·h = %v", i, got, math.Log(got/(1-got)), logit)
		}
	}
	code, resp = postJSON(t, base+"/classify", map[string]any{"input": "Bakers bake."}, nil)
	data, _ := resp["data"].([]any)
	if code != 200 || len(data) != 1 || data[0].(map[string]any)["label"] != "LABEL_0" || num(data[0].(map[string]any)["num_classes"]) != 1 {
		t.Errorf("classify: %d %v", code, resp)
	}
}
