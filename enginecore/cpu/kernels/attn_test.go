package kernels

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestBlockKernels checks BlockScores and BlockAccum against float64 on
// every path, for 1 to 5 rows and head dims around the register widths,
// and that a row's bits do not depend on the rows computed with it.
func TestBlockKernels(t *testing.T) {
	paths(t, func(t *testing.T) {
		for _, d := range []int{8, 32, 64, 96, 128} {
			for _, rows := range []int{1, 2, 3, 5} {
				for _, n := range []int{1, 7, 16} {
					t.Run(fmt.Sprintf("d=%d/rows=%d/n=%d", d, rows, n), func(t *testing.T) {
						checkBlock(t, d, rows, n)
					})
				}
			}
		}
	})
}

func checkBlock(t *testing.T, d, rows, n int) {
	const stride = 3 * 64 // V rows of a block are Hkv·D apart
	q := randX(rows*d, uint64(d*rows))
	k := randX(d*BlockB, uint64(d+1))
	v := randX(BlockB*stride, uint64(d+2))
	out := make([]float32, rows*BlockB)
	BlockScores(out, q, k, 0.125)
	for r := range rows {
		for p := range BlockB {
			var s float64
			for i := range d {
				s += float64(q[r*d+i]) * float64(k[i*BlockB+p])
			}
			s *= 0.125
			if got := float64(out[r*BlockB+p]); math.Abs(got-s) > 1e-5*(math.Abs(s)+1) {
				t.Fatalf("score row %d pos %d = %v, want %v", r, p, got, s)
			}
		}
		one := make([]float32, BlockB)
		BlockScores(one, q[r*d:(r+1)*d], k, 0.125)
		if !slices.Equal(one, out[r*BlockB:(r+1)*BlockB]) {
			t.Fatalf("row %d scored alone differs: %v vs %v", r, one, out[r*BlockB:(r+1)*BlockB])
		}
	}

	acc := randX(rows*d, 9)
	want := make([]float64, len(acc))
	for i, x := range acc {
		want[i] = float64(x)
	}
	alone := slices.Clone(acc)
	BlockAccum(acc, d, out, n, v, stride)
	for r := range rows {
		for i := range d {
			w := want[r*d+i]
			for p := range n {
				w += float64(out[r*BlockB+p]) * float64(v[p*stride+i])
			}
			if got := float64(acc[r*d+i]); math.Abs(got-w) > 1e-5*(math.Abs(w)+1) {
				t.Fatalf("accum row %d lane %d = %v, want %v", r, i, got, w)
			}
		}
		row := alone[r*d : (r+1)*d]
		BlockAccum(row, d, out[r*BlockB:], n, v, stride)
		if !slices.Equal(row, acc[r*d:(r+1)*d]) {
			t.Fatalf("row %d accumulated alone differs", r)
		}
	}
}

// TestBlockSoftmax runs rows of random scores through several blocks of
// online softmax (full, partial and empty blocks, rising maxima) and
// checks the weights against a float64 softmax over all positions, and
// that a row's bits do not depend on the rows sharing the call.
func TestBlockSoftmax(t *testing.T) {
	paths(t, func(t *testing.T) {
		const d, numBlocks = 8, 5
		rowN := []int32{1, 16, 37, 80, 79, 0}
		rows := len(rowN)
		r0 := randX(rows*numBlocks*BlockB, 11)
		for i := range r0 {
			r0[i] *= float32(1 + i/BlockB) // later blocks hold larger scores: the max moves
		}
		r0[(3*numBlocks+3)*BlockB+5] = 40 // and beats the reference by more than the slack
		type state struct{ m, l, acc, w []float32 }
		run := func(sel []int) state {
			st := state{m: make([]float32, len(sel)), l: make([]float32, len(sel)*BlockB), acc: make([]float32, len(sel)*d)}
			n := make([]int32, len(sel))
			for i, r := range sel {
				st.m[i], n[i] = float32(math.Inf(-1)), rowN[r]
			}
			s := make([]float32, len(sel)*BlockB)
			for b := range numBlocks {
				for i, r := range sel {
					copy(s[i*BlockB:(i+1)*BlockB], r0[(r*numBlocks+b)*BlockB:])
				}
				BlockSoftmax(s, n, b*BlockB, st.m, st.l, st.acc, d)
				// acc accumulates the weights themselves in lane 0, so the
				// rescaling can be checked: acc[0] = Σ weights = Σ l.
				for i := range sel {
					for p := range BlockB {
						st.acc[i*d] += s[i*BlockB+p]
					}
				}
				st.w = append(st.w, s...)
			}
			return st
		}
		all := make([]int, rows)
		for r := range all {
			all[r] = r
		}
		got := run(all)
		for r, n := range rowN {
			var sum float64
			if n == 0 {
				continue
			}
			mx := math.Inf(-1)
			for p := range int(n) {
				mx = math.Max(mx, float64(r0[(r*numBlocks+p/BlockB)*BlockB+p%BlockB]))
			}
			for p := range int(n) {
				sum += math.Exp(float64(r0[(r*numBlocks+p/BlockB)*BlockB+p%BlockB]) - mx)
			}
			var l float64
			for _, v := range got.l[r*BlockB : (r+1)*BlockB] {
				l += float64(v)
			}
			if rel := math.Abs(l*math.Exp(float64(got.m[r])-mx)-sum) / sum; rel > 1e-5 {
				t.Errorf("row %d: denominator %v·e^(%v−max), want %v", r, l, got.m[r], sum)
			}
			if rel := math.Abs(float64(got.acc[r*d])-l) / l; rel > 1e-5 {
				t.Errorf("row %d: rescaled Σ weights %v, want the denominator %v", r, got.acc[r*d], l)
			}
			if m := float64(got.m[r]); m > mx || m < mx-SoftmaxSlack {
				t.Errorf("row %d: reference %v, want within %d below the max %v", r, got.m[r], SoftmaxSlack, mx)
			}
			alone := run([]int{r})
			for b := range numBlocks {
				for p := range BlockB {
					w, wa := got.w[(b*rows+r)*BlockB+p], alone.w[b*BlockB+p]
					if w != wa {
						t.Fatalf("row %d block %d lane %d: weight %v in the batch, %v alone", r, b, p, w, wa)
					}
					if b*BlockB+p >= int(n) && w != 0 {
						t.Fatalf("row %d: position %d past its %d has weight %v", r, b*BlockB+p, n, w)
					}
				}
			}
		}
	})
}

