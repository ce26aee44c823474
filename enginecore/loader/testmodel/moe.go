package testmodel

import (
	"math"
	"strconv"
	"strings"
)

// experts lists layer p's mixture-of-experts weights in drawing order:
// the router ffn_gate_inp ([E][Dim], std 1/sqrt(Dim); gpt-oss: and its
// bias, std 0.5), then
// ffn_gate_exps and ffn_up_exps ([E][Fe][Dim]) and ffn_down_exps
// ([E][Dim][Fe]) with the dense MLP's stds (gpt-oss: and their biases,
// std 0.1, float32), then qwen2moe's shared
// expert gate ffn_gate_inp_shexp ([Dim], std 1/sqrt(Dim)) and a shared
// expert's ffn_{gate,up,down}_shexp.
func (s Spec) experts(p string, normal func(n int, mean, std float64) []float32) []tensor {
	d, e, fe := s.Dim, s.Experts, s.ExpertFFNDim
	stack := func(name string, rows, cols, depth int) tensor {
		std := 1 / math.Sqrt(float64(cols))
		return tensor{p + name, rows, cols, depth, func() []float32 { return normal(rows*cols*max(depth, 1), 0, std) }}
	}
	ts := []tensor{stack("ffn_gate_inp.weight", e, d, 0)}
	if s.Arch == "gpt-oss" { // the router's bias
		ts = append(ts, tensor{p + "ffn_gate_inp.bias", e, 0, 0, func() []float32 { return normal(e, 0, 0.5) }})
	}
	if a := s.SelectionBias; a > 0 {
		ts = append(ts, tensor{p + "exp_probs_b.bias", e, 0, 0, func() []float32 {
			bias := make([]float32, e)
			for x := range bias {
				bias[x] = float32(a * float64((7*x)%5-2) / 2)
			}
			return bias
		}})
	}
	ts = append(ts,
		stack("ffn_gate_exps.weight", fe, d, e),
		stack("ffn_up_exps.weight", fe, d, e),
		stack("ffn_down_exps.weight", d, fe, e))
	if s.Arch == "gpt-oss" { // each expert's biases, [E][Fe] and [E][Dim]
		bias := func(name string, n int) tensor {
			return tensor{p + name, e, n, 0, func() []float32 { return normal(e*n, 0, 0.1) }}
		}
		ts = append(ts, bias("ffn_gate_exps.bias", fe), bias("ffn_up_exps.bias", fe), bias("ffn_down_exps.bias", d))
	}
	if s.Arch == "qwen2moe" {
		ts = append(ts, tensor{p + "ffn_gate_inp_shexp.weight", d, 0, 0, func() []float32 { return normal(d, 0, 1/math.Sqrt(float64(d))) }})
	}
	if fs := s.SharedFFNDim; fs > 0 {
		ts = append(ts,
			stack("ffn_gate_shexp.weight", fs, d, 0),
			stack("ffn_up_shexp.weight", fs, d, 0),
			stack("ffn_down_shexp.weight", d, fs, 0))
	}
	return ts
}

// hfExperts adds a mixture of experts' keys to config.json: Mixtral's
// (num_local_experts) for llama, GraniteMoe's (num_local_experts,
// shared_intermediate_size), Qwen's (num_experts,
// moe_intermediate_size, norm_topk_prob; Qwen2-MoE's
// shared_expert_intermediate_size) otherwise.
func hfExperts(cfg map[string]any, s Spec) {
	if s.Arch == "ernie4_5-moe" {
		cfg["moe_num_experts"], cfg["moe_k"], cfg["moe_intermediate_size"] = s.Experts, s.ExpertsUsed, s.ExpertFFNDim
		cfg["moe_num_shared_experts"] = s.SharedFFNDim / s.ExpertFFNDim
		cfg["moe_layer_start_index"], cfg["moe_layer_end_index"], cfg["moe_layer_interval"] = s.DenseLead, s.NumLayers-1, s.MoEStep
		cfg["use_bias"] = false
		return
	}
	cfg["num_experts_per_tok"] = s.ExpertsUsed
	if s.Arch == "llama" || s.Arch == "granitemoe" {
		cfg["num_local_experts"] = s.Experts
		if s.SharedFFNDim > 0 {
			cfg["shared_intermediate_size"] = s.SharedFFNDim
		}
		return
	}
	cfg["num_experts"] = s.Experts
	cfg["moe_intermediate_size"] = s.ExpertFFNDim
	cfg["norm_topk_prob"] = s.NormTopK
	cfg["decoder_sparse_step"] = 1
	dense := []int{}
	for l := range s.DenseLead {
		dense = append(dense, l)
	}
	cfg["mlp_only_layers"] = dense
	if s.SharedFFNDim > 0 {
		cfg["shared_expert_intermediate_size"] = s.SharedFFNDim
	}
}

