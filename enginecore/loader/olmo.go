package loader

import "github.com/tandem-llm/tandem/enginecore/model"

// olmo reads what AllenAI's OLMo 2 and OLMoE add, as llama.cpp's olmo2
// and olmoe models do: Q and K RMS-normalized as whole vectors (gains of
// H·D and Hkv·D); OLMo 2 normalizes each sublayer's output (post-norms)
// instead of its input. OLMo 3 (GGUF olmo2 with attention.sliding_window)
// attends over the window in the layers attention.sliding_window_pattern
// flags (an array, or every period-th layer global, default 4), rotated
// with rope.freq_base and no scaling: llama.cpp reads
// rope.freq_base_swa for olmo2 but its graph rotates with the global
// base, and so do OLMo 3's checkpoints.
func (r *kvReader) olmo(cfg *model.Config) {
	cfg.QKNormFull = true
	if cfg.Arch != "olmo2" {
		return
	}
	cfg.NoPreNorms, cfg.PostNorms = true, true
	if _, ok := r.md.KV(r.prefix + "attention.sliding_window"); !ok || cfg.NumLayers <= 0 {
		return
	}
	cfg.SlidingWindow = r.int("attention.sliding_window", 0)
	cfg.LocalRopeTheta = cfg.RopeTheta // unscaled
	cfg.LocalLayers = r.localLayers(cfg.NumLayers, 4)
}
