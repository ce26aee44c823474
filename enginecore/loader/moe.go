package loader

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// moe reads a mixture of experts' sizes as llama.cpp's llama (Mixtral),
// granitemoe, qwen2moe, qwen3moe and ernie4_5-moe models do: expert_count (for llama
// and granitemoe, absent or 0 means a dense model), expert_used_count,
// and each expert's width: feed_forward_length for llama and granitemoe,
// else expert_feed_forward_length (default feed_forward_length/K). The
// routing weights are renormalized to sum 1 but for Qwen2-MoE. A shared
// expert: Qwen2-MoE's, expert_shared_feed_forward_length wide (default
// feed_forward_length) behind a sigmoid gate; Granite MoE's and ERNIE
// 4.5's when that key is there, ungated. ERNIE 4.5's first layers are
// dense (ernieLayers).
func (r *kvReader) moe(cfg *model.Config) {
	n, ok := r.md.KV(r.prefix + "expert_count")
	u, isUint := r.md.Uint(r.prefix + "expert_count")
	denseOK := cfg.Arch == "llama" || cfg.Arch == "granitemoe"
	fWide := denseOK || cfg.Arch == "olmoe" // experts feed_forward_length wide
	if !ok && denseOK || isUint && u == 0 {
		if !denseOK {
			r.errs = append(r.errs, invalid("%s is a mixture of experts but %sexpert_count is %v", cfg.Arch, r.prefix, n))
		}
		return
	}
	cfg.NumExperts = r.int("expert_count", 0)
	cfg.NumExpertsUsed = r.int("expert_used_count", 0)
	if cfg.NumExpertsUsed > cfg.NumExperts {
		r.errs = append(r.errs, invalid("%d experts used per token of %d", cfg.NumExpertsUsed, cfg.NumExperts))
	}
	// gpt-oss weighs by the softmax of the K chosen logits, which is the
	// renormalized softmax over all of them.
	cfg.ExpertWeightsNorm = cfg.Arch != "qwen2moe" && cfg.Arch != "olmoe"
	cfg.ExpertFFNDim = cfg.FFNDim
	if !fWide && cfg.NumExpertsUsed > 0 {
		cfg.ExpertFFNDim = r.int("expert_feed_forward_length", max(cfg.FFNDim/cfg.NumExpertsUsed, 1))
	}
	_, hasShared := r.md.KV(r.prefix + "expert_shared_feed_forward_length")
	switch {
	case cfg.Arch == "qwen2moe":
		cfg.SharedExpertFFNDim = r.int("expert_shared_feed_forward_length", max(cfg.FFNDim, 1))
		cfg.SharedExpertGate = true
	case (cfg.Arch == "granitemoe" || cfg.Arch == "ernie4_5-moe") && hasShared:
		cfg.SharedExpertFFNDim = r.int("expert_shared_feed_forward_length", 0)
	}
	if cfg.Arch == "ernie4_5-moe" {
		r.ernieLayers(cfg)
	}
}

// ernieLayers reads which of ERNIE 4.5's layers are mixtures of experts,
// as llama.cpp's ernie4_5-moe graph does: from the
// leading_dense_block_count-th (default 0), every
// interleave_moe_layer_step-th (required).
func (r *kvReader) ernieLayers(cfg *model.Config) {
	lead := 0
	if _, ok := r.md.KV(r.prefix + "leading_dense_block_count"); ok {
		lead = r.int("leading_dense_block_count", 0)
	}
	step := r.int("interleave_moe_layer_step", 0)
	if step <= 0 || cfg.NumLayers <= 0 {
		return
	}
	cfg.MoELayers = sparseLayers(cfg.NumLayers, func(l int) bool { return l >= lead && (l+1)%step == 0 })
}

// sparseLayers flags which of numLayers layers are mixtures of experts
// (model.Config.MoELayers): nil when every one is.
func sparseLayers(numLayers int, sparse func(l int) bool) []bool {
	flags, all := make([]bool, max(numLayers, 0)), true
	for l := range flags {
		flags[l] = sparse(l)
		all = all && flags[l]
	}
	if all {
		return nil
	}
	return flags
}

