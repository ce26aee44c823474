package model

import (
	"fmt"
	"math"
)

// Classifier is a sequence-classification head over one pooled hidden
// state h ([Dim], after the final norm), as llama.cpp applies its cls.*
// tensors for rank pooling:
//
//	out = Out·tanh(Dense·h + DenseBias) + OutBias   ([NumClasses] logits)
//
// Dense is optional (a decoder reranker such as Qwen3-Reranker has only
// Out: its "yes" and "no" rows of the LM head). Logits are raw: the
// caller applies the activation (sigmoid for one class, softmax else).
type Classifier struct {
	NumClasses int
	Labels     []string  // [NumClasses] names ({arch}.classifier.output_labels); nil: LABEL_i
	Dense      []float32 // [Dim][Dim] row-major (out, in), cls.weight; nil: none
	DenseBias  []float32 // [Dim] cls.bias; nil: none
	Out        []float32 // [NumClasses][Dim] row-major, cls.output.weight
	OutBias    []float32 // [NumClasses] cls.output.bias; nil: none
}

// Apply is the head's logits for h ([Dim]): a new [NumClasses] slice.
func (c *Classifier) Apply(h []float32) []float32 {
	dim := len(h)
	x := h
	if c.Dense != nil {
		x = make([]float32, dim)
		for o := range dim {
			s := dot64(c.Dense[o*dim:(o+1)*dim], h)
			if c.DenseBias != nil {
				s += float64(c.DenseBias[o])
			}
			x[o] = float32(math.Tanh(s))
		}
	}
	out := make([]float32, c.NumClasses)
	for k := range out {
		s := dot64(c.Out[k*dim:(k+1)*dim], x)
		if c.OutBias != nil {
			s += float64(c.OutBias[k])
		}
		out[k] = float32(s)
	}
	return out
}

func dot64(a, b []float32) float64 {
	var s float64
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

// classifierFromTensors reads the head from cls.output.weight (ggml
// [Dim, NumClasses]) and the optional cls.output.bias, cls.weight and
// cls.bias, dequantized; nil when the file has no cls.output.weight.
func classifierFromTensors(cfg Config, ts map[string]*Tensor) (*Classifier, error) {
	out, ok := ts["cls.output.weight"]
	if !ok {
		return nil, nil
	}
	d := cfg.Dim
	read := func(name string, n int) ([]float32, error) {
		t, ok := ts[name]
		if !ok {
			return nil, nil
		}
		if t.NumElements() != n {
			return nil, fmt.Errorf("%w: %s has %d elements, want %d", ErrShape, name, t.NumElements(), n)
		}
		return t.Float32s()
	}
	if len(out.Shape) < 2 || out.Shape[0] != d || out.Shape[1] <= 0 {
		return nil, fmt.Errorf("%w: cls.output.weight has shape %v, want [%d, classes]", ErrShape, out.Shape, d)
	}
	c := &Classifier{NumClasses: out.Shape[1], Labels: cfg.ClassifierLabels}
	if c.Labels != nil && len(c.Labels) != c.NumClasses {
		return nil, fmt.Errorf("%w: %d classifier labels for %d classes", ErrShape, len(c.Labels), c.NumClasses)
	}
	var err error
	for _, t := range []struct {
		name string
		n    int
		dst  *[]float32
	}{
		{"cls.output.weight", c.NumClasses * d, &c.Out},
		{"cls.output.bias", c.NumClasses, &c.OutBias},
		{"cls.weight", d * d, &c.Dense},
		{"cls.bias", d, &c.DenseBias},
	} {
		if *t.dst, err = read(t.name, t.n); err != nil {
			return nil, err
		}
	}
	if c.DenseBias != nil && c.Dense == nil {
		return nil, fmt.Errorf("%w: cls.bias without cls.weight", ErrShape)
	}
	return c, nil
}
