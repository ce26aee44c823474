package loader_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLoadYarn reads YaRN from a GGUF as llama.cpp does (betas 32 and
// 1 whatever the file says) and from config.json as transformers does
// (its betas and attention_factor), and serves the context it extends
// to: factor × the original, as vLLM derives it.
func TestLoadYarn(t *testing.T) {
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32, ContextLen: 4096, Seed: 31,
		Yarn: testmodel.Yarn{Factor: 4, OrigContextLen: 2048, BetaFast: 16, BetaSlow: 2}}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	c := load(t, path).Config
	if want := (model.RopeScaling{Type: "yarn", Factor: 4, OrigContextLen: 2048}); !cmp.Equal(c.RopeScaling, want) || c.MaxContextLen != 8192 {
		t.Errorf("GGUF: %+v, context %d; want %+v, 8192", c.RopeScaling, c.MaxContextLen, want)
	}
	if m := c.RopeMScale(); math.Abs(m-(1+0.1*math.Log(4))) > 1e-12 {
		t.Errorf("GGUF: RoPE mscale %g", m)
	}
	hf := editHF(t, filepath.Join(dir, "hf"), spec, func(cfg map[string]any, _ *[]hfTensor) {
		cfg["rope_scaling"].(map[string]any)["attention_factor"] = 1.5
	})
	c = load(t, hf).Config
	if want := (model.RopeScaling{Type: "yarn", Factor: 4, OrigContextLen: 2048, BetaFast: 16, BetaSlow: 2}); !cmp.Equal(c.RopeScaling, want) || c.MaxContextLen != 8192 {
		t.Errorf("Hugging Face: %+v, context %d; want %+v, 8192", c.RopeScaling, c.MaxContextLen, want)
	}
	if m := c.RopeMScale(); math.Abs(m-1.5) > 1e-12 {
		t.Errorf("Hugging Face: RoPE mscale %g, want the attention_factor 1.5", m)
	}
}