// hfExpertName is the Hugging Face name (after "model.layers.N.") of
// expert e's part of a GGUF mixture-of-experts tensor (suffix after
// "blk.N."): Mixtral's block_sparse_moe.* for llama, Qwen's mlp.* else
// (ERNIE's shared experts are mlp.shared_experts.*, its selection bias
// mlp.moe_statics.e_score_correction_bias).
func hfExpertName(arch, suffix string, e int) (string, bool) {
	x := strconv.Itoa(e)
	if arch == "llama" {
		name, ok := map[string]string{
			"ffn_gate_inp.weight":  "block_sparse_moe.gate.weight",
			"ffn_gate_exps.weight": "block_sparse_moe.experts." + x + ".w1.weight",
			"ffn_down_exps.weight": "block_sparse_moe.experts." + x + ".w2.weight",
			"ffn_up_exps.weight":   "block_sparse_moe.experts." + x + ".w3.weight",
		}[suffix]
		return name, ok
	}
	shared := "mlp.shared_expert."
	if arch == "ernie4_5-moe" {
		shared = "mlp.shared_experts."
	}
	name, ok := map[string]string{
		"exp_probs_b.bias":          "mlp.moe_statics.e_score_correction_bias",
		"ffn_gate_inp.weight":       "mlp.gate.weight",
		"ffn_gate_exps.weight":      "mlp.experts." + x + ".gate_proj.weight",
		"ffn_up_exps.weight":        "mlp.experts." + x + ".up_proj.weight",
		"ffn_down_exps.weight":      "mlp.experts." + x + ".down_proj.weight",
		"ffn_gate_inp_shexp.weight": "mlp.shared_expert_gate.weight",
		"ffn_gate_shexp.weight":     shared + "gate_proj.weight",
		"ffn_up_shexp.weight":       shared + "up_proj.weight",
		"ffn_down_shexp.weight":     shared + "down_proj.weight",
	}[suffix]
	return name, ok
}

// fuseGraniteMoE names GGUF tensor t (values drawn) as GraniteMoe's
// checkpoint stores it: each gate projection (experts' ffn_gate_exps,
// the shared ffn_gate_shexp) is stashed, and the up projection after it
// fused with it as input_linear (per expert, the gate's rows then the
// up's: [E][2Fe][Dim], the shared [2Fs][Dim]); ffn_down_exps is
// block_sparse_moe.output_linear ([E][Dim][Fe]), ffn_down_shexp
// shared_mlp.output_linear, the router block_sparse_moe.router.layer.
// name is "" for a stashed gate and "-" for a tensor not of the
// experts (written as any other).
func fuseGraniteMoE(t tensor, values []float32, stash *[]float32) (name string, shape []uint64, out []float32) {
	_, suffix, _ := strings.Cut(strings.TrimPrefix(t.name, "blk."), ".")
	depth := max(t.depth, 1)
	switch suffix {
	case "ffn_gate_exps.weight", "ffn_gate_shexp.weight":
		*stash = values
		return "", nil, nil
	case "ffn_up_exps.weight", "ffn_up_shexp.weight":
		gate, n := *stash, t.rows*t.cols
		*stash = nil
		for e := range depth {
			out = append(append(out, gate[e*n:(e+1)*n]...), values[e*n:(e+1)*n]...)
		}
		if t.depth > 0 {
			return "block_sparse_moe.input_linear.weight", []uint64{uint64(t.depth), uint64(2 * t.rows), uint64(t.cols)}, out
		}
		return "shared_mlp.input_linear.weight", []uint64{uint64(2 * t.rows), uint64(t.cols)}, out
	case "ffn_down_exps.weight":
		return "block_sparse_moe.output_linear.weight", []uint64{uint64(t.depth), uint64(t.rows), uint64(t.cols)}, values
	case "ffn_down_shexp.weight":
		return "shared_mlp.output_linear.weight", []uint64{uint64(t.rows), uint64(t.cols)}, values
	case "ffn_gate_inp.weight":
		return "block_sparse_moe.router.layer.weight", []uint64{uint64(t.rows), uint64(t.cols)}, values
	}
	return "-", nil, nil
}

// layerOf is N of a GGUF name blk.N.*.
func layerOf(name string) string {
	n, _, _ := strings.Cut(strings.TrimPrefix(name, "blk."), ".")
	return n
}

// sparse reports whether layer l's MLP is a mixture of experts.
func (s Spec) sparse(l int) bool {
	if s.Experts == 0 {
		return false
	}
	return l >= s.DenseLead && (l+1)%max(s.MoEStep, 1) == 0
}
