package model

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDummyShape(t *testing.T) {
	cfg, w := Dummy(0)
	want := Config{
		Name: "dummy", Arch: "llama", VocabSize: 320, Dim: 128, NumLayers: 4, NumHeads: 4,
		NumKVHeads: 2, HeadDim: 32, FFNDim: 384, RopeTheta: 10000, NormEps: 1e-5,
		MaxContextLen: DefaultDummyContextLen, BOSTokenID: 256, EOSTokenIDs: []int32{257, 259},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("Dummy config (-want +got):\n%s", diff)
	}
	if err := w.Validate(cfg); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if cfg, _ := Dummy(512); cfg.MaxContextLen != 512 {
		t.Errorf("Dummy(512).MaxContextLen = %d", cfg.MaxContextLen)
	}
}

func TestDummyDeterministic(t *testing.T) {
	_, a := Dummy(0)
	_, b := Dummy(0)
	tensors := func(w *Weights) [][]float32 {
		out := [][]float32{w.TokenEmbed, w.OutNorm, w.Output}
		for _, l := range w.Layers {
			out = append(out, l.AttnNorm, l.Wq, l.Wk, l.Wv, l.Wo, l.FFNNorm, l.W1, l.W3, l.W2)
		}
		return out
	}
	ta, tb := tensors(a), tensors(b)
	for i := range ta {
		if !slices.Equal(ta[i], tb[i]) {
			t.Fatalf("two Dummy calls gave different tensor %d", i)
		}
	}
	// Pin a few values so a change of seed or draw order is noticed.
	got := []float32{a.TokenEmbed[0], a.Layers[0].Wq[0], a.Layers[3].W2[5], a.Output[len(a.Output)-1]}
	want := []float32{0.38350034, -0.082378544, -0.04824919, 0.50189084}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pinned weights (-want +got):\n%s", diff)
	}
}

// TestDummyScale checks the documented standard deviations.
func TestDummyScale(t *testing.T) {
	_, w := Dummy(0)
	std := func(x []float32, mean float64) float64 {
		var ss float64
		for _, v := range x {
			ss += (float64(v) - mean) * (float64(v) - mean)
		}
		return math.Sqrt(ss / float64(len(x)))
	}
	tests := []struct {
		name       string
		x          []float32
		mean, want float64
	}{
		{"token_embd", w.TokenEmbed, 0, 1},
		{"attn_q", w.Layers[1].Wq, 0, 1 / math.Sqrt(128)},
		{"ffn_down", w.Layers[2].W2, 0, 1 / math.Sqrt(384)},
		{"output", w.Output, 0, 4 / math.Sqrt(128)},
		{"attn_norm", w.Layers[0].AttnNorm, 1, 0.02},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := std(tt.x, tt.mean); math.Abs(got-tt.want) > 0.15*tt.want {
				t.Errorf("std = %.4f, want ≈ %.4f", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config, *Weights)
		ok   bool
	}{
		{"dummy", func(*Config, *Weights) {}, true},
		{"tied", func(c *Config, w *Weights) { c.TiedEmbeddings, w.Output = true, w.TokenEmbed }, true},
		{"short wq", func(_ *Config, w *Weights) { w.Layers[2].Wq = w.Layers[2].Wq[1:] }, false},
		{"missing layer", func(_ *Config, w *Weights) { w.Layers = w.Layers[:3] }, false},
		{"heads not a multiple of kv heads", func(c *Config, _ *Weights) { c.NumKVHeads = 3 }, false},
		{"odd head dim", func(c *Config, _ *Weights) { c.HeadDim = 31 }, false},
		{"zero vocab", func(c *Config, _ *Weights) { c.VocabSize = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := Dummy(0)
			tt.edit(&cfg, w)
			err := w.Validate(cfg)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrShape)) {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestDummyTokenName(t *testing.T) {
	tests := []struct {
		id   int32
		want string
	}{
		{0, "\x00"},
		{'A', "A"},
		{0xff, "\xff"},
		{256, "<|begin_of_text|>"},
		{257, "<|end_of_text|>"},
		{258, "<|im_start|>"},
		{259, "<|im_end|>"},
		{260, "<|reserved_0|>"},
		{319, "<|reserved_59|>"},
		{320, ""},
		{-1, ""},
	}
	for _, tt := range tests {
		if got := DummyTokenName(tt.id); got != tt.want {
			t.Errorf("DummyTokenName(%d) = %q, want %q", tt.id, got, tt.want)
		}
	}
}
