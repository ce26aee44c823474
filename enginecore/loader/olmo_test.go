package loader_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
)

// TestLoadOlmo2 reads OLMo 2 from GGUF and from its checkpoint alike: no
// pre-norms, post-norms (post_attention_layernorm and
// post_feedforward_layernorm are the sublayers' output norms, not
// shifted as Gemma's), Q and K normalized as whole vectors; and OLMo 3's
// sliding-window layers from a GGUF, every fourth global, rotated with
// the global RoPE base unscaled.
func TestLoadOlmo2(t *testing.T) {
	spec := testmodel.Spec{Arch: "olmo2", VocabSize: 300, Dim: 32, NumLayers: 5, NumHeads: 4, NumKVHeads: 2, FFNDim: 48, Seed: 30}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(dir, "hf")
	if err := testmodel.WriteHF(hf, spec); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, hf} {
		c := load(t, p).Config
		if !c.NoPreNorms || !c.PostNorms || !c.QKNorm || !c.QKNormFull || !c.RopeNeox || c.SlidingWindow != 0 {
			t.Errorf("%s: config %+v", filepath.Base(p), c)
		}
	}
	if diff := cmp.Diff(floatsOf(t, path), floatsOf(t, hf)); diff != "" {
		t.Errorf("GGUF and Hugging Face weights differ (-gguf +hf):\n%.2000s", diff)
	}
	olmo3 := spec
	olmo3.SlidingWindow, olmo3.LocalRopeTheta = 64, 5000 // a rope.freq_base_swa llama.cpp's olmo2 graph does not use
	path3 := filepath.Join(dir, "olmo3.gguf")
	if err := testmodel.WriteGGUF(path3, olmo3); err != nil {
		t.Fatal(err)
	}
	c := load(t, path3).Config
	if c.SlidingWindow != 64 || c.LocalRopeTheta != 10000 || !slices.Equal(c.LocalLayers, []bool{true, true, true, false, true}) {
		t.Errorf("OLMo 3: window %d, local RoPE base %g, local layers %v", c.SlidingWindow, c.LocalRopeTheta, c.LocalLayers)
	}
	if _, err := loader.Open(path3, 256); err != nil {
		t.Error(err)
	}
}
