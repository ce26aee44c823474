package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// ropeFlags are the RoPE scaling overrides of vllm serve (--rope-scaling
// as JSON) and llama-server (--rope-scaling as a word, --rope-scale,
// --yarn-orig-ctx), which Qwen3's model cards give to serve 128k tokens
// with YaRN.
type ropeFlags struct {
	scaling string  // --rope-scaling: none, linear, yarn, or vLLM's JSON object
	scale   float64 // --rope-scale: the factor
	origCtx int     // --yarn-orig-ctx: the original context, tokens
}

func (f *ropeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.scaling, "rope-scaling", "", "RoPE scaling in place of the model's: `none|linear|yarn` (llama-server's, with --rope-scale and --yarn-orig-ctx) "+
		`or vLLM's JSON, e.g. '{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}'; the context served extends to factor × the original (docs/architecture.md#model-families)`)
	fs.Float64Var(&f.scale, "rope-scale", 0, "RoPE scaling `factor` of --rope-scaling linear or yarn (llama-server's)")
	fs.IntVar(&f.origCtx, "yarn-orig-ctx", 0, "YaRN's original context in `tokens` (llama-server's; default: the model's)")
}

// options is the loader option the flags ask for; none when
// --rope-scaling is not given.
func (f *ropeFlags) options() ([]loader.OpenOption, error) {
	s, err := parseRopeScaling(f.scaling, f.scale, f.origCtx)
	if err != nil || s == nil {
		return nil, err
	}
	return []loader.OpenOption{loader.WithRopeScaling(*s)}, nil
}

// parseRopeScaling reads --rope-scaling (with --rope-scale and
// --yarn-orig-ctx for its word forms): nil when it is empty.
func parseRopeScaling(spec string, scale float64, origCtx int) (*model.RopeScaling, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		if scale != 0 || origCtx != 0 {
			return nil, fmt.Errorf("--rope-scale and --yarn-orig-ctx need --rope-scaling linear or yarn")
		}
		return nil, nil
	}
	s := model.RopeScaling{Type: spec, Factor: scale, OrigContextLen: origCtx}
	if strings.HasPrefix(spec, "{") {
		var js struct {
			RopeType   string   `json:"rope_type"`
			Type       string   `json:"type"`
			Factor     float64  `json:"factor"`
			OrigMaxPos int      `json:"original_max_position_embeddings"`
			BetaFast   *float64 `json:"beta_fast"`
			BetaSlow   *float64 `json:"beta_slow"`
		}
		dec := json.NewDecoder(strings.NewReader(spec))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&js); err != nil {
			return nil, fmt.Errorf("--rope-scaling %s: %w (keys: rope_type, factor, original_max_position_embeddings, beta_fast, beta_slow)", spec, err)
		}
		s = model.RopeScaling{Type: js.RopeType, Factor: js.Factor, OrigContextLen: js.OrigMaxPos}
		if s.Type == "" {
			s.Type = js.Type
		}
		if js.BetaFast != nil {
			s.BetaFast = *js.BetaFast
		}
		if js.BetaSlow != nil {
			s.BetaSlow = *js.BetaSlow
		}
	}
	switch {
	case s.Type == "none" || s.Type == "default":
		return &model.RopeScaling{}, nil
	case s.Type != "linear" && s.Type != "yarn":
		return nil, fmt.Errorf("--rope-scaling %q: want none, linear or yarn", s.Type)
	case !(s.Factor > 1):
		return nil, fmt.Errorf("--rope-scaling %s needs a factor above 1 (--rope-scale, or the JSON's factor), got %g", s.Type, s.Factor)
	case s.OrigContextLen < 0 || s.Type == "linear" && s.OrigContextLen != 0:
		return nil, fmt.Errorf("--yarn-orig-ctx %d: want a positive context, with yarn", s.OrigContextLen)
	}
	return &s, nil
}
