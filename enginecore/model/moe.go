package model

import (
	"errors"
	"fmt"
)

// validateMoE checks the mixture-of-experts sizes: all zero for a dense
// model, else 1 ≤ K ≤ E and Fe > 0.
func (c *Config) validateMoE() error {
	switch {
	case c.NumExperts == 0 && (c.NumExpertsUsed != 0 || c.ExpertFFNDim != 0 || c.SharedExpertFFNDim != 0 ||
		c.ExpertWeightsNorm || c.SharedExpertGate || c.MoELayers != nil || c.ExpertBiases):
		return fmt.Errorf("%w: expert settings without experts in %+v", ErrShape, *c)
	case c.NumExperts == 0:
		return nil
	case c.NumExperts < 0, c.NumExpertsUsed <= 0, c.NumExpertsUsed > c.NumExperts:
		return fmt.Errorf("%w: %d of %d experts per token", ErrShape, c.NumExpertsUsed, c.NumExperts)
	case c.MoELayers != nil && len(c.MoELayers) != c.NumLayers:
		return fmt.Errorf("%w: %d mixture-of-experts flags for %d layers", ErrShape, len(c.MoELayers), c.NumLayers)
	case c.ExpertFFNDim <= 0, c.SharedExpertFFNDim < 0, c.SharedExpertGate && c.SharedExpertFFNDim == 0:
		return fmt.Errorf("%w: expert width %d, shared expert width %d (gated %v)", ErrShape, c.ExpertFFNDim, c.SharedExpertFFNDim, c.SharedExpertGate)
	}
	return nil
}

// validateMoE checks layer l's router and experts (p is "blk.N.").
func (l *Layer) validateMoE(cfg Config, p string) error {
	d, e, fe, fs := cfg.Dim, cfg.NumExperts, cfg.ExpertFFNDim, cfg.SharedExpertFFNDim
	if l.W1 != nil || l.W3 != nil || l.W2 != nil {
		return fmt.Errorf("%w: %sffn_{gate,up,down}.weight present in a mixture of experts", ErrShape, p)
	}
	if len(l.Experts) != e {
		return fmt.Errorf("%w: %sffn_*_exps.weight: %d experts, config says %d", ErrShape, p, len(l.Experts), e)
	}
	errs := []error{checkMatrix(p+"ffn_gate_inp.weight", l.Router, d, e)}
	if l.ExpertBias != nil && len(l.ExpertBias) != e {
		errs = append(errs, fmt.Errorf("%w: %sexp_probs_b.bias has %d elements, want %d", ErrShape, p, len(l.ExpertBias), e))
	}
	if b := cfg.ExpertBiases; b != (l.RouterBias != nil) || b && len(l.RouterBias) != e {
		errs = append(errs, fmt.Errorf("%w: %sffn_gate_inp.bias has %d elements, want %d (biases %v)", ErrShape, p, len(l.RouterBias), e, b))
	}
	for i, x := range l.Experts {
		errs = append(errs, x.check(fmt.Sprintf("%sexpert %d ", p, i), "_exps", d, fe))
		if b := cfg.ExpertBiases; b != (x.B1 != nil) || b != (x.B3 != nil) || b != (x.B2 != nil) ||
			b && (len(x.B1) != fe || len(x.B3) != fe || len(x.B2) != d) {
			errs = append(errs, fmt.Errorf("%w: %sexpert %d's biases have %d, %d and %d elements, want %d, %d and %d (biases %v)",
				ErrShape, p, i, len(x.B1), len(x.B3), len(x.B2), fe, fe, d, b))
		}
	}
	switch {
	case fs > 0:
		errs = append(errs, l.Shared.check(p, "_shexp", d, fs))
	case l.Shared.W1 != nil || l.Shared.W3 != nil || l.Shared.W2 != nil:
		errs = append(errs, fmt.Errorf("%w: %sshared expert present but the config has none", ErrShape, p))
	}
	switch gated := cfg.SharedExpertGate; {
	case gated && len(l.SharedGate) != d:
		errs = append(errs, fmt.Errorf("%w: %sffn_gate_inp_shexp.weight has %d elements, want %d", ErrShape, p, len(l.SharedGate), d))
	case !gated && l.SharedGate != nil:
		errs = append(errs, fmt.Errorf("%w: %sffn_gate_inp_shexp.weight present but the shared expert is not gated", ErrShape, p))
	}
	return errors.Join(errs...)
}

// check checks an expert f wide; p and suffix name its tensors as
// p+"ffn_gate"+suffix.
func (x Expert) check(p, suffix string, d, f int) error {
	return errors.Join(
		checkMatrix(p+"ffn_gate"+suffix, x.W1, d, f),
		checkMatrix(p+"ffn_up"+suffix, x.W3, d, f),
		checkMatrix(p+"ffn_down"+suffix, x.W2, f, d),
	)
}

