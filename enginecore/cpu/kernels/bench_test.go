package kernels

import (
	"fmt"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// BenchmarkMatMul times one thread doing X [T][in] · Wᵀ (activation
// quantization included) for SmolLM2-135M's MLP shapes, per weight type
// and kernel level (avx512, avx2, go). K-quants need in % 256 == 0, so they skip in=576.
// GMAC/s counts T·in·out multiply-adds; GB/s the packed weight bytes.
func BenchmarkMatMul(b *testing.B) {
	saved := level
	defer func() { level = saved }()
	for l := saved; l >= levelGo; l-- {
		if runnable(l) != l {
			continue
		}
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
				for _, numTok := range []int{1, 32, 128} {
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

// BenchmarkMatMulDRAM times one thread's decode matmuls (one token) over
// matrices of the 1B shape's FFN (in 2048, out 8192) cycled so that the
// working set (~64 MB) is far beyond the caches, as at batch 1 each
// token reads every weight from DRAM once: GB/s of packed weights is
// then the kernel's share of the DRAM bandwidth (compare tandembench's
// measured bandwidth); Gweight/s compares layouts of different sizes.
func BenchmarkMatMulDRAM(b *testing.B) {
	const in, out = 2048, 8192
	for _, typ := range []model.DType{model.Q4_0, model.Q4_K, model.Q8_0, model.Q6_K, model.Q3_K, model.IQ4_NL, model.IQ4_XS, model.MXFP4} {
		b.Run(typ.String(), func(b *testing.B) {
			var ms []*Matrix
			var set int64
			for i := 0; set < 64<<20; i++ {
				m, err := Pack(randTensor(b, typ, out, in, uint64(i+1)))
				if err != nil {
					b.Fatal(err)
				}
				ms, set = append(ms, m), set+m.Bytes()
			}
			res := make([]float32, out)
			var a Activations
			a.Reset(randX(in, 2), 1, in)
			a.Quantize(0, 1)
			for b.Loop() {
				for _, m := range ms {
					m.MulGroups(res, &a, 0, m.NumGroups())
				}
			}
			b.ReportMetric(float64(set)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			b.ReportMetric(float64(len(ms)*in*out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gweight/s")
		})
	}
}
