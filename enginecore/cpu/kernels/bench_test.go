package kernels

import (
	"fmt"
	"testing"
)

// BenchmarkMatMul times one thread doing X [T][in] · Wᵀ (activation
// quantization included) for SmolLM2-135M's MLP shapes, per weight type
// and kernel level (avx512, avx2, go). K-quants need in % 256 == 0, so they skip in=576.
// GMAC/s counts T·in·out multiply-adds; GB/s the packed weight bytes.
func BenchmarkMatMul(b *testing.B) {
	saved := level
	defer func() { level = saved }()
	for l := saved; l >= levelGo; l-- {
		level = l
		path := l.String()
		for _, typ := range allTypes {
			for _, s := range []struct{ in, out int }{{576, 1536}, {1536, 576}} {
				if s.in%minIn(typ) != 0 {
					continue
				}
				w := randTensor(b, typ, s.out, s.in, 1)
				m, err := Pack(w)
				if err != nil {
					b.Fatal(err)
				}
				for _, numTok := range []int{1, 32} {
					if l == levelGo && numTok > 1 {
						continue // the pure-Go path is only a fallback
					}
					name := fmt.Sprintf("%s/%v/in=%d,out=%d/T=%d", path, typ, s.in, s.out, numTok)
					b.Run(name, func(b *testing.B) {
						x := randX(numTok*s.in, 2)
						out := make([]float32, numTok*s.out)
						var a Activations
						for b.Loop() {
							a.Reset(x, numTok, s.in)
							if m.Quantized() {
								a.Quantize(0, numTok)
							}
							m.MulGroups(out, &a, 0, m.NumGroups())
						}
						sec := b.Elapsed().Seconds()
						b.ReportMetric(float64(numTok*s.in*s.out)*float64(b.N)/sec/1e9, "GMAC/s")
						b.ReportMetric(float64(m.Bytes())*float64(b.N)/sec/1e9, "GB/s")
					})
				}
			}
		}
	}
}
