package model

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// moeLike is qwenLike as a mixture of 4 experts, 2 per token, 64 wide,
// with a 96-wide shared expert.
func moeLike() Config {
	c := qwenLike()
	c.Arch, c.NumExperts, c.NumExpertsUsed, c.ExpertFFNDim, c.SharedExpertFFNDim, c.SharedExpertGate = "qwen2moe", 4, 2, 64, 96, true
	return c
}

// TestSplitExpertsIsAView checks that a stack of experts splits into
// matrices over the stack's own bytes, expert e being the e-th slab.
func TestSplitExpertsIsAView(t *testing.T) {
	for _, typ := range []DType{F32, Q8_0, Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			const in, out, n = 256, 3, 4
			vals := make([]float32, in*out*n)
			for i := range vals {
				vals[i] = float32(i%97) - 48
			}
			stack, err := NewTensor("blk.0.ffn_up_exps.weight", typ, []int{in, out, n}, vals)
			if err != nil {
				t.Fatal(err)
			}
			views, err := stack.SplitExperts(n)
			if err != nil {
				t.Fatal(err)
			}
			all, _ := stack.Float32s()
			for e, v := range views {
				if v.Name != fmt.Sprintf("blk.0.ffn_up_exps.weight#%d", e) || v.Rows() != out || v.Shape[0] != in {
					t.Errorf("view %d: %s %v", e, v.Name, v.Shape)
				}
				if &v.Data[0] != &stack.Data[e*len(stack.Data)/n] {
					t.Errorf("view %d is a copy", e)
				}
				got, _ := v.Float32s()
				for i, x := range got {
					if x != all[e*in*out+i] {
						t.Fatalf("view %d element %d = %g, want %g", e, i, x, all[e*in*out+i])
					}
				}
			}
		})
	}
}

func TestSplitExpertsRefuses(t *testing.T) {
	stack, err := NewTensor("s", F32, []int{32, 2, 3}, make([]float32, 32*2*3))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		t    *Tensor
		n    int
	}{
		{"wrong count", stack, 4},
		{"2-D", &Tensor{Name: "m", Type: F32, Shape: []int{32, 2}, Data: make([]byte, 256)}, 1},
		{"short data", &Tensor{Name: "m", Type: F32, Shape: []int{32, 2, 3}, Data: make([]byte, 700)}, 3},
	} {
		if _, err := tt.t.SplitExperts(tt.n); !errors.Is(err, ErrShape) {
			t.Errorf("%s: %v, want ErrShape", tt.name, err)
		}
	}
}

// TestValidateMoE checks that Validate refuses inconsistent mixtures of
// experts, naming what is wrong.
func TestValidateMoE(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(c *Config, w *Weights)
		want string
	}{
		{"more used than experts", func(c *Config, _ *Weights) { c.NumExpertsUsed = 5 }, "5 of 4 experts per token"},
		{"no expert width", func(c *Config, _ *Weights) { c.ExpertFFNDim = 0 }, "expert width 0"},
		{"expert settings on a dense model", func(c *Config, _ *Weights) { c.NumExperts = 0 }, "expert settings without experts"},
		{"an expert missing", func(_ *Config, w *Weights) { w.Layers[1].Experts = w.Layers[1].Experts[:3] }, "blk.1.ffn_*_exps.weight: 3 experts, config says 4"},
		{"a dense MLP too", func(_ *Config, w *Weights) { w.Layers[0].W1 = w.Layers[0].Experts[0].W1 }, "present in a mixture of experts"},
		{"wrong expert width", func(c *Config, _ *Weights) { c.ExpertFFNDim = 32 }, "ffn_gate_exps has shape [256 64], want [256 32]"},
		{"no shared gate", func(_ *Config, w *Weights) { w.Layers[0].SharedGate = nil }, "ffn_gate_inp_shexp.weight has 0 elements"},
		{"a shared expert the config lacks", func(c *Config, _ *Weights) { c.SharedExpertFFNDim, c.SharedExpertGate = 0, false }, "shared expert present but the config has none"},
		{"a gate on an ungated shared expert", func(c *Config, _ *Weights) { c.SharedExpertGate = false }, "present but the shared expert is not gated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := moeLike()
			w, err := Random(cfg, RandomTypes{Matrix: F32, Embed: F32}, 5)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(&cfg, w)
			err = w.Validate(cfg)
			if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want ErrShape saying %q", err, tt.want)
			}
		})
	}
}

// TestFromTensorsMoE reads experts stacked and one tensor each alike.
func TestFromTensorsMoE(t *testing.T) {
	cfg := moeLike()
	w, err := Random(cfg, RandomTypes{Matrix: Q8_0, Embed: Q8_0}, 6)
	if err != nil {
		t.Fatal(err)
	}
	ts := w.Tensors() // one tensor per expert
	got, err := FromTensors(cfg, ts)
	if err != nil {
		t.Fatal(err)
	}
	if got.Layers[1].Experts[3].W2 != w.Layers[1].Experts[3].W2 || got.Layers[0].Router != w.Layers[0].Router {
		t.Error("experts not passed through")
	}
	// Stacked: layer 0's up projections as one [Dim, Fe, E] tensor.
	var data []byte
	for _, x := range w.Layers[0].Experts {
		data = append(data, x.W3.Data...)
		delete(ts, x.W3.Name)
	}
	ts["blk.0.ffn_up_exps.weight"] = &Tensor{Name: "blk.0.ffn_up_exps.weight", Type: Q8_0, Shape: []int{cfg.Dim, cfg.ExpertFFNDim, cfg.NumExperts}, Data: data}
	got, err = FromTensors(cfg, ts)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Layers[0].Experts[2].W3.Data) != string(w.Layers[0].Experts[2].W3.Data) {
		t.Error("stacked expert 2 differs")
	}
}