// moeShapes adds layer l's mixture-of-experts tensors to m, replacing
// the dense MLP's: the experts stacked in ffn_*_exps.weight, or one
// ffn_*.E.weight each.
func moeShapes(cfg *model.Config, l int, m map[string]want, stacked bool) {
	p := fmt.Sprintf("blk.%d.", l)
	d, e, fe, fs := cfg.Dim, cfg.NumExperts, cfg.ExpertFFNDim, cfg.SharedExpertFFNDim
	for _, name := range []string{"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"} {
		delete(m, p+name)
	}
	m[p+"ffn_gate_inp.weight"] = want{[]int{d, e}, false}
	m[p+"exp_probs_b.bias"] = want{[]int{e}, true} // a selection bias (ERNIE 4.5)
	if stacked {
		m[p+"ffn_gate_exps.weight"] = want{[]int{d, fe, e}, false}
		m[p+"ffn_up_exps.weight"] = want{[]int{d, fe, e}, false}
		m[p+"ffn_down_exps.weight"] = want{[]int{fe, d, e}, false}
	} else {
		for x := range e {
			m[expertName(l, x, "ffn_gate")] = want{[]int{d, fe}, false}
			m[expertName(l, x, "ffn_up")] = want{[]int{d, fe}, false}
			m[expertName(l, x, "ffn_down")] = want{[]int{fe, d}, false}
		}
	}
	if cfg.SharedExpertGate {
		m[p+"ffn_gate_inp_shexp.weight"] = want{[]int{d}, false}
	}
	if cfg.ExpertBiases {
		m[p+"ffn_gate_inp.bias"] = want{[]int{e}, false}
		m[p+"ffn_gate_exps.bias"] = want{[]int{fe, e}, false}
		m[p+"ffn_up_exps.bias"] = want{[]int{fe, e}, false}
		m[p+"ffn_down_exps.bias"] = want{[]int{d, e}, false}
	}
	if fs > 0 {
		m[p+"ffn_gate_shexp.weight"] = want{[]int{d, fs}, false}
		m[p+"ffn_up_shexp.weight"] = want{[]int{d, fs}, false}
		m[p+"ffn_down_shexp.weight"] = want{[]int{fs, d}, false}
	}
}

// expertName is the GGUF name an expert's matrix takes when a checkpoint
// stores one per expert: blk.N.ffn_gate.E.weight (as llama.cpp's older
// Mixtral files do; model.FromTensors reads either form).
func expertName(layer, expert int, part string) string {
	return fmt.Sprintf("blk.%d.%s.%d.weight", layer, part, expert)
}

// hfMoEConfig is config.json's mixture of experts.
type hfMoEConfig struct {
	NumExperts             int   `json:"num_experts"`       // Qwen2-MoE, Qwen3-MoE
	NumLocalExperts        int   `json:"num_local_experts"` // Mixtral
	NumExpertsPerTok       int   `json:"num_experts_per_tok"`
	MoEIntermediateSize    int   `json:"moe_intermediate_size"`           // Qwen: each expert's width
	SharedIntermediateSize int   `json:"shared_expert_intermediate_size"` // Qwen2-MoE
	NormTopKProb           *bool `json:"norm_topk_prob"`                  // Qwen: absent is false
	GraniteSharedSize      int   `json:"shared_intermediate_size"`        // GraniteMoeShared
	hfErnieMoE
	DecoderSparseStep *int  `json:"decoder_sparse_step"` // Qwen: every n-th layer is sparse
	MLPOnlyLayers     []int `json:"mlp_only_layers"`     // Qwen: dense layers
}

// moe reads the experts as transformers does: Mixtral's
// num_local_experts (0 or absent: a dense Mistral) of intermediate_size,
// renormalized; GraniteMoe's likewise (its top-K softmax is the
// renormalized one), with GraniteMoeShared's ungated shared expert of
// shared_intermediate_size; Qwen's num_experts of moe_intermediate_size,
// renormalized when norm_topk_prob, and Qwen2-MoE's shared expert of
// shared_expert_intermediate_size, with dense layers where qwenLayers
// says.
func (hc *hfConfig) moe(cfg *model.Config) error {
	m := &hc.hfMoEConfig
	if cfg.Arch == "ernie4_5-moe" {
		return hc.ernieMoE(cfg)
	}
	if cfg.Arch == "llama" || cfg.Arch == "granitemoe" {
		if m.NumLocalExperts == 0 {
			if cfg.Arch == "granitemoe" {
				return unsupported("GraniteMoe without experts (num_local_experts 0) is not supported")
			}
			return nil
		}
		cfg.NumExperts, cfg.ExpertFFNDim, cfg.ExpertWeightsNorm = m.NumLocalExperts, cfg.FFNDim, true
		if cfg.Arch == "granitemoe" {
			cfg.SharedExpertFFNDim = m.GraniteSharedSize // GraniteMoeShared's, ungated; 0: none
		}
	} else {
		cfg.NumExperts, cfg.ExpertFFNDim = m.NumExperts, m.MoEIntermediateSize
		if cfg.Arch == "olmoe" { // experts intermediate_size wide
			cfg.ExpertFFNDim = cfg.FFNDim
		}
		cfg.ExpertWeightsNorm = m.NormTopKProb != nil && *m.NormTopKProb
		if cfg.Arch == "qwen2moe" {
			cfg.SharedExpertFFNDim, cfg.SharedExpertGate = m.SharedIntermediateSize, true
			if cfg.SharedExpertFFNDim <= 0 {
				return invalid("shared_expert_intermediate_size %d", cfg.SharedExpertFFNDim)
			}
		}
		if err := hc.qwenLayers(cfg); err != nil {
			return err
		}
	}
	cfg.NumExpertsUsed = m.NumExpertsPerTok
	if cfg.NumExperts <= 0 || cfg.NumExpertsUsed <= 0 || cfg.NumExpertsUsed > cfg.NumExperts || cfg.ExpertFFNDim <= 0 {
		return invalid("%d experts, %d per token, %d wide", cfg.NumExperts, cfg.NumExpertsUsed, cfg.ExpertFFNDim)
	}
	return nil
}

