package loader

import (
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

type hfRopeScaling struct {
	RopeType       string    `json:"rope_type"`
	Type           string    `json:"type"` // older spelling of rope_type
	RopeTheta      *float64  `json:"rope_theta"`
	Factor         float64   `json:"factor"`
	LowFreqFactor  *float64  `json:"low_freq_factor"`
	HighFreqFactor *float64  `json:"high_freq_factor"`
	OrigMaxPos     *int      `json:"original_max_position_embeddings"`
	ShortFactor    []float64 `json:"short_factor"`     // Phi-3 LongRoPE
	LongFactor     []float64 `json:"long_factor"`      // Phi-3 LongRoPE
	AttnFactor     *float64  `json:"attention_factor"` // Phi-3 LongRoPE; absent: from the context lengths. YaRN: absent, 1 + 0.1·ln(factor)
	BetaFast       *float64  `json:"beta_fast"`        // YaRN
	BetaSlow       *float64  `json:"beta_slow"`        // YaRN
	MScale         *float64  `json:"mscale"`           // YaRN, DeepSeek's
	MScaleAllDim   *float64  `json:"mscale_all_dim"`   // YaRN, DeepSeek's
	Truncate       *bool     `json:"truncate"`         // YaRN: false keeps the correction range unrounded (gpt-oss)
}

// yarn reads YaRN as transformers' _compute_yarn_parameters does:
// factor over original_max_position_embeddings (default
// max_position_embeddings), beta_fast and beta_slow (32, 1), and
// attention_factor (default 1 + 0.1·ln(factor), which RopeMScale
// applies). The context served extends to factor × the original, as
// vLLM derives it. DeepSeek's mscale and an untruncated range are
// refused.
func (rs *hfRopeScaling) yarn(cfg *model.Config) error {
	switch {
	case rs.MScale != nil && *rs.MScale != 1, rs.MScaleAllDim != nil && *rs.MScaleAllDim != 0 && *rs.MScaleAllDim != 1:
		return unsupported("YaRN with mscale or mscale_all_dim (DeepSeek's) is not supported")
	case rs.Truncate != nil && !*rs.Truncate:
		return unsupported("YaRN with truncate false (gpt-oss) is not supported")
	case !(rs.Factor >= 1):
		return invalid("YaRN factor %g", rs.Factor)
	}
	s := model.RopeScaling{Type: "yarn", Factor: rs.Factor, OrigContextLen: cfg.MaxContextLen}
	if rs.OrigMaxPos != nil {
		s.OrigContextLen = *rs.OrigMaxPos
	}
	if rs.BetaFast != nil {
		s.BetaFast = *rs.BetaFast
	}
	if rs.BetaSlow != nil {
		s.BetaSlow = *rs.BetaSlow
	}
	cfg.RopeScaling = s
	if rs.AttnFactor != nil && rs.Factor > 1 { // RopeMScale multiplies by 1 + 0.1·ln(factor)
		cfg.RopeAttnFactor = *rs.AttnFactor / (1 + 0.1*math.Log(rs.Factor))
	}
	cfg.MaxContextLen = max(cfg.MaxContextLen, int(rs.Factor*float64(s.OrigContextLen)))
	return nil
}

// ropeScaling is config.json's RoPE scaling: rope_parameters
// (transformers v5's spelling) or rope_scaling; nil without one.
func (hc *hfConfig) ropeScaling() *hfRopeScaling {
	if hc.RopeParameters != nil {
		return hc.RopeParameters
	}
	return hc.RopeScaling
}

// rope reads the RoPE settings into cfg, once its head dim is known:
// rope_theta (at the top, or in the scaling), the scaling (linear,
// yarn; llama3 and LongRoPE become tensors later: hfRopeFreqs,
// hfConfig.longRope), and Phi-3's partial_rotary_factor.
func (hc *hfConfig) rope(cfg *model.Config, arch string) error {
	rs := hc.ropeScaling()
	if hc.RopeTheta != nil {
		cfg.RopeTheta = *hc.RopeTheta
	} else if rs != nil && rs.RopeTheta != nil {
		cfg.RopeTheta = *rs.RopeTheta
	}
	if rs != nil {
		typ := rs.RopeType
		if typ == "" {
			typ = rs.Type
		}
		switch typ {
		case "", "default":
		case "linear":
			if rs.Factor != 0 && rs.Factor != 1 {
				cfg.RopeScaling = model.RopeScaling{Type: "linear", Factor: rs.Factor}
			}
		case "llama3":
			// Becomes rope_freqs.weight once the head dim is final.
		case "yarn":
			if err := rs.yarn(cfg); err != nil {
				return err
			}
		case "longrope", "su":
			if arch != "phi3" {
				return unsupported("RoPE scaling %q is Phi-3's, not %s's", typ, arch)
			}
			// Becomes the LongRoPE factors in hfConfig.longRope.
		default:
			return unsupported("RoPE scaling %q is not supported (supported: linear, llama3, yarn)", typ)
		}
	}
	if f := hc.PartialRotaryFactor; f != nil && *f != 1 {
		r := int(float64(cfg.HeadDim) * *f) // transformers' int(head_dim * partial_rotary_factor)
		switch {
		case !supported[arch].phi3:
			return unsupported("partial_rotary_factor %g (partial RoPE) is not supported for %s (only Phi3ForCausalLM)", *f, arch)
		case r <= 0, r%2 != 0, r > cfg.HeadDim:
			return invalid("partial_rotary_factor %g: RoPE over %d of %d dims", *f, r, cfg.HeadDim)
		}
		cfg.RopeDim = r
	}
	return nil
}

// hfRopeFreqs turns llama3 RoPE scaling into rope_freqs.weight, as
// convert_hf_to_gguf.py does: per rotary pair i (frequency
// f_i = theta^(-2i/D), wavelength 2π/f_i) the divisor is 1 above the
// high-frequency cutoff, factor below the low one, and
// 1/((1-s)/factor + s), s = (orig/wavelength - low)/(high - low), between.
func hfRopeFreqs(hc *hfConfig, cfg *model.Config, tensors map[string]*model.Tensor) error {
	rs := hc.ropeScaling()
	if rs == nil {
		return nil
	}
	if typ := rs.RopeType; typ != "llama3" && (typ != "" || rs.Type != "llama3") {
		return nil
	}
	factor, low, high, orig := rs.Factor, 1.0, 4.0, 8192.0
	if factor == 0 {
		factor = 8
	}
	if rs.LowFreqFactor != nil {
		low = *rs.LowFreqFactor
	}
	if rs.HighFreqFactor != nil {
		high = *rs.HighFreqFactor
	}
	if rs.OrigMaxPos != nil {
		orig = float64(*rs.OrigMaxPos)
	}
	if !(factor > 0) || !(low > 0) || !(high > low) || !(orig > 0) {
		return invalid("llama3 rope_scaling factor %g, low %g, high %g, original context %g", factor, low, high, orig)
	}
	lowWavelen, highWavelen := orig/low, orig/high
	d := cfg.RotaryDim()
	data := make([]byte, 4*(d/2))
	for i := range d / 2 {
		freq := 1 / math.Pow(cfg.RopeTheta, float64(2*i)/float64(d))
		wavelen := 2 * math.Pi / freq
		div := 1.0
		switch {
		case wavelen < highWavelen:
		case wavelen > lowWavelen:
			div = factor
		default:
			s := (orig/wavelen - low) / (high - low)
			div = 1 / ((1-s)/factor + s)
		}
		putF32(data[4*i:], float32(div))
	}
	tensors["rope_freqs.weight"] = &model.Tensor{Name: "rope_freqs.weight", Type: model.F32, Shape: []int{d / 2}, Data: data}
	return nil
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}