// BenchmarkBlockKernels times one 16-position block of scores and values
// for the rows of a tile (D = 64), in multiply-adds per second.
func BenchmarkBlockKernels(b *testing.B) {
	const d, stride = 64, 3 * 64
	for _, rows := range []int{1, 3, 48} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			q := randX(rows*d, 1)
			k := randX(d*BlockB, 2)
			v := randX(BlockB*stride, 3)
			s := make([]float32, rows*BlockB)
			acc := make([]float32, rows*d)
			for b.Loop() {
				BlockScores(s, q, k, 0.125)
				BlockAccum(acc, d, s, BlockB, v, stride)
			}
			b.ReportMetric(float64(2*rows*d*BlockB*b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// TestHalfToFloat checks the conversion on every path against the
// scalar one, over every float16 bit pattern.
func TestHalfToFloat(t *testing.T) {
	src := make([]uint16, 1<<16+5)
	for i := range src {
		src[i] = uint16(i)
	}
	want := make([]float32, len(src))
	halfToFloatGo(want, src)
	paths(t, func(t *testing.T) {
		got := make([]float32, len(src))
		HalfToFloat(got, src)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
				t.Fatalf("%#04x: %v, want %v", src[i], got[i], want[i])
			}
		}
	})
}

// TestBlockKernelsHalf checks that BlockScoresHalf and BlockAccumHalf
// give, bit for bit, what BlockScores and BlockAccum give on the block
// widened by HalfToFloat, on every path (direct or converting), for rows
// and head dims around the register widths and partial blocks.
func TestBlockKernelsHalf(t *testing.T) {
	const stride = 3*64 + 32 // V rows of a block are Hkv·D apart
	toHalf := func(x []float32) []uint16 {
		h := make([]uint16, len(x))
		for i, v := range x {
			h[i] = model.F32ToF16(v)
		}
		return h
	}
	paths(t, func(t *testing.T) {
		for _, d := range []int{8, 32, 64, 96, 128} {
			for _, rows := range []int{1, 2, 3, 5} {
				for _, n := range []int{1, 7, 16} {
					t.Run(fmt.Sprintf("d=%d/rows=%d/n=%d", d, rows, n), func(t *testing.T) {
						q := randX(rows*d, uint64(d*rows))
						k16 := toHalf(randX(d*BlockB, uint64(d+1)))
						v16 := toHalf(randX(BlockB*stride, uint64(d+2)))
						k, v := make([]float32, len(k16)), make([]float32, len(v16))
						HalfToFloat(k, k16)
						HalfToFloat(v, v16)

						want, got := make([]float32, rows*BlockB), make([]float32, rows*BlockB)
						BlockScores(want, q, k, 0.125)
						BlockScoresHalf(got, q, k16, 0.125)
						if !bitsEqual(got, want) {
							t.Fatalf("scores from float16 keys differ:\n%v\n%v", got, want)
						}
						accWant := randX(rows*d, 9)
						accGot := slices.Clone(accWant)
						BlockAccum(accWant, d, want, n, v, stride)
						BlockAccumHalf(accGot, d, want, n, v16, stride)
						if !bitsEqual(accGot, accWant) {
							t.Fatalf("accumulation from float16 values differs:\n%v\n%v", accGot, accWant)
						}
					})
				}
			}
		}
	})
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
