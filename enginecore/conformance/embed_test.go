package conformance

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// TestEmbeddingsMatchLlamaCpp embeds prompts of the default model (and
// Gemma 3 270M, when fetched) with our CPU backend's hidden states (the
// last prompt token's, after the final norm: LAST pooling, what
// /v1/embeddings returns for a model whose file names no pooling) and
// with llama.cpp's embedding context (node-llama-cpp's getEmbeddingFor,
// which reads the same state when the model has no pooling type), on the
// tokens llama.cpp evaluated. The cosine of each pair must reach the
// model's bound, and the cosine to another prompt's embedding must not:
// a control that the bound tells prompts apart. Measured: SmolLM2-135M
// Q4_1 0.9995–0.9998 (bound 0.999); Gemma 3 270M Q4_K_M 0.9975–0.9994
// (bound 0.995: its hidden states carry a few huge dimensions, and
// llama.cpp's embedding context keeps an F16 KV cache and takes GELU from
// an F16 table; our own --cpu-precision fast and prompt differ by 0.999
// there). Two sentences differing only in their last word measure 0.80
// on SmolLM2.
func TestEmbeddingsMatchLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs 135M–270M-parameter models on both engines")
	}
	if raceEnabled {
		t.Skip("race detector: single-threaded forward passes of real models; nothing concurrent to check")
	}
	texts := []string{
		"The quick brown fox jumps over the lazy dog.",
		"Where did the fox go? It hid under the bridge.",
		"Paged attention keeps the KV cache in fixed-size blocks.",
		chat("What is the capital of France?"),
	}
	for _, m := range []struct {
		name  string
		path  func(*testing.T) string
		bound float64 // least cosine to llama.cpp's embedding
	}{{"smollm2", defaultModel, 0.999}, {"gemma3", gemma3Model, 0.995}} {
		t.Run(m.name, func(t *testing.T) {
			path := m.path(t)
			tokens := runOracle(t, oracleRequest{Model: path, Tokenize: texts})[0].Tokens
			want := runOracle(t, oracleRequest{Model: path, Embed: tokens})[0].Embeddings
			e := openEngine(t, path, 128)
			defer e.Close()
			ours := make([][]float64, len(want))
			for i, w := range want {
				ours[i] = unit(e.embedLast(t, w.Tokens))
			}
			for i, w := range want {
				theirs := unit(w.Vector)
				if len(theirs) != len(ours[i]) {
					t.Fatalf("prompt %d: llama.cpp's embedding has %d values, ours %d", i, len(theirs), len(ours[i]))
				}
				cos := dot(ours[i], theirs)
				other := dot(ours[(i+1)%len(ours)], theirs)
				t.Logf("prompt %d (%d tokens): cosine %.6f to llama.cpp's; %.4f to the next prompt's", i, len(w.Tokens), cos, other)
				if cos < m.bound {
					t.Errorf("prompt %d: cosine %.6f to llama.cpp's embedding, want ≥ %g", i, cos, m.bound)
				}
				if other >= m.bound {
					t.Errorf("prompt %d: another prompt's embedding is as close (%.6f): the bound tells nothing", i, other)
				}
			}
		})
	}
}

// embedLast returns the hidden state of prompt's last token after the
// final norm ([Dim]), the prompt computed in one Step from position 0.
func (e *engine) embedLast(t *testing.T, prompt []int32) []float64 {
	t.Helper()
	n := len(prompt)
	if n > e.ctxs {
		t.Fatalf("prompt of %d tokens, KV cache of %d", n, e.ctxs)
	}
	dim := e.be.Model().Dim
	step := runner.Step{TokenIDs: prompt, Positions: make([]int32, n), SlotMapping: make([]int32, n),
		Seqs: []runner.Seq{{Start: 0, Len: n, ContextLen: n, BlockTable: e.table[:(n+kvBlockSize-1)/kvBlockSize],
			Hidden: runner.HiddenLast, PromptLen: n}},
		Hidden: make([]float32, dim)}
	for i := range n {
		step.Positions[i], step.SlotMapping[i] = int32(i), int32(i)
	}
	if err := e.be.Forward(context.Background(), &step, nil); err != nil {
		t.Fatalf("embedding: %v", err)
	}
	out := make([]float64, dim)
	for i, x := range step.Hidden {
		out[i] = float64(x)
	}
	return out
}

// unit returns v scaled to length 1.
func unit(v []float64) []float64 {
	n := math.Sqrt(dot(v, v))
	if n == 0 {
		panic(fmt.Sprintf("zero vector of %d values", len(v)))
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / n
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += a[i] * b[i]
	}
	return s
}
