package lora

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
)

// peftConfig is what a PEFT adapter_config.json says that matters here.
type peftConfig struct {
	PeftType      string         `json:"peft_type"`
	R             int            `json:"r"`
	LoRAAlpha     float64        `json:"lora_alpha"`
	UseRSLoRA     bool           `json:"use_rslora"`
	FanInFanOut   bool           `json:"fan_in_fan_out"`
	UseDoRA       bool           `json:"use_dora"`
	Bias          string         `json:"bias"`
	ModulesToSave []string       `json:"modules_to_save"`
	AlphaPattern  map[string]any `json:"alpha_pattern"`
	RankPattern   map[string]any `json:"rank_pattern"`
}

// peftModules maps a Hugging Face module (after model.layers.N.) to its
// GGUF tensor (after blk.N.).
var peftModules = map[string]string{
	"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
	"self_attn.qkv_proj": "attn_qkv", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}

var peftName = regexp.MustCompile(`^(?:base_model\.model\.)?(.+)\.(lora_A|lora_B|lora_embedding_A|lora_embedding_B)(?:\.weight)?$`)

// loadPEFT reads a PEFT LoRA directory (vLLM's --lora-modules format):
// adapter_config.json and adapter_model.safetensors. Its tensors are laid
// out as llama.cpp's (lora_A [R][In], lora_B [Out][R]) but for the
// embedding's A ([R][Vocab], transposed here) and the Q/K row order of
// GGUF llama models (Base.PermuteQK).
func loadPEFT(dir string, base Base) (*Adapter, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: a directory without adapter_config.json (a PEFT adapter has one): %v", ErrFormat, err)
	}
	var c peftConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: adapter_config.json: %v", ErrFormat, err)
	}
	switch {
	case c.PeftType != "" && c.PeftType != "LORA":
		return nil, fmt.Errorf("%w: peft_type %q, not LORA", ErrFormat, c.PeftType)
	case c.R < 1 || math.IsNaN(c.LoRAAlpha) || math.IsInf(c.LoRAAlpha, 0):
		return nil, fmt.Errorf("%w: r %d, lora_alpha %v", ErrFormat, c.R, c.LoRAAlpha)
	case c.FanInFanOut:
		return nil, fmt.Errorf("%w: fan_in_fan_out (GPT-2's Conv1D layers) is not supported", ErrMismatch)
	case c.UseDoRA:
		return nil, fmt.Errorf("%w: DoRA (use_dora) is not supported", ErrMismatch)
	case c.Bias != "" && c.Bias != "none":
		return nil, fmt.Errorf("%w: bias %q: trained biases are not supported", ErrMismatch, c.Bias)
	case len(c.ModulesToSave) > 0:
		return nil, fmt.Errorf("%w: modules_to_save %v: fully trained modules are not supported", ErrMismatch, c.ModulesToSave)
	case len(c.AlphaPattern) > 0, c.UseRSLoRA && len(c.RankPattern) > 0:
		return nil, fmt.Errorf("%w: per-module alpha_pattern (or rank_pattern with rsLoRA) is not supported", ErrMismatch)
	}
	path := filepath.Join(dir, "adapter_model.safetensors")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no adapter_model.safetensors (a .bin adapter is a pickle: save it with safe_serialization)", ErrFormat)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	defer f.Close() // pair copies what it keeps
	a := &Adapter{Arch: base.Arch, Layers: make([][NumTargets]*Pair, base.NumLayers), Tensor: map[string]struct{}{}}
	a.Alpha = float32(c.LoRAAlpha) // scale α/r
	if c.UseRSLoRA {
		a.Alpha = float32(c.LoRAAlpha * math.Sqrt(float64(c.R))) // scale α/√r
	}
	pairs := map[string][2]*model.Tensor{}
	for _, ti := range f.Infos() {
		m := peftName.FindStringSubmatch(ti.Name)
		if m == nil {
			return nil, fmt.Errorf("%w: tensor %q is not a LoRA A or B", ErrFormat, ti.Name)
		}
		name, err := peftTensor(m[1])
		if err != nil {
			return nil, err
		}
		t, err := f.Tensor(ti.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		half := 0
		switch m[2] {
		case "lora_B", "lora_embedding_B":
			half = 1
		case "lora_embedding_A":
			if t, err = transposed(t); err != nil {
				return nil, err
			}
		}
		if strings.HasSuffix(name, "attn_qkv.weight") && base.PermuteQK {
			return nil, fmt.Errorf("%w: a fused qkv_proj on a model whose Q and K rows are permuted", ErrMismatch)
		}
		p := pairs[name]
		p[half] = t
		pairs[name] = p
	}
	return a, a.addAll(pairs, base, true)
}

// peftTensor is the GGUF tensor of a PEFT module name.
func peftTensor(module string) (string, error) {
	switch module {
	case "lm_head":
		return "output.weight", nil
	case "model.embed_tokens":
		return "token_embd.weight", nil
	}
	if rest, ok := strings.CutPrefix(module, "model.layers."); ok {
		num, sub, _ := strings.Cut(rest, ".")
		if g, ok := peftModules[sub]; ok && num != "" && strings.Trim(num, "0123456789") == "" {
			return "blk." + num + "." + g + ".weight", nil
		}
	}
	return "", fmt.Errorf("%w: cannot adapt module %q", ErrMismatch, module)
}

// transposed is the float32 transpose of a matrix: ggml shape [a, b]
// becomes [b, a].
func transposed(t *model.Tensor) (*model.Tensor, error) {
	if len(t.Shape) != 2 {
		return nil, fmt.Errorf("%w: %s has shape %v", ErrFormat, t.Name, t.Shape)
	}
	v, err := t.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	cols, rows := t.Shape[0], t.Shape[1] // v is [rows][cols]
	out := make([]float32, len(v))
	for r := range rows {
		for c := range cols {
			out[c*rows+r] = v[r*cols+c]
		}
	}
	return model.NewTensor(t.Name, model.F32, []int{rows, cols}, out)
}
