package kernels

import (
	"math"
	"testing"
)

// TestVec checks the vector operations against float64 math on lengths
// around the 16-lane width, on both paths.
func TestVec(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 15, 16, 17, 33, 64, 100} {
			a, b := randX(n+1, uint64(n))[:n], randX(n+1, uint64(n+50))[:n]
			var dot, mag float64
			for i := range a {
				dot += float64(a[i]) * float64(b[i])
				mag += math.Abs(float64(a[i]) * float64(b[i]))
			}
			if got := Dot(a, b); math.Abs(float64(got)-dot) > 1e-6*mag+1e-7 {
				t.Errorf("n=%d: Dot = %v, want %v", n, got, dot)
			}

			y := append([]float32(nil), b...)
			AddScaled(y, 0.75, a)
			for i := range y {
				if want := float64(b[i]) + 0.75*float64(a[i]); math.Abs(float64(y[i])-want) > 1e-6*(math.Abs(want)+1) {
					t.Fatalf("n=%d: AddScaled[%d] = %v, want %v", n, i, y[i], want)
				}
			}

			// Softmax numerators, including large negative shifts.
			e := make([]float32, n)
			for i := range e {
				e[i] = a[i] * 20
			}
			var m float32 = 3
			var sum float64
			want := make([]float64, n)
			for i, v := range e {
				want[i] = math.Exp(float64(v - m)) // the argument as the kernels round it
				sum += want[i]
			}
			gotSum := ExpShift(e, m)
			for i := range e {
				if math.Abs(float64(e[i])-want[i]) > 3e-7*want[i]+1e-37 {
					t.Fatalf("n=%d: exp(%v) = %v, want %v", n, a[i]*20-m, e[i], want[i])
				}
			}
			if math.Abs(float64(gotSum)-sum) > 1e-6*sum+1e-36 {
				t.Errorf("n=%d: ExpShift sum = %v, want %v", n, gotSum, sum)
			}

			g := make([]float32, n)
			for i := range g {
				g[i] = a[i] * 10
			}
			SiLUMul(g, b)
			for i := range g {
				x := float64(a[i]) * 10
				want := x / (1 + math.Exp(-x)) * float64(b[i])
				if math.Abs(float64(g[i])-want) > 1e-6*math.Abs(want)+1e-30 {
					t.Fatalf("n=%d: silu(%v)·%v = %v, want %v", n, x, b[i], g[i], want)
				}
			}

			// Soft-capping, over scores up to ±200 (c = 30: saturated ends).
			sc := make([]float32, n)
			for i := range sc {
				sc[i] = a[i] * 200
			}
			Softcap(sc, 30)
			for i := range sc {
				want := 30 * math.Tanh(float64(a[i])*200/30)
				if math.Abs(float64(sc[i])-want) > 3e-5 {
					t.Fatalf("n=%d: softcap(%v) = %v, want %v", n, a[i]*200, sc[i], want)
				}
			}

			// GELU, tanh form, against the formula as transformers writes it.
			for i := range g {
				g[i] = a[i] * 10
			}
			GELUMul(g, b)
			for i := range g {
				x := float64(a[i]) * 10
				want := 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) * float64(b[i])
				if math.Abs(float64(g[i])-want) > 2e-6*math.Abs(x*float64(b[i]))+1e-30 {
					t.Fatalf("n=%d: gelu(%v)·%v = %v, want %v", n, x, b[i], g[i], want)
				}
			}
		}
	})
}

// TestExpRange checks exp at the edges: exact 1 at 0, underflow below the
// smallest normal float32 (AVX-512 and Go reach 0), overflow above 1e38
// (+Inf, or 2.4e38 where AVX2 clamps).
func TestExpRange(t *testing.T) {
	paths(t, func(t *testing.T) {
		x := []float32{0, -200, 100, -87, 88, 1e-8, -1e-8}
		ExpShift(x, 0)
		for i, w := range []float64{1, 0, math.Inf(1), math.Exp(-87), math.Exp(88), 1, 1} {
			switch got := float64(x[i]); {
			case w == 0 && got <= 0x1p-126:
			case math.IsInf(w, 1) && got > 1e38:
			case math.Abs(got-w) <= 2e-7*w:
			default:
				t.Errorf("exp case %d = %v, want %v", i, got, w)
			}
		}
	})
}

// TestRows checks DotCols (keys stored [D][B]) and AddRows (values
// [B][stride]) as on a paged KV block, for head dims and block sizes
// around the register widths.
func TestRows(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, d := range []int{8, 16, 40, 64, 80, 128} {
			for _, n := range []int{0, 1, 5, 16, 17, 32} {
				stride := d + 24
				q := randX(d, uint64(d))
				kv := randX(max(n, 1)*stride, uint64(n+d))
				bs := n + 3 // block width ≥ n: odd n gets partial 16-column chunks
				if n%2 == 0 {
					bs = max(16, n)
				}
				kt := randX(d*bs, uint64(n+d+1)) // [D][bs]
				scores := make([]float32, n)
				m := DotCols(scores, q, kt, bs, 0.125)
				wantMax := math.Inf(-1)
				for p := range n {
					var s float64
					for i := range d {
						s += float64(q[i]) * float64(kt[i*bs+p])
					}
					s *= 0.125
					wantMax = math.Max(wantMax, float64(scores[p]))
					if math.Abs(float64(scores[p])-s) > 1e-5*(math.Abs(s)+1) {
						t.Fatalf("d=%d n=%d: score %d = %v, want %v", d, n, p, scores[p], s)
					}
				}
				if float64(m) != wantMax {
					t.Errorf("d=%d n=%d: max %v, want %v", d, n, m, wantMax)
				}
				y := randX(d, 3)
				want := make([]float64, d)
				for i := range want {
					want[i] = float64(y[i])
					for p := range n {
						want[i] += float64(q[p%d]) * float64(kv[p*stride+i])
					}
				}
				w := make([]float32, n)
				for p := range w {
					w[p] = q[p%d]
				}
				AddRows(y, w, kv, stride)
				for i := range y {
					if math.Abs(float64(y[i])-want[i]) > 1e-5*(math.Abs(want[i])+1) {
						t.Fatalf("d=%d n=%d: AddRows[%d] = %v, want %v", d, n, i, y[i], want[i])
					}
				}
			}
		}
	})
}
