package testmodel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/model/safetensors"
)

var hfArch = map[string]struct{ class, modelType string }{
	"llama":            {"LlamaForCausalLM", "llama"},
	"qwen2":            {"Qwen2ForCausalLM", "qwen2"},
	"qwen3":            {"Qwen3ForCausalLM", "qwen3"},
	"smollm3":          {"SmolLM3ForCausalLM", "smollm3"},
	"granite":          {"GraniteForCausalLM", "granite"},
	"phi3":             {"Phi3ForCausalLM", "phi3"},
	"gemma2":           {"Gemma2ForCausalLM", "gemma2"},
	"gemma3":           {"Gemma3ForCausalLM", "gemma3_text"},
	"qwen2moe":         {"Qwen2MoeForCausalLM", "qwen2_moe"},
	"qwen3moe":         {"Qwen3MoeForCausalLM", "qwen3_moe"},
	"mixtral":          {"MixtralForCausalLM", "mixtral"}, // llama with experts
	"granitemoe":       {"GraniteMoeForCausalLM", "granitemoe"},
	"granitemoeshared": {"GraniteMoeSharedForCausalLM", "granitemoeshared"}, // granitemoe with a shared expert
	"ernie4_5":         {"Ernie4_5ForCausalLM", "ernie4_5"},
	"olmo2":            {"Olmo2ForCausalLM", "olmo2"},
	"olmoe":            {"OlmoeForCausalLM", "olmoe"},
	"ernie4_5-moe":     {"Ernie4_5_MoeForCausalLM", "ernie4_5_moe"},
}

var hfDTypes = map[model.DType]string{model.F32: "F32", model.F16: "F16", model.BF16: "BF16"}

