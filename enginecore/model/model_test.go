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

// f32 dequantizes t for tests.
func f32(t testing.TB, x *Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDummyDeterministic(t *testing.T) {
	_, a := Dummy(0)
	_, b := Dummy(0)
	tensors := func(w *Weights) [][]float32 {
		out := [][]float32{f32(t, w.TokenEmbed), w.OutNorm, f32(t, w.Output)}
		for _, l := range w.Layers {
			out = append(out, l.AttnNorm, f32(t, l.Wq), f32(t, l.Wk), f32(t, l.Wv), f32(t, l.Wo),
				l.FFNNorm, f32(t, l.W1), f32(t, l.W3), f32(t, l.W2))
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
	out := f32(t, a.Output)
	got := []float32{f32(t, a.TokenEmbed)[0], f32(t, a.Layers[0].Wq)[0], f32(t, a.Layers[3].W2)[5], out[len(out)-1]}
	want := []float32{0.38350034, -0.082378544, -0.04824919, 0.50189084}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pinned weights (-want +got):\n%s", diff)
	}
	if a.TokenEmbed.Type != F32 || !slices.Equal(a.Layers[1].W2.Shape, []int{384, 128}) {
		t.Errorf("ffn_down is %v %v, want F32 [384 128]", a.Layers[1].W2.Type, a.Layers[1].W2.Shape)
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
		{"token_embd", f32(t, w.TokenEmbed), 0, 1},
		{"attn_q", f32(t, w.Layers[1].Wq), 0, 1 / math.Sqrt(128)},
		{"ffn_down", f32(t, w.Layers[2].W2), 0, 1 / math.Sqrt(384)},
		{"output", f32(t, w.Output), 0, 4 / math.Sqrt(128)},
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
	shortData := func(x *Tensor) *Tensor { c := *x; c.Data = c.Data[:len(c.Data)-4]; return &c }
	retype := func(x *Tensor, typ DType) *Tensor { c := *x; c.Type = typ; return &c }
	tests := []struct {
		name string
		edit func(*Config, *Weights)
		want error // nil: valid
	}{
		{"dummy", func(*Config, *Weights) {}, nil},
		{"tied", func(c *Config, w *Weights) { c.TiedEmbeddings, w.Output = true, w.TokenEmbed }, nil},
		{"short wq data", func(_ *Config, w *Weights) { w.Layers[2].Wq = shortData(w.Layers[2].Wq) }, ErrShape},
		{"transposed wo", func(_ *Config, w *Weights) {
			c := *w.Layers[0].W1
			c.Shape = []int{384, 128}
			w.Layers[0].W1 = &c
		}, ErrShape},
		{"unsupported type", func(_ *Config, w *Weights) { w.Layers[1].Wk = retype(w.Layers[1].Wk, 16) }, ErrUnsupportedType}, // IQ2_XXS
		{"missing layer", func(_ *Config, w *Weights) { w.Layers = w.Layers[:3] }, ErrShape},
		{"missing bias", func(c *Config, _ *Weights) { c.QKVBias = true }, ErrShape},
		{"heads not a multiple of kv heads", func(c *Config, _ *Weights) { c.NumKVHeads = 3 }, ErrShape},
		{"odd head dim", func(c *Config, _ *Weights) { c.HeadDim = 31 }, ErrShape},
		{"zero vocab", func(c *Config, _ *Weights) { c.VocabSize = 0 }, ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, w := Dummy(0)
			tt.edit(&cfg, w)
			err := w.Validate(cfg)
			if (tt.want == nil) != (err == nil) || (err != nil && !errors.Is(err, tt.want)) {
				t.Errorf("Validate = %v, want %v", err, tt.want)
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
