package conformance

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestRerankerMatchesLlamaCpp scores prompts with a random-weight
// reranker written as convert_hf_to_gguf.py writes Qwen3-Reranker (qwen3,
// tied embedding, pooling_type rank, a 2-class head cls.output.weight
// labelled "yes" and "no") on our CPU backend — the head over the last
// prompt token's hidden state, softmaxed, class 0, what /rerank and
// /score answer — and on llama.cpp's ranking context (node-llama-cpp,
// the same tokens). The scores must agree to 5e-4 (measured 0–1.1e-4:
// float32 summation order, as the qwen3 tied logits in TestRandomModels);
// a head with the classes swapped (1 − p) must not, so the bound tells a
// wrong head apart.
func TestRerankerMatchesLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs llama.cpp")
	}
	oracleCmd(t.Context(), t) // skip early when the oracle is missing
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: rmVocab, Dim: rmDim, NumLayers: rmLayers, NumHeads: 8, NumKVHeads: 2,
		FFNDim: rmFFN, Seed: 11, Tied: true, Classes: 2, Labels: []string{"yes", "no"}, MatrixType: model.F32}
	path := filepath.Join(t.TempDir(), "reranker.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	prompts := randomPrompts(rmVocab, 5)
	want := runOracle(t, oracleRequest{Model: path, Rank: prompts})[0].Ranks
	if len(want) != len(prompts) {
		t.Fatalf("llama.cpp scored %d prompts of %d", len(want), len(prompts))
	}
	e := openEngine(t, path, 128)
	defer e.Close()
	head := e.be.Model().Classifier
	if head == nil || head.NumClasses != 2 || len(head.Labels) != 2 || head.Labels[0] != "yes" {
		t.Fatalf("classification head %+v, want 2 classes labelled yes, no", head)
	}
	spread := 0.0
	for i, p := range prompts {
		h := e.embedLast(t, p)
		row := make([]float32, len(h))
		for d, x := range h {
			row[d] = float32(x)
		}
		logits := head.Apply(row)
		ours := 1 / (1 + math.Exp(float64(logits[1]-logits[0]))) // softmax, class 0
		t.Logf("prompt %d (%d tokens): ours %.6f, llama.cpp %.6f", i, len(p), ours, want[i])
		if d := math.Abs(ours - want[i]); d > 5e-4 {
			t.Errorf("prompt %d: score %.6f, llama.cpp's %.6f (Δ %.2g)", i, ours, want[i], d)
		}
		spread = max(spread, math.Abs(2*want[i]-1))
	}
	if spread < 0.05 {
		t.Errorf("every llama.cpp score is within 0.025 of 0.5: swapped classes would pass; the control tells nothing")
	}
}
