package lora

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// Spec describes a random adapter for Random: tests, benchmarks and
// `tandem lora` make one for a model whose trained adapters cannot be
// downloaded here.
type Spec struct {
	Arch  string
	Alpha float32 // adapter.lora.alpha (0: none written)
	Rank  int
	// Shapes are the base tensors to adapt, by GGUF name: [In, Out]
	// (token_embd.weight: [Dim, Vocab]).
	Shapes map[string][2]int
	// Std is the standard deviation of lora_b's entries; lora_a's are
	// drawn with 1/√In, so B·(A·x) has about Std·√R per unit-RMS input.
	Std  float64
	Seed uint64
	Type model.DType // F32 or F16 (default F32)
}

// Random writes a GGUF LoRA adapter with normally distributed pairs.
func Random(w io.Writer, s Spec) error {
	if s.Rank < 1 {
		return fmt.Errorf("lora: rank %d", s.Rank)
	}
	typ := s.Type
	if typ != model.F16 {
		typ = model.F32
	}
	g := gguf.NewWriter()
	kvs := []struct {
		k string
		v any
	}{{"general.architecture", s.Arch}, {"general.type", "adapter"}, {"adapter.type", "lora"}}
	if s.Alpha != 0 {
		kvs = append(kvs, struct {
			k string
			v any
		}{"adapter.lora.alpha", s.Alpha})
	}
	for _, kv := range kvs {
		if err := g.AddKV(kv.k, kv.v); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x10a4))
	names := make([]string, 0, len(s.Shapes))
	for n := range s.Shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		in, out := s.Shapes[n][0], s.Shapes[n][1]
		aShape, bShape := []int{in, s.Rank}, []int{s.Rank, out}
		aStd := 1 / math.Sqrt(float64(in))
		if n == "token_embd.weight" { // flipped: lora_a [R, Vocab], lora_b [R, Dim]
			aShape, bShape, aStd = []int{s.Rank, out}, []int{s.Rank, in}, 1
		}
		for _, t := range []struct {
			suffix string
			shape  []int
			std    float64
		}{{".lora_a", aShape, aStd}, {".lora_b", bShape, s.Std}} {
			v := make([]float32, t.shape[0]*t.shape[1])
			for i := range v {
				v[i] = float32(rng.NormFloat64() * t.std)
			}
			tn, err := model.NewTensor(n+t.suffix, typ, t.shape, v)
			if err != nil {
				return err
			}
			if err := g.AddTensor(tn.Name, uint32(typ), []uint64{uint64(t.shape[0]), uint64(t.shape[1])}, tn.Data); err != nil {
				return err
			}
		}
	}
	_, err := g.WriteTo(w)
	return err
}
