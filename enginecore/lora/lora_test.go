package lora_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// base is a 2-layer model: dim 8, Q 8, KV 4, FFN 16, vocab 32, untied.
var shapes = map[string][2]int{
	"blk.0.attn_q.weight": {8, 8}, "blk.0.attn_k.weight": {8, 4}, "blk.0.attn_v.weight": {8, 4},
	"blk.0.attn_output.weight": {8, 8}, "blk.0.ffn_gate.weight": {8, 16}, "blk.0.ffn_up.weight": {8, 16},
	"blk.0.ffn_down.weight": {16, 8}, "blk.1.attn_q.weight": {8, 8}, "blk.1.attn_k.weight": {8, 4},
	"blk.1.attn_v.weight": {8, 4}, "output.weight": {8, 32}, "token_embd.weight": {8, 32},
}

func base(maxRank int) lora.Base {
	return lora.Base{Arch: "llama", NumLayers: 2, MaxRank: maxRank, Shape: func(n string) (int, int, bool) {
		s, ok := shapes[n]
		return s[0], s[1], ok
	}}
}

func write(t *testing.T, s lora.Spec) string {
	t.Helper()
	var b bytes.Buffer
	if err := lora.Random(&b, s); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a.gguf")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPlacesEveryPair(t *testing.T) {
	for _, typ := range []model.DType{model.F32, model.F16} {
		p := write(t, lora.Spec{Arch: "llama", Alpha: 8, Rank: 4, Shapes: shapes, Std: 0.5, Seed: 1, Type: typ})
		a, err := lora.Load(p, base(0))
		if err != nil {
			t.Fatal(err)
		}
		if a.Alpha != 8 || len(a.Tensor) != len(shapes) {
			t.Fatalf("alpha %v, %d tensors, want 8 and %d", a.Alpha, len(a.Tensor), len(shapes))
		}
		q := a.Layers[0][lora.Q]
		if q == nil || q.R != 4 || q.In != 8 || q.Out != 8 || len(q.A) != 32 || len(q.Bt) != 32 {
			t.Fatalf("blk.0.attn_q: %+v", q)
		}
		if a.Layers[1][lora.Gate] != nil || a.Layers[1][lora.K] == nil || a.Output == nil || a.Output.Out != 32 {
			t.Errorf("layer 1 gate %v, k %v, output %v", a.Layers[1][lora.Gate], a.Layers[1][lora.K], a.Output)
		}
		if e := a.Embed; e == nil || e.In != 32 || e.Out != 8 || len(e.A) != 32*4 {
			t.Errorf("token_embd: %+v", e)
		}
		if got := a.Scale(q, 0.5); got != 0.5*8/4 {
			t.Errorf("scale %v, want 1", got)
		}
	}
}

// TestTransposesB checks Bt against lora_b read back from the file.
func TestTransposesB(t *testing.T) {
	p := write(t, lora.Spec{Arch: "llama", Rank: 3, Shapes: map[string][2]int{"blk.0.attn_k.weight": {8, 4}}, Std: 1, Seed: 2})
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("blk.0.attn_k.weight.lora_b")
	raw, _ := f.TensorData(ti)
	b := make([]float32, 12) // [Out=4][R=3]
	if err := model.Dequantize(model.F32, raw, b); err != nil {
		t.Fatal(err)
	}
	a, err := lora.Load(p, base(0))
	if err != nil {
		t.Fatal(err)
	}
	k := a.Layers[0][lora.K]
	for o := range 4 {
		for r := range 3 {
			if k.Bt[r*4+o] != b[o*3+r] {
				t.Fatalf("Bt[%d][%d] = %v, lora_b[%d][%d] = %v", r, o, k.Bt[r*4+o], o, r, b[o*3+r])
			}
		}
	}
	if a.Scale(k, 0.5) != 0.5 {
		t.Errorf("no alpha: the scale is the user's, got %v", a.Scale(k, 0.5))
	}
}