// WriteHF writes the model as a Hugging Face directory: config.json and
// model.safetensors (no tokenizer files). Matrix types must be F32, F16 or
// BF16; RopeFreqs is refused (express llama3 scaling in config.json).
func WriteHF(dir string, spec Spec) error {
	s, err := spec.resolve()
	if err != nil {
		return err
	}
	if s.RopeFreqs != nil {
		return fmt.Errorf("testmodel: RopeFreqs is GGUF only")
	}

	w := safetensors.NewWriter()
	w.Metadata = map[string]string{"format": "pt"}
	dtype := "F32"
	var stash []float32 // granitemoe: a gate projection, to fuse with its up
	for _, t := range s.generate() {
		typ := s.typeOf(t)
		dt, ok := hfDTypes[typ]
		if !ok {
			return fmt.Errorf("testmodel: %s: type %v cannot be stored in safetensors", t.name, typ)
		}
		if t.matrix() && dt != "F32" {
			dtype = dt
		}
		values := t.draw()
		if strings.HasPrefix(s.Arch, "gemma") && strings.HasSuffix(t.name, "norm.weight") {
			for i := range values {
				values[i]-- // Gemma3RMSNorm multiplies by 1+w; GGUF stores 1+w
			}
		}
		if s.Arch == "llama" || s.Arch == "smollm3" || s.Arch == "granite" || s.Arch == "granitemoe" {
			switch {
			case strings.HasSuffix(t.name, "attn_q.weight"):
				values = toHFOrder(values, s.NumHeads, s.HeadDim, t.cols)
			case strings.HasSuffix(t.name, "attn_k.weight"):
				values = toHFOrder(values, s.NumKVHeads, s.HeadDim, t.cols)
			}
		}
		if s.Arch == "granitemoe" {
			name, shape, fused := fuseGraniteMoE(t, values, &stash)
			if name == "" {
				continue // a gate, waiting for its up projection
			}
			if name != "-" {
				data, err := s.encode(t.name, typ, fused)
				if err != nil {
					return err
				}
				if err := w.Add("model.layers."+layerOf(t.name)+"."+name, dt, shape, data); err != nil {
					return fmt.Errorf("testmodel: %w", err)
				}
				continue
			}
		}
		for e := range max(t.depth, 1) { // a stack of experts: one tensor each
			n := len(values) / max(t.depth, 1)
			data, err := s.encode(t.name, typ, values[e*n:(e+1)*n])
			if err != nil {
				return err
			}
			shape := []uint64{uint64(t.rows)}
			switch {
			case t.matrix():
				shape = append(shape, uint64(t.cols))
			case strings.HasSuffix(t.name, "ffn_gate_inp_shexp.weight"), strings.HasSuffix(t.name, "exp_probs_b.bias"):
				shape = []uint64{1, uint64(t.rows)} // Qwen2-MoE's shared_expert_gate, a Linear(hidden, 1); ERNIE's [1, E] bias
			}
			if err := w.Add(hfName(s.Arch, t.name, e), dt, shape, data); err != nil {
				return fmt.Errorf("testmodel: %w", err)
			}
		}
	}
	bos, eos := uint32(1), uint32(2)
	if s.Tokenizer != nil {
		bos, _ = s.Tokenizer["tokenizer.ggml.bos_token_id"].(uint32)
		eos, _ = s.Tokenizer["tokenizer.ggml.eos_token_id"].(uint32)
	}
	a := hfArch[s.Arch]
	if s.Arch == "llama" && s.Experts > 0 {
		a = hfArch["mixtral"]
	}
	if s.Arch == "granitemoe" && s.SharedFFNDim > 0 {
		a = hfArch["granitemoeshared"]
	}
	cfg := map[string]any{
		"architectures":           []string{a.class},
		"model_type":              a.modelType,
		"hidden_size":             s.Dim,
		"num_hidden_layers":       s.NumLayers,
		"intermediate_size":       s.FFNDim,
		"num_attention_heads":     s.NumHeads,
		"num_key_value_heads":     s.NumKVHeads,
		"head_dim":                s.HeadDim,
		"rope_theta":              s.RopeTheta,
		"rms_norm_eps":            s.NormEps,
		"max_position_embeddings": s.ContextLen,
		"tie_word_embeddings":     s.Tied,
		"vocab_size":              s.VocabSize,
		"bos_token_id":            bos,
		"eos_token_id":            eos,
		"hidden_act":              "silu",
		"torch_dtype":             map[string]string{"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
	}
	if s.Arch == "phi3" && s.Phi3.Short != nil {
		f64 := func(v []float32) []float64 {
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = float64(x)
			}
			return out
		}
		rs := map[string]any{"type": "longrope", "short_factor": f64(s.Phi3.Short), "long_factor": f64(s.Phi3.Long)}
		if s.Phi3.AttnFactor > 0 {
			rs["attention_factor"] = s.Phi3.AttnFactor
		}
		cfg["rope_scaling"] = rs
		cfg["original_max_position_embeddings"] = s.Phi3.OrigContextLen
	}
	if s.RopeDim > 0 {
		cfg["partial_rotary_factor"] = float64(s.RopeDim) / float64(s.HeadDim)
	}
	if y := s.Yarn; y.Factor > 0 {
		rs := map[string]any{"rope_type": "yarn", "factor": y.Factor}
		if y.OrigContextLen > 0 {
			rs["original_max_position_embeddings"] = y.OrigContextLen
		}
		if y.BetaFast > 0 {
			rs["beta_fast"] = y.BetaFast
		}
		if y.BetaSlow > 0 {
			rs["beta_slow"] = y.BetaSlow
		}
		cfg["rope_scaling"] = rs
	}
	if s.Experts > 0 {
		hfExperts(cfg, s)
	}
	if s.Arch == "granite" || s.Arch == "granitemoe" {
		g := s.Granite
		cfg["embedding_multiplier"], cfg["attention_multiplier"] = g.Embedding, g.Attention
		cfg["residual_multiplier"], cfg["logits_scaling"] = g.Residual, g.Logit
	}
	if s.Arch == "smollm3" {
		rope := make([]int, s.NumLayers) // SmolLM3-3B's config: every fourth layer 0
		for l := range rope {
			rope[l] = min(1, (l+1)%4)
		}
		cfg["no_rope_layers"] = rope
		cfg["no_rope_layer_interval"] = 4
	}
	if s.Arch == "gemma2" {
		delete(cfg, "hidden_act")
		cfg["hidden_activation"] = "gelu_pytorch_tanh"
		cfg["query_pre_attn_scalar"] = s.HeadDim
		cfg["final_logit_softcapping"] = cmp.Or(s.FinalSoftcap, 30)
		cfg["attn_logit_softcapping"] = cmp.Or(s.AttnSoftcap, 50)
		cfg["sliding_window"] = cmp.Or(s.SlidingWindow, 4096)
		if s.WindowPattern > 0 {
			cfg["sliding_window_pattern"] = s.WindowPattern
		}
	}
	if s.Arch == "gemma3" {
		delete(cfg, "hidden_act")
		cfg["hidden_activation"] = "gelu_pytorch_tanh"
		cfg["query_pre_attn_scalar"] = s.HeadDim
		cfg["final_logit_softcapping"] = nil
		cfg["attn_logit_softcapping"] = nil
		cfg["sliding_window"] = nil
		if s.FinalSoftcap > 0 {
			cfg["final_logit_softcapping"] = s.FinalSoftcap
		}
		if s.SlidingWindow > 0 {
			cfg["sliding_window"] = s.SlidingWindow
			cfg["rope_local_base_freq"] = cmp.Or(s.LocalRopeTheta, 10000)
			cfg["sliding_window_pattern"] = cmp.Or(s.WindowPattern, 6)
		}
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), js, 0o644); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return fmt.Errorf("testmodel: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "model.safetensors"), buf.Bytes(), 0o644)
}