// hfExpertParts maps the Hugging Face names of an expert's matrices to
// GGUF's: Qwen's gate_proj, up_proj, down_proj and Mixtral's w1, w3, w2.
var hfExpertParts = map[string]string{
	"gate_proj.weight": "ffn_gate", "up_proj.weight": "ffn_up", "down_proj.weight": "ffn_down",
	"w1.weight": "ffn_gate", "w3.weight": "ffn_up", "w2.weight": "ffn_down",
}

// hfExpertName is the GGUF name of a mixture-of-experts tensor of layer
// n, suffix being its name after "model.layers.N.": the router
// (mlp.gate, block_sparse_moe.gate), an expert's matrix
// (mlp.experts.E.*, block_sparse_moe.experts.E.*: blk.N.ffn_*.E.weight)
// and Qwen2-MoE's shared expert (mlp.shared_expert.*,
// mlp.shared_expert_gate).
func hfExpertName(n int, suffix string) (string, bool) {
	p := "blk." + strconv.Itoa(n) + "."
	switch suffix {
	case "mlp.gate.weight", "block_sparse_moe.gate.weight", "block_sparse_moe.router.layer.weight":
		return p + "ffn_gate_inp.weight", true
	case "mlp.shared_expert_gate.weight":
		return p + "ffn_gate_inp_shexp.weight", true
	case "mlp.moe_statics.e_score_correction_bias": // ERNIE 4.5: [1, E]
		return p + "exp_probs_b.bias", true
	case "block_sparse_moe.input_linear.weight": // GraniteMoe: gate and up of every expert (splitGraniteMoE)
		return p + "ffn_gate_up_exps.weight", true
	case "block_sparse_moe.output_linear.weight":
		return p + "ffn_down_exps.weight", true
	case "shared_mlp.input_linear.weight":
		return p + "ffn_gate_up_shexp.weight", true
	case "shared_mlp.output_linear.weight":
		return p + "ffn_down_shexp.weight", true
	}
	if rest, ok := strings.CutPrefix(suffix, "mlp.shared_experts."); ok { // ERNIE 4.5
		suffix = "mlp.shared_expert." + rest
	}
	if rest, ok := strings.CutPrefix(suffix, "mlp.shared_expert."); ok {
		part, ok := hfExpertParts[rest]
		return p + part + "_shexp.weight", ok && strings.HasSuffix(rest, "_proj.weight")
	}
	rest, ok := strings.CutPrefix(suffix, "mlp.experts.")
	if !ok {
		rest, ok = strings.CutPrefix(suffix, "block_sparse_moe.experts.")
	}
	if !ok {
		return "", false
	}
	num, part, _ := strings.Cut(rest, ".")
	e, err := strconv.Atoi(num)
	g, known := hfExpertParts[part]
	if err != nil || e < 0 || strconv.Itoa(e) != num || !known {
		return "", false
	}
	return expertName(n, e, g), true
}

