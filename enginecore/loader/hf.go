package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
)

// hfArchitectures maps config.json "architectures" to GGUF names.
var hfArchitectures = map[string]string{
	"LlamaForCausalLM":            "llama",
	"MistralForCausalLM":          "llama",
	"Qwen2ForCausalLM":            "qwen2",
	"Qwen3ForCausalLM":            "qwen3",
	"SmolLM3ForCausalLM":          "smollm3",
	"GraniteForCausalLM":          "granite",
	"Phi3ForCausalLM":             "phi3",
	"Gemma2ForCausalLM":           "gemma2",
	"Gemma3ForCausalLM":           "gemma3",
	"MixtralForCausalLM":          "llama",
	"Qwen2MoeForCausalLM":         "qwen2moe",
	"Qwen3MoeForCausalLM":         "qwen3moe",
	"GraniteMoeForCausalLM":       "granitemoe",
	"GraniteMoeSharedForCausalLM": "granitemoe",
	"Ernie4_5ForCausalLM":         "ernie4_5",
	"Olmo2ForCausalLM":            "olmo2",
	"OlmoeForCausalLM":            "olmoe",
	"Ernie4_5_MoeForCausalLM":     "ernie4_5-moe",
}

// hfConfig is the part of config.json Tandem reads. Pointers tell absent
// from zero.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	HiddenSize            int             `json:"hidden_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	RopeTheta             *float64        `json:"rope_theta"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	RopeScaling           *hfRopeScaling  `json:"rope_scaling"`
	RopeParameters        *hfRopeScaling  `json:"rope_parameters"` // transformers v5 spelling
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	BOSTokenID            json.RawMessage `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	VocabSize             int             `json:"vocab_size"`
	AttentionBias         bool            `json:"attention_bias"`
	HiddenAct             string          `json:"hidden_act"`
	SlidingWindow         *int            `json:"sliding_window"`
	UseSlidingWindow      *bool           `json:"use_sliding_window"`               // Qwen2/3: sliding_window applies only when true
	NoRopeLayers          []int           `json:"no_rope_layers"`                   // SmolLM3: per layer, 1 rotates, 0 does not
	NoRopeLayerInterval   *int            `json:"no_rope_layer_interval"`           // SmolLM3: without the list, every n-th layer does not
	EmbeddingMultiplier   float64         `json:"embedding_multiplier"`             // Granite
	AttentionMultiplier   float64         `json:"attention_multiplier"`             // Granite: the scores' scale
	ResidualMultiplier    float64         `json:"residual_multiplier"`              // Granite
	LogitsScaling         float64         `json:"logits_scaling"`                   // Granite: logits are divided by it
	OrigMaxPos            *int            `json:"original_max_position_embeddings"` // Phi-3: LongRoPE's original context
	PartialRotaryFactor   *float64        `json:"partial_rotary_factor"`
	hfGemmaConfig
	hfMoEConfig
}

// loadHF reads a Hugging Face directory: config.json, optional
// generation_config.json, and the safetensors checkpoint.
func loadHF(dir string) (m *Model, err error) {
	js, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(js, &hc); err != nil {
		return nil, fmt.Errorf("loader: %s: %w", filepath.Join(dir, "config.json"), err)
	}
	if err := hc.ropeByLayerType(js); err != nil {
		return nil, fmt.Errorf("loader: %s: %w", filepath.Join(dir, "config.json"), err)
	}
	cfg, err := hfModelConfig(&hc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	cfg.Name = filepath.Base(filepath.Clean(dir))
	if err := readGenerationConfig(dir, &hc, &cfg); err != nil {
		return nil, err
	}

	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	defer func() {
		if err != nil {
			_ = set.Close()
			err = fmt.Errorf("%s: %w", dir, err)
		}
	}()
	tensors, err := hfTensors(set, &cfg)
	if err != nil {
		return nil, err
	}
	var longRope *model.Tensor
	if cfg.Arch == "granitemoe" {
		if err := splitGraniteMoE(&cfg, tensors); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(cfg.Arch, "ernie4_5") { // some checkpoints fuse qkv_proj and up_gate_proj as Phi-3's
		if err := splitFused(&cfg, tensors); err != nil {
			return nil, err
		}
	}
	if cfg.Arch == "phi3" {
		if err := splitFused(&cfg, tensors); err != nil {
			return nil, err
		}
		if longRope, err = hc.longRope(&cfg, tensors); err != nil {
			return nil, err
		}
	}
	if hc.TieWordEmbeddings != nil && *hc.TieWordEmbeddings {
		delete(tensors, "output.weight") // tied: lm_head, when saved, is the embedding
	}
	if hc.VocabSize > 0 {
		if emb, ok := tensors["token_embd.weight"]; ok && len(emb.Shape) == 2 && emb.Shape[1] != hc.VocabSize {
			return nil, invalid("vocab_size %d but embed_tokens has %d rows", hc.VocabSize, emb.Shape[1])
		}
	}
	if err := finishConfig(&cfg, tensors); err != nil {
		return nil, err
	}
	if err := checkTensors(&cfg, tensors); err != nil {
		return nil, err
	}
	// After the check, which bounds HeadDim by the Q/K tensors' sizes.
	if err := hfRopeFreqs(&hc, &cfg, tensors); err != nil {
		return nil, err
	}
	vocab, _ := hfVocab(dir, cfg.VocabSize) // nil without a tokenizer.json it reads: structured outputs are then unavailable
	return &Model{Config: cfg, Tensors: tensors, Source: dir, Close: set.Close, Vocab: vocab, LongRope: longRope, OrigContextLen: hc.origContext(&cfg)}, nil
}

// hfModelConfig converts config.json to a Config, without what the tensors
// tell (vocabulary size, tying).
func hfModelConfig(hc *hfConfig) (model.Config, error) {
	if len(hc.Architectures) != 1 {
		return model.Config{}, invalid("config.json lists architectures %v, want exactly one", hc.Architectures)
	}
	arch, ok := hfArchitectures[hc.Architectures[0]]
	if !ok {
		return model.Config{}, unsupported("architecture %q is not supported (supported: %s)", hc.Architectures[0], hfSupportedList())
	}
	a := supported[arch]
	if hc.HiddenAct != "" && hc.HiddenAct != "silu" && !a.gemma {
		return model.Config{}, unsupported("hidden_act %q is not supported (supported: silu)", hc.HiddenAct)
	}
	cfg := model.Config{
		Arch:          arch,
		Dim:           hc.HiddenSize,
		NumLayers:     hc.NumHiddenLayers,
		NumHeads:      hc.NumAttentionHeads,
		NumKVHeads:    hc.NumAttentionHeads,
		FFNDim:        hc.IntermediateSize,
		RopeTheta:     10000,
		RopeNeox:      a.neox,
		NormEps:       1e-6,
		MaxContextLen: hc.MaxPositionEmbeddings,
		QKVBias:       a.qkvBias || hc.AttentionBias,
		QKNorm:        a.qkNorm,
	}
	if cfg.MaxContextLen == 0 {
		cfg.MaxContextLen = 2048
	}
	if hc.NumKeyValueHeads != nil {
		cfg.NumKVHeads = *hc.NumKeyValueHeads
	}
	if hc.NumAttentionHeads > 0 {
		cfg.HeadDim = hc.HiddenSize / hc.NumAttentionHeads
	}
	if hc.HeadDim != nil && !a.granite { // llama.cpp's converter drops Granite's head_dim
		cfg.HeadDim = *hc.HeadDim
	}
	if a.granite {
		cfg.EmbedScale, cfg.AttnScale = hc.EmbeddingMultiplier, hc.AttentionMultiplier
		cfg.ResidualScale, cfg.LogitScale = hc.ResidualMultiplier, hc.LogitsScaling
	}
	if hc.RMSNormEps != nil {
		cfg.NormEps = *hc.RMSNormEps
	}
	if err := hc.rope(&cfg, arch); err != nil {
		return model.Config{}, err
	}
	if a.olmo { // whole-vector QK norm; OLMo 2's post-norms instead of pre-norms
		cfg.QKNormFull = true
		cfg.NoPreNorms, cfg.PostNorms = arch == "olmo2", arch == "olmo2"
	}
	if a.gemma {
		if err := hc.gemma(&cfg); err != nil {
			return model.Config{}, err
		}
	}
	if a.noRopeEvery > 0 {
		if err := hc.noRope(&cfg, a.noRopeEvery); err != nil {
			return model.Config{}, err
		}
	}
	if a.moe {
		if err := hc.moe(&cfg); err != nil {
			return model.Config{}, err
		}
	}
	// Within the window, sliding-window attention equals full attention:
	// serve no longer context than the window (Gemma's local layers
	// attend over theirs instead).
	sliding := hc.SlidingWindow != nil && *hc.SlidingWindow > 0 && !a.gemma
	if arch != "llama" { // Qwen: only when use_sliding_window is set
		sliding = sliding && hc.UseSlidingWindow != nil && *hc.UseSlidingWindow
	}
	if sliding {
		cfg.MaxContextLen = min(cfg.MaxContextLen, *hc.SlidingWindow)
	}
	var err error
	if cfg.BOSTokenID, _, err = tokenIDs("bos_token_id", hc.BOSTokenID); err != nil {
		return model.Config{}, err
	}
	if _, cfg.EOSTokenIDs, err = tokenIDs("eos_token_id", hc.EOSTokenID); err != nil {
		return model.Config{}, err
	}
	return cfg, checkConfig(&cfg)
}

// tokenIDs parses a token id field that may be null, an int or a list.
func tokenIDs(key string, raw json.RawMessage) (first int32, all []int32, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil, nil
	}
	var one int32
	if err := json.Unmarshal(raw, &one); err == nil {
		return one, []int32{one}, nil
	}
	var many []int32
	if err := json.Unmarshal(raw, &many); err != nil {
		return 0, nil, invalid("%s is %s, want a token id or a list of them", key, raw)
	}
	if len(many) == 0 {
		return 0, nil, nil
	}
	return many[0], appendUnique(nil, many...), nil
}

// readGenerationConfig merges generation_config.json's EOS ids (Llama 3
// Instruct lists <|eot_id|> and <|eom_id|> only there) and, when
// config.json has none, its BOS id.
func readGenerationConfig(dir string, hc *hfConfig, cfg *model.Config) error {
	js, err := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loader: %w", err)
	}
	var gc struct {
		BOSTokenID json.RawMessage `json:"bos_token_id"`
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(js, &gc); err != nil {
		return fmt.Errorf("loader: %s: %w", filepath.Join(dir, "generation_config.json"), err)
	}
	_, eos, err := tokenIDs("eos_token_id", gc.EOSTokenID)
	if err != nil {
		return err
	}
	cfg.EOSTokenIDs = appendUnique(cfg.EOSTokenIDs, eos...)
	if len(hc.BOSTokenID) == 0 || string(hc.BOSTokenID) == "null" {
		if cfg.BOSTokenID, _, err = tokenIDs("bos_token_id", gc.BOSTokenID); err != nil {
			return err
		}
	}
	return nil
}

// hfTensors maps the checkpoint's tensors to GGUF names, permuting Llama's
// Q/K rows (see permuteRows).
func hfTensors(set *safetensors.Set, cfg *model.Config) (map[string]*model.Tensor, error) {
	tensors := map[string]*model.Tensor{}
	var errs []error
	for _, name := range set.Names() {
		if strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue // a cache of the RoPE frequencies, recomputed from the config
		}
		gname, ok := ggufName(name, cfg.NumExperts > 0)
		if cfg.PostNorms { // Gemma and OLMo 2, whose norms are named their own way
			if g, isNorm := gemmaName(name); isNorm {
				gname, ok = g, true
			}
		}
		if !ok {
			errs = append(errs, unsupported("tensor %q is not supported for architecture %q", name, cfg.Arch))
			continue
		}
		t, err := set.Tensor(name)
		if err != nil {
			if errors.Is(err, safetensors.ErrDType) {
				err = unsupported("%v", err)
			}
			errs = append(errs, err)
			continue
		}
		t.Name = gname
		if supported[cfg.Arch].gemma && strings.HasSuffix(gname, "norm.weight") {
			if t, err = shiftNorm(t); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if PermutesQK(*cfg) {
			heads := 0
			switch {
			case strings.HasSuffix(gname, ".attn_q.weight"), strings.HasSuffix(gname, ".attn_q.bias"):
				heads = cfg.NumHeads
			case strings.HasSuffix(gname, ".attn_k.weight"), strings.HasSuffix(gname, ".attn_k.bias"):
				heads = cfg.NumKVHeads
			}
			if heads > 0 {
				if t, err = permuteRows(t, heads, cfg.HeadDim); err != nil {
					errs = append(errs, err)
					continue
				}
			}
		}
		tensors[gname] = t
	}
	return tensors, errors.Join(errs...)
}

// hfLayerNames maps the part of a layer tensor's name after
// "model.layers.N." to the part after "blk.N.".
var hfLayerNames = map[string]string{
	"input_layernorm.weight":          "attn_norm.weight",
	"self_attn.q_proj.weight":         "attn_q.weight",
	"self_attn.k_proj.weight":         "attn_k.weight",
	"self_attn.v_proj.weight":         "attn_v.weight",
	"self_attn.o_proj.weight":         "attn_output.weight",
	"self_attn.q_proj.bias":           "attn_q.bias",
	"self_attn.k_proj.bias":           "attn_k.bias",
	"self_attn.v_proj.bias":           "attn_v.bias",
	"self_attn.o_proj.bias":           "attn_output.bias",
	"self_attn.q_norm.weight":         "attn_q_norm.weight",
	"self_attn.qkv_proj.weight":       "attn_qkv.weight", // Phi-3: Q, K, V (splitFused)
	"mlp.gate_up_proj.weight":         "ffn_up.weight",   // Phi-3: gate, up (splitFused)
	"mlp.up_gate_proj.weight":         "ffn_up.weight",   // ERNIE 4.5: gate, then up, despite the name (splitFused)
	"self_attn.k_norm.weight":         "attn_k_norm.weight",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
}

// ggufName is llama.cpp's name for a Hugging Face tensor name, a
// mixture of experts' among them when moe.
func ggufName(hf string, moe bool) (string, bool) {
	if rest, ok := strings.CutPrefix(hf, "ernie."); ok { // ERNIE 4.5's own checkpoints
		hf = "model." + rest
	}
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight", true
	case "model.norm.weight":
		return "output_norm.weight", true
	case "lm_head.weight":
		return "output.weight", true
	}
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if !ok {
		return "", false
	}
	num, suffix, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || strconv.Itoa(n) != num {
		return "", false
	}
	g, ok := hfLayerNames[suffix]
	if !ok && moe {
		return hfExpertName(n, suffix)
	}
	if !ok {
		return "", false
	}
	return "blk." + num + "." + g, true
}

// PermutesQK says whether a Hugging Face checkpoint of cfg's model has its
// Q and K rows permuted into GGUF llama's RoPE order (adjacent pairs) when
// loaded, as convert_hf_to_gguf.py does: a rotary model whose checkpoint
// rotates halves (not NEOX, not ERNIE's interleaved checkpoints). A PEFT
// adapter's Q and K rows need the same (enginecore/lora).
func PermutesQK(cfg model.Config) bool { return !cfg.RopeNeox && !supported[cfg.Arch].interleaved }

// permuteRows reorders the rows of a Q or K projection (or bias) from
// Hugging Face's RoPE layout, where head h rotates the pair (i, i+D/2), to
// GGUF llama's, where it rotates (2i, 2i+1): new row h·D+2i+s is old row
// h·D+s·D/2+i, s ∈ {0, 1}. This is convert_hf_to_gguf.py's LlamaModel.permute
// (reshape(heads, 2, D/2, …).swapaxes(1, 2)). The result is a new tensor.
func permuteRows(t *model.Tensor, heads, headDim int) (*model.Tensor, error) {
	if len(t.Shape) == 0 {
		return nil, invalid("tensor %q has no shape", t.Name)
	}
	rows, rowBytes := t.Shape[0], t.Type.RowBytes(1) // a bias: one element per row
	if len(t.Shape) >= 2 {
		rows, rowBytes = t.NumElements()/t.Shape[0], t.Type.RowBytes(t.Shape[0])
	}
	if rows != heads*headDim || headDim%2 != 0 || rowBytes*rows != len(t.Data) {
		return nil, invalid("tensor %q (%v %v) is not %d heads of %d rows", t.Name, typeName(t.Type), t.Shape, heads, headDim)
	}
	half := headDim / 2
	out := make([]byte, len(t.Data))
	for h := range heads {
		for i := range half {
			for s := range 2 {
				dst := (h*headDim + 2*i + s) * rowBytes
				src := (h*headDim + s*half + i) * rowBytes
				copy(out[dst:dst+rowBytes], t.Data[src:src+rowBytes])
			}
		}
	}
	return &model.Tensor{Name: t.Name, Type: t.Type, Shape: t.Shape, Data: out}, nil
}

// noRope sets SmolLM3's NoPE layers from no_rope_layers (1: the layer
// rotates, 0: it does not) or, without it, every no_rope_layer_interval-th
// layer (default every).
func (hc *hfConfig) noRope(cfg *model.Config, every int) error {
	if hc.NoRopeLayers == nil {
		if hc.NoRopeLayerInterval != nil {
			every = *hc.NoRopeLayerInterval
		}
		cfg.NoRopeLayers = noRopeEvery(cfg.NumLayers, every)
		return nil
	}
	if len(hc.NoRopeLayers) != cfg.NumLayers {
		return invalid("no_rope_layers lists %d layers, num_hidden_layers is %d", len(hc.NoRopeLayers), cfg.NumLayers)
	}
	cfg.NoRopeLayers = make([]bool, cfg.NumLayers)
	for l, v := range hc.NoRopeLayers {
		cfg.NoRopeLayers[l] = v == 0
	}
	return nil
}