// toHFOrder undoes llama.cpp's Q/K row permutation: GGUF row h·D+2i+s is
// Hugging Face row h·D+s·D/2+i.
func toHFOrder(values []float32, heads, headDim, cols int) []float32 {
	out := make([]float32, len(values))
	half := headDim / 2
	for h := range heads {
		for i := range half {
			for s := range 2 {
				src := (h*headDim + 2*i + s) * cols
				dst := (h*headDim + s*half + i) * cols
				copy(out[dst:dst+cols], values[src:src+cols])
			}
		}
	}
	return out
}

// hfNames maps GGUF layer tensor suffixes to Hugging Face ones.
var hfNames = map[string]string{
	"attn_norm.weight":   "input_layernorm.weight",
	"attn_q.weight":      "self_attn.q_proj.weight",
	"attn_k.weight":      "self_attn.k_proj.weight",
	"attn_v.weight":      "self_attn.v_proj.weight",
	"attn_qkv.weight":    "self_attn.qkv_proj.weight",
	"attn_output.weight": "self_attn.o_proj.weight",
	"attn_q.bias":        "self_attn.q_proj.bias",
	"attn_k.bias":        "self_attn.k_proj.bias",
	"attn_v.bias":        "self_attn.v_proj.bias",
	"attn_q_norm.weight": "self_attn.q_norm.weight",
	"attn_k_norm.weight": "self_attn.k_norm.weight",
	"ffn_norm.weight":    "post_attention_layernorm.weight",
	"ffn_gate.weight":    "mlp.gate_proj.weight",
	"ffn_up.weight":      "mlp.up_proj.weight",
	"ffn_down.weight":    "mlp.down_proj.weight",
}

// hfGemmaNames are Gemma 3's names where they differ from hfNames.
var hfGemmaNames = map[string]string{
	"post_attention_norm.weight": "post_attention_layernorm.weight",
	"ffn_norm.weight":            "pre_feedforward_layernorm.weight",
	"post_ffw_norm.weight":       "post_feedforward_layernorm.weight",
}

// hfName is the Hugging Face name of GGUF tensor g, expert e of it when
// g is a stack of experts.
func hfName(arch, g string, e int) string {
	switch g {
	case "token_embd.weight":
		return "model.embed_tokens.weight"
	case "output_norm.weight":
		return "model.norm.weight"
	case "output.weight":
		return "lm_head.weight"
	}
	rest := strings.TrimPrefix(g, "blk.")
	n, suffix, _ := strings.Cut(rest, ".")
	if name, ok := hfExpertName(arch, suffix, e); ok {
		return "model.layers." + n + "." + name
	}
	if suffix == "ffn_up.weight" && arch == "phi3" {
		return "model.layers." + n + ".mlp.gate_up_proj.weight" // fused: gate, up
	}
	if name, ok := hfGemmaNames[suffix]; ok && (strings.HasPrefix(arch, "gemma") || arch == "olmo2") {
		return "model.layers." + n + "." + name
	}
	return "model.layers." + n + "." + hfNames[suffix]
}