// hfSupportedList names the config.json architectures Tandem reads.
func hfSupportedList() string {
	names := make([]string, 0, len(hfArchitectures))
	for n := range hfArchitectures {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// splitGraniteMoE turns GraniteMoe's fused tensors into the ones the
// engine reads, as llama.cpp's converter does, without copying:
// input_linear ([E][2Fe][Dim]) into each expert's gate (its first Fe
// rows) and up projection, output_linear ([E][Dim][Fe]) into each
// expert's down projection, and the shared expert's input_linear
// ([2Fs][Dim]) into its gate and up.
func splitGraniteMoE(cfg *model.Config, tensors map[string]*model.Tensor) error {
	fe, fs := cfg.ExpertFFNDim, cfg.SharedExpertFFNDim
	for l := range cfg.NumLayers {
		p := "blk." + strconv.Itoa(l) + "."
		if err := splitRows(tensors, p+"ffn_gate_up_shexp.weight", []string{p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight"}, []int{fs, fs}); err != nil {
			return err
		}
		for _, part := range []struct {
			name  string
			split func(e int, view *model.Tensor) error
		}{
			{"ffn_gate_up_exps.weight", func(e int, view *model.Tensor) error {
				tmp := view.Name
				tensors[tmp] = view
				return splitRows(tensors, tmp, []string{expertName(l, e, "ffn_gate"), expertName(l, e, "ffn_up")}, []int{fe, fe})
			}},
			{"ffn_down_exps.weight", func(e int, view *model.Tensor) error {
				view.Name = expertName(l, e, "ffn_down")
				tensors[view.Name] = view
				return nil
			}},
		} {
			t, ok := tensors[p+part.name]
			if !ok {
				continue // checkTensors reports the experts missing
			}
			views, err := t.SplitExperts(cfg.NumExperts)
			if err != nil {
				return invalid("%v", err)
			}
			delete(tensors, p+part.name)
			for e, v := range views {
				if err := part.split(e, v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hfErnieMoE is ERNIE 4.5 MoE's config.json.
type hfErnieMoE struct {
	MoENumExperts    json.RawMessage `json:"moe_num_experts"` // a count (a list in the vision models)
	MoEK             int             `json:"moe_k"`           // moe_intermediate_size is hfMoEConfig's
	MoENumShared     int             `json:"moe_num_shared_experts"`
	MoELayerStart    int             `json:"moe_layer_start_index"`
	MoELayerEnd      *int            `json:"moe_layer_end_index"` // absent or negative: the last layer
	MoELayerInterval int             `json:"moe_layer_interval"`
}

// ernieMoE reads ERNIE 4.5's experts as transformers'
// Ernie4_5_MoeForCausalLM does: moe_num_experts of moe_intermediate_size,
// moe_k per token, renormalized; a shared expert of
// moe_intermediate_size × moe_num_shared_experts, ungated; and the
// layers from moe_layer_start_index to moe_layer_end_index whose number
// plus one is a multiple of moe_layer_interval are mixtures, the others
// dense MLPs of intermediate_size.
func (hc *hfConfig) ernieMoE(cfg *model.Config) error {
	m, width := &hc.hfErnieMoE, hc.MoEIntermediateSize
	if err := json.Unmarshal(m.MoENumExperts, &cfg.NumExperts); err != nil {
		return unsupported("moe_num_experts %s (a list: the vision model's experts) is not supported", m.MoENumExperts)
	}
	cfg.NumExpertsUsed, cfg.ExpertFFNDim, cfg.ExpertWeightsNorm = m.MoEK, width, true
	cfg.SharedExpertFFNDim = width * max(m.MoENumShared, 0)
	if cfg.NumExperts <= 0 || cfg.NumExpertsUsed <= 0 || cfg.NumExpertsUsed > cfg.NumExperts || cfg.ExpertFFNDim <= 0 || m.MoELayerInterval <= 0 {
		return invalid("%d experts, %d per token, %d wide, every %d layers", cfg.NumExperts, cfg.NumExpertsUsed, cfg.ExpertFFNDim, m.MoELayerInterval)
	}
	end := cfg.NumLayers - 1
	if m.MoELayerEnd != nil && *m.MoELayerEnd >= 0 {
		end = *m.MoELayerEnd
	}
	cfg.MoELayers = sparseLayers(cfg.NumLayers, func(l int) bool {
		return l >= m.MoELayerStart && l <= end && (l+1)%m.MoELayerInterval == 0
	})
	return nil
}

// qwenLayers reads which of a Qwen MoE's layers are sparse as
// transformers' Qwen2MoeDecoderLayer and Qwen3MoeDecoderLayer do: those
// not in mlp_only_layers whose number plus one is a multiple of
// decoder_sparse_step (default 1); the others are dense MLPs of
// intermediate_size. (llama.cpp's GGUFs have no such layers.)
func (hc *hfConfig) qwenLayers(cfg *model.Config) error {
	m, step := &hc.hfMoEConfig, 1
	if m.DecoderSparseStep != nil {
		step = *m.DecoderSparseStep
	}
	if step <= 0 {
		return invalid("decoder_sparse_step %d", step)
	}
	cfg.MoELayers = sparseLayers(cfg.NumLayers, func(l int) bool { return !slices.Contains(m.MLPOnlyLayers, l) && (l+1)%step == 0 })
	return nil
}
