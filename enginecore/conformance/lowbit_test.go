package conformance

import (
	"testing"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLowBitModels compares our logits with llama.cpp's, as
// TestRandomModels does, on random-weight models in the 2- and 3-bit
// K-quants and the non-linear 4-bit types (Q2_K, Q3_K, IQ4_NL, IQ4_XS):
// every matrix in the type, the LM head alone in it, and the mixes that
// llama-quantize writes for Q3_K_M and Q2_K files (attn_v and ffn_down
// a step up, the LM head Q6_K).
//
// Measured (2-core AMD EPYC, AVX2; decode and prefill alike), with the
// bounds of TestRandomModels' types whose dot products llama.cpp takes
// the same way (q8_0 activations for IQ4_NL, q8_K for the others):
//
//	model                       max |Δ|   bound   near-ties flipped (widest margin)
//	q2_k, q3_k, iq4_xs          0.38-0.5  0.7     2-6 of 137 (0.19)
//	iq4_nl                      0.23      0.4     1 (0.053)
//	q2_k/q3_k_m mixes           0.51      0.7     1-4 (0.17)
//	q2_k/q3_k/iq4_xs, LM head   0.2-0.24  0.35    0-1 (0.084)
//	iq4_nl, LM head             0.014     0.025   0
//
// Q2_K's offsets (Matrix.mins in the CPU kernels) matter: without them
// the q2_k model misses by 44 nats and its LM head by 14.
func TestLowBitModels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs llama.cpp on low-bit models")
	}
	oracleCmd(t.Context(), t)
	t.Parallel()
	base := testmodel.Spec{Arch: "llama", VocabSize: rmVocab, Dim: rmDim, NumLayers: rmLayers,
		NumHeads: 4, FFNDim: rmFFN, Seed: 17, Quantize: quantize}
	// mix is llama-quantize's recipe for a file type: matrices in typ,
	// attn_v and ffn_down in up, the LM head Q6_K.
	mix := func(typ, up model.DType) testmodel.Spec {
		return edited(base, func(s *testmodel.Spec) {
			s.MatrixType = typ
			s.Types = map[string]model.DType{"output.weight": model.Q6_K}
			for _, l := range []string{"0", "1"} {
				s.Types["blk."+l+".attn_v.weight"] = up
				s.Types["blk."+l+".ffn_down.weight"] = up
			}
		})
	}
	tests := []testCase{
		{"q2_k", typed(base, model.Q2_K), 0.7, 0.7},
		{"q3_k", typed(base, model.Q3_K), 0.7, 0.7},
		{"iq4_nl", typed(base, model.IQ4_NL), 0.4, 0.4},
		{"iq4_xs", typed(base, model.IQ4_XS), 0.7, 0.7},
		{"q2_k lm head", lmHead(base, model.Q2_K), 0.35, 0.35},
		{"q3_k lm head", lmHead(base, model.Q3_K), 0.35, 0.35},
		{"iq4_nl lm head", lmHead(base, model.IQ4_NL), 0.025, 0.025},
		{"iq4_xs lm head", lmHead(base, model.IQ4_XS), 0.35, 0.35},
		{"q3_k_m mix", mix(model.Q3_K, model.Q4_K), 0.7, 0.7},
		{"q2_k mix", mix(model.Q2_K, model.Q3_K), 0.7, 0.7},
	}
	r := runModels(t, tests, randomPrompts(rmVocab, 5))
	r.checkAll(t)
}
