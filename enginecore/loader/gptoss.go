package loader

import (
	"strconv"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// gptOSS reads what OpenAI's gpt-oss adds, as llama.cpp's openai-moe
// model does: a learned sink logit per head (attn_sinks), biases on the
// attention's output, the router and every expert, the clamped SwiGLU
// (swiglu_oai), and local layers over attention.sliding_window positions
// (required): every other one from layer 0, or as
// attention.sliding_window_pattern says. Local layers rotate as the
// global ones do (YaRN included) unless rope.freq_base_swa is present.
func (r *kvReader) gptOSS(cfg *model.Config) {
	cfg.AttnSinks, cfg.OutBias, cfg.ExpertBiases = true, true, true
	cfg.FFNAct = model.ActSwiGLUOAI
	cfg.SlidingWindow = r.int("attention.sliding_window", 0)
	if cfg.NumLayers > 0 {
		cfg.LocalLayers = r.localLayers(cfg.NumLayers, 2)
	}
	if _, ok := r.md.KV(r.prefix + "rope.freq_base_swa"); ok {
		cfg.LocalRopeTheta = r.float("rope.freq_base_swa", 0)
	}
}

// renameGPTOSS gives gpt-oss's pre-MLP norm the name the engine reads:
// llama.cpp's converter writes it as post_attention_norm (it follows
// attention), but it normalizes the MLP's input, as ffn_norm does.
func renameGPTOSS(cfg *model.Config, tensors map[string]*model.Tensor) {
	for l := range cfg.NumLayers {
		p := "blk." + strconv.Itoa(l) + "."
		if t, ok := tensors[p+"post_attention_norm.weight"]; ok {
			if _, clash := tensors[p+"ffn_norm.weight"]; !clash {
				delete(tensors, p+"post_attention_norm.weight")
				t.Name = p + "ffn_norm.weight"
				tensors[t.Name] = t
			}
		}
	}
}
