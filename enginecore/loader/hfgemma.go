package loader

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// hfGemmaConfig is what Gemma3ForCausalLM's config.json (model_type
// gemma3_text) adds. Pointers tell absent from null or zero.
type hfGemmaConfig struct {
	HiddenActivation      string   `json:"hidden_activation"`
	QueryPreAttnScalar    *float64 `json:"query_pre_attn_scalar"`
	RopeLocalBaseFreq     *float64 `json:"rope_local_base_freq"`
	SlidingWindowPattern  *int     `json:"sliding_window_pattern"`
	LayerTypes            []string `json:"layer_types"` // "sliding_attention" or "full_attention" per layer
	FinalLogitSoftcapping *float64 `json:"final_logit_softcapping"`
	AttnLogitSoftcapping  *float64 `json:"attn_logit_softcapping"`

	// From rope_parameters keyed by layer type (transformers v5):
	// full_attention's becomes RopeParameters, sliding_attention's theta
	// the local base.
	localTheta *float64
}

// ropeByLayerType reads transformers v5's rope_parameters when it is
// keyed by layer type ({"full_attention": {...}, "sliding_attention":
// {...}}), which the flat hfRopeScaling does not see.
func (hc *hfConfig) ropeByLayerType(js []byte) error {
	var byType struct {
		RopeParameters map[string]json.RawMessage `json:"rope_parameters"`
	}
	if json.Unmarshal(js, &byType) != nil { // a flat rope_parameters: not this form
		return nil
	}
	full, ok := byType.RopeParameters["full_attention"]
	if !ok {
		return nil
	}
	var global, local hfRopeScaling
	if err := json.Unmarshal(full, &global); err != nil {
		return err
	}
	hc.RopeParameters = &global
	if raw, ok := byType.RopeParameters["sliding_attention"]; ok {
		if err := json.Unmarshal(raw, &local); err != nil {
			return err
		}
		hc.localTheta = local.RopeTheta
	}
	return nil
}

// gemma sets what Gemma 2 and 3 add to cfg, as transformers' Gemma2 and
// Gemma3 models compute it: embeddings scaled by √hidden_size, GELU
// (tanh form), post-norms, queries scaled by query_pre_attn_scalar^-½,
// and with a sliding_window, local layers (layer_types, else all but
// every sliding_window_pattern-th: Gemma 2 every other, layer 0 local;
// Gemma 3 five of six); Gemma 3's rotate with rope_local_base_freq
// (default 10000) and no scaling, Gemma 2's as the others. Soft-caps
// when set: final_logit_softcapping, and attn_logit_softcapping (Gemma 2
// only: Gemma 3 has none).
func (hc *hfConfig) gemma(cfg *model.Config) error {
	gemma2 := cfg.Arch == "gemma2"
	act := hc.HiddenActivation
	if act == "" {
		act = hc.HiddenAct
	}
	if act != "" && act != "gelu_pytorch_tanh" && act != "gelu_new" {
		return unsupported("hidden_activation %q is not supported (supported: gelu_pytorch_tanh)", act)
	}
	if c := hc.AttnLogitSoftcapping; c != nil {
		if !gemma2 {
			return unsupported("attn_logit_softcapping is Gemma 2's, not %s's", cfg.Arch)
		}
		if !(*c > 0) {
			return invalid("attn_logit_softcapping %g", *c)
		}
		cfg.AttnSoftcap = *c
	}
	cfg.EmbedScale = math.Sqrt(float64(cfg.Dim))
	cfg.FFNAct = model.ActGELUTanh
	cfg.PostNorms = true
	if s := hc.QueryPreAttnScalar; s != nil && *s != float64(cfg.HeadDim) {
		if !(*s > 0) {
			return invalid("query_pre_attn_scalar %g", *s)
		}
		cfg.AttnScale = 1 / math.Sqrt(*s)
	}
	if c := hc.FinalLogitSoftcapping; c != nil {
		if !(*c > 0) {
			return invalid("final_logit_softcapping %g", *c)
		}
		cfg.FinalSoftcap = *c
	}
	if hc.SlidingWindow == nil || *hc.SlidingWindow <= 0 || cfg.NumLayers <= 0 {
		return nil
	}
	cfg.SlidingWindow = *hc.SlidingWindow
	if !gemma2 {
		cfg.LocalRopeTheta = 10000
	}
	for _, base := range []*float64{hc.RopeLocalBaseFreq, hc.localTheta} {
		if base != nil {
			cfg.LocalRopeTheta = *base
		}
	}
	cfg.LocalLayers = make([]bool, cfg.NumLayers)
	if hc.LayerTypes != nil {
		if len(hc.LayerTypes) != cfg.NumLayers {
			return invalid("layer_types lists %d layers, num_hidden_layers is %d", len(hc.LayerTypes), cfg.NumLayers)
		}
		for l, typ := range hc.LayerTypes {
			switch typ {
			case "sliding_attention":
				cfg.LocalLayers[l] = true
			case "full_attention":
			default:
				return unsupported("layer type %q is not supported (supported: sliding_attention, full_attention)", typ)
			}
		}
		return nil
	}
	period := 6
	if gemma2 {
		period = 2
	}
	if hc.SlidingWindowPattern != nil {
		period = *hc.SlidingWindowPattern
	}
	for l := range cfg.LocalLayers {
		cfg.LocalLayers[l] = period <= 0 || (l+1)%period != 0
	}
	return nil
}

// gemmaLayerNames are Gemma 2's and 3's layer norms whose GGUF names differ from
// Llama's mapping: its post_attention_layernorm normalizes the
// attention's output, and pre_feedforward_layernorm is the MLP's input
// norm.
var gemmaLayerNames = map[string]string{
	"post_attention_layernorm.weight":   "post_attention_norm.weight",
	"pre_feedforward_layernorm.weight":  "ffn_norm.weight",
	"post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}

// gemmaName is the GGUF name of a Gemma 3 layer norm that gemmaLayerNames
// renames.
func gemmaName(hf string) (string, bool) {
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if !ok {
		return "", false
	}
	num, suffix, _ := strings.Cut(rest, ".")
	g, ok := gemmaLayerNames[suffix]
	if !ok {
		return "", false
	}
	gname, ok := ggufName("model.layers."+num+".input_layernorm.weight", false) // checks num
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(gname, "attn_norm.weight") + g, true
}

// shiftNorm returns a Gemma RMSNorm gain w as the float32 1+w that
// llama.cpp's converter stores and the forward pass multiplies by
// (Gemma3RMSNorm computes x·(1+w)).
func shiftNorm(t *model.Tensor) (*model.Tensor, error) {
	v, err := t.Float32s()
	if err != nil {
		return nil, invalid("%s: %v", t.Name, err)
	}
	for i := range v {
		v[i]++
	}
	out, err := model.NewTensor(t.Name, model.F32, t.Shape, v)
	if err != nil {
		return nil, invalid("%s: %v", t.Name, err)
	}
	return out, nil
}
