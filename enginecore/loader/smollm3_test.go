package loader_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
)

// TestHFSmolLM3NoRope reads SmolLM3's NoPE layers from
// no_rope_layer_interval when no_rope_layers is absent, and refuses a
// list of the wrong length.
func TestHFSmolLM3NoRope(t *testing.T) {
	base := testmodel.Spec{Arch: "smollm3", VocabSize: 300, Dim: 32, NumLayers: 6, NumHeads: 4, FFNDim: 48, Tied: true, Seed: 14}
	dir := t.TempDir()
	editHF(t, dir, base, func(cfg map[string]any, _ *[]hfTensor) {
		delete(cfg, "no_rope_layers")
		cfg["no_rope_layer_interval"] = 3
	})
	if got, want := load(t, dir).Config.NoRopeLayers, []bool{false, false, true, false, false, true}; !cmp.Equal(got, want) {
		t.Errorf("NoRopeLayers %v, want %v", got, want)
	}
	runErrorCases(t, []errorCase{
		{"no_rope_layers length", func(t *testing.T, dir string) string {
			return editHF(t, dir, base, func(cfg map[string]any, _ *[]hfTensor) { cfg["no_rope_layers"] = []int{1, 1, 0} })
		}, loader.ErrInvalid, "no_rope_layers lists 3 layers, num_hidden_layers is 6"},
	})
}