// SplitExperts views a stack of n matrices (ggml Shape [in, out, n], as
// llama.cpp stores a layer's experts in ffn_*_exps) as n [out][in]
// tensors over its own Data, named name#i; nothing is copied.
func (t *Tensor) SplitExperts(n int) ([]*Tensor, error) {
	if n <= 0 || len(t.Shape) < 3 || !shapeIs(t.Shape, t.Shape[0], t.Shape[1], n) {
		return nil, fmt.Errorf("%w: %s has shape %v, want [in, out, %d]", ErrShape, t.Name, t.Shape, n)
	}
	in, out := t.Shape[0], t.Shape[1]
	if !t.Type.Supported() {
		return nil, fmt.Errorf("%w: %s has type %v", ErrUnsupportedType, t.Name, t.Type)
	}
	if in%t.Type.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: %s rows of %d elements are not a multiple of the %v block", ErrShape, t.Name, in, t.Type)
	}
	size := t.Type.RowBytes(in) * out
	if len(t.Data) != size*n {
		return nil, fmt.Errorf("%w: %s (%v %v) has %d bytes of data, want %d", ErrShape, t.Name, t.Type, t.Shape, len(t.Data), size*n)
	}
	views := make([]*Tensor, n)
	for i := range views {
		views[i] = &Tensor{Name: fmt.Sprintf("%s#%d", t.Name, i), Type: t.Type, Shape: []int{in, out},
			Data: t.Data[i*size : (i+1)*size : (i+1)*size]}
	}
	return views, nil
}

// moeFromTensors fills l's router and experts from the tensors of layer
// p ("blk.N."): ffn_gate_inp.weight (and, when present, the selection
// bias exp_probs_b.bias) and either the stacked
// ffn_{gate,up,down}_exps.weight (GGUF) or one ffn_{gate,up,down}.E.weight
// per expert (Hugging Face checkpoints; llama.cpp's older Mixtral names);
// the shared expert's ffn_{gate,up,down}_shexp.weight when cfg has one,
// and its gate's ffn_gate_inp_shexp.weight when that is gated. need and vec are
// FromTensors' lookups.
func (l *Layer) moeFromTensors(cfg Config, ts map[string]*Tensor, p string,
	need func(string) *Tensor, vec func(string, int) []float32) error {
	e := cfg.NumExperts
	l.Router = need(p + "ffn_gate_inp.weight")
	if _, ok := ts[p+"exp_probs_b.bias"]; ok {
		l.ExpertBias = vec(p+"exp_probs_b.bias", e)
	}
	l.Experts = make([]Expert, e)
	var errs []error
	for _, part := range []struct {
		name string
		set  func(x *Expert, t *Tensor)
	}{
		{"ffn_gate", func(x *Expert, t *Tensor) { x.W1 = t }},
		{"ffn_up", func(x *Expert, t *Tensor) { x.W3 = t }},
		{"ffn_down", func(x *Expert, t *Tensor) { x.W2 = t }},
	} {
		if stack, ok := ts[p+part.name+"_exps.weight"]; ok {
			views, err := stack.SplitExperts(e)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for i, v := range views {
				part.set(&l.Experts[i], v)
			}
			continue
		}
		for i := range l.Experts {
			part.set(&l.Experts[i], need(fmt.Sprintf("%s%s.%d.weight", p, part.name, i)))
		}
	}
	if cfg.ExpertBiases {
		l.RouterBias = vec(p+"ffn_gate_inp.bias", e)
		errs = append(errs, l.expertBiases(ts, p, e, cfg.ExpertFFNDim, cfg.Dim, need))
	}
	if cfg.SharedExpertFFNDim > 0 {
		l.Shared = Expert{W1: need(p + "ffn_gate_shexp.weight"), W3: need(p + "ffn_up_shexp.weight"), W2: need(p + "ffn_down_shexp.weight")}
	}
	if cfg.SharedExpertGate {
		l.SharedGate = vec(p+"ffn_gate_inp_shexp.weight", cfg.Dim)
	}
	return errors.Join(errs...)
}

// expertBiases fills the experts' biases from p's stacked
// ffn_{gate,up,down}_exps.bias ([fe, E], [fe, E], [d, E]; F32, F16 or
// BF16), each expert's a view of one float32 copy.
func (l *Layer) expertBiases(ts map[string]*Tensor, p string, e, fe, d int, need func(string) *Tensor) error {
	var errs []error
	for _, part := range []struct {
		name string
		n    int
		set  func(x *Expert, b []float32)
	}{
		{"ffn_gate_exps.bias", fe, func(x *Expert, b []float32) { x.B1 = b }},
		{"ffn_up_exps.bias", fe, func(x *Expert, b []float32) { x.B3 = b }},
		{"ffn_down_exps.bias", d, func(x *Expert, b []float32) { x.B2 = b }},
	} {
		t := need(p + part.name)
		if t == nil {
			continue
		}
		if !shapeIs(t.Shape, part.n, e) {
			errs = append(errs, fmt.Errorf("%w: %s%s has shape %v, want [%d %d]", ErrShape, p, part.name, t.Shape, part.n, e))
			continue
		}
		flat := *t
		flat.Shape = []int{part.n * e}
		all, err := vector(p+part.name, &flat, part.n*e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range l.Experts {
			part.set(&l.Experts[i], all[i*part.n:(i+1)*part.n:(i+1)*part.n])
		}
	}
	return errors.Join(errs...)
}