func TestLoadRefuses(t *testing.T) {
	kv := func(pairs ...any) func(*gguf.Writer) {
		return func(w *gguf.Writer) {
			for i := 0; i < len(pairs); i += 2 {
				_ = w.AddKV(pairs[i].(string), pairs[i+1])
			}
		}
	}
	adapterKV := kv("general.architecture", "llama", "general.type", "adapter", "adapter.type", "lora")
	tensor := func(name string, shape ...int) func(*gguf.Writer) {
		return func(w *gguf.Writer) {
			n := shape[0] * shape[1]
			_ = w.AddTensor(name, uint32(model.F32), []uint64{uint64(shape[0]), uint64(shape[1])}, make([]byte, 4*n))
		}
	}
	tests := []struct {
		name    string
		build   []func(*gguf.Writer)
		maxRank int
		want    error
	}{
		{"a model, not an adapter", []func(*gguf.Writer){kv("general.architecture", "llama"), tensor("blk.0.attn_q.weight", 8, 8)}, 0, lora.ErrFormat},
		{"another adapter type", []func(*gguf.Writer){kv("general.architecture", "llama", "general.type", "adapter", "adapter.type", "control_vector")}, 0, lora.ErrFormat},
		{"another architecture", []func(*gguf.Writer){kv("general.architecture", "qwen2", "general.type", "adapter", "adapter.type", "lora"),
			tensor("blk.0.attn_q.weight.lora_a", 8, 2), tensor("blk.0.attn_q.weight.lora_b", 2, 8)}, 0, lora.ErrMismatch},
		{"no tensors", []func(*gguf.Writer){adapterKV}, 0, lora.ErrFormat},
		{"lora_b missing", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight.lora_a", 8, 2)}, 0, lora.ErrFormat},
		{"an unexpected suffix", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight", 8, 8)}, 0, lora.ErrFormat},
		{"a tensor the model has not", []func(*gguf.Writer){adapterKV, tensor("blk.7.attn_q.weight.lora_a", 8, 2), tensor("blk.7.attn_q.weight.lora_b", 2, 8)}, 0, lora.ErrMismatch},
		{"lora_a of another width", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight.lora_a", 16, 2), tensor("blk.0.attn_q.weight.lora_b", 2, 8)}, 0, lora.ErrMismatch},
		{"lora_a not transposed", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight.lora_a", 8, 2), tensor("blk.0.attn_q.weight.lora_b", 8, 2)}, 0, lora.ErrMismatch},
		{"ranks that differ", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight.lora_a", 8, 2), tensor("blk.0.attn_q.weight.lora_b", 3, 8)}, 0, lora.ErrMismatch},
		{"rank above --max-lora-rank", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_q.weight.lora_a", 8, 4), tensor("blk.0.attn_q.weight.lora_b", 4, 8)}, 2, lora.ErrMismatch},
		{"a norm is ignored, the rest loads", []func(*gguf.Writer){adapterKV, tensor("blk.0.attn_norm.weight", 8, 1),
			tensor("blk.0.attn_q.weight.lora_a", 8, 2), tensor("blk.0.attn_q.weight.lora_b", 2, 8)}, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := gguf.NewWriter()
			for _, b := range tc.build {
				b(w)
			}
			var buf bytes.Buffer
			if _, err := w.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "x.gguf")
			if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := lora.Load(p, base(tc.maxRank))
			if !errors.Is(err, tc.want) && (tc.want != nil || err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && !bytes.Contains([]byte(err.Error()), []byte(p)) {
				t.Errorf("the error does not name the file: %v", err)
			}
		})
	}
	if _, err := lora.Load(filepath.Join(t.TempDir(), "none.gguf"), base(0)); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestFusedQKV splits attn_qkv's lora_b rows into Q, K and V.
func TestFusedQKV(t *testing.T) {
	p := write(t, lora.Spec{Arch: "llama", Rank: 2, Shapes: map[string][2]int{"blk.1.attn_qkv.weight": {8, 16}}, Std: 1, Seed: 3})
	a, err := lora.Load(p, base(0))
	if err != nil {
		t.Fatal(err)
	}
	q, k, v := a.Layers[1][lora.Q], a.Layers[1][lora.K], a.Layers[1][lora.V]
	if q.Out != 8 || k.Out != 4 || v.Out != 4 || &q.A[0] != &v.A[0] {
		t.Fatalf("outs %d %d %d", q.Out, k.Out, v.Out)
	}
	f, _ := gguf.Open(p)
	defer f.Close()
	ti, _ := f.Tensor("blk.1.attn_qkv.weight.lora_b")
	raw, _ := f.TensorData(ti)
	b := make([]float32, 32) // [16][2]
	_ = model.Dequantize(model.F32, raw, b)
	if k.Bt[0] != b[8*2] || v.Bt[3] != b[(12+3)*2] || q.Bt[1*8+7] != b[7*2+1] {
		t.Errorf("rows misplaced: K[0][0] %v vs %v, V[0][3] %v vs %v", k.Bt[0], b[16], v.Bt[3], b[30])
	}
}
