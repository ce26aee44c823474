package cpu

import (
	"math"
)

// Kernels. Every output element is a sequential sum in index order, so
// the result of an element never depends on how rows are grouped or split
// between workers (threads=1 and threads=N agree bit for bit).
// TODO(cpu): SIMD fast paths.

// matmulOp is out[T][n] = x[T][in] · W[n][in]ᵀ.
type matmulOp struct {
	out    []float32 // [T][n]
	x      []float32 // [T][in]
	w      []float32 // [n][in]
	numTok int       // T
	in, n  int
}

// matmulJob runs up to three matmuls (e.g. Q, K, V) in one dispatch; each
// worker takes a contiguous range of every op's output rows.
type matmulJob struct {
	ops   [3]matmulOp
	numOp int
}

func (j *matmulJob) run(w, numWorkers int) {
	for i := range j.numOp {
		op := &j.ops[i]
		lo, hi := split(op.n, w, numWorkers)
		matmulRows(op, lo, hi)
	}
}

// split returns worker w's share [lo, hi) of n rows, in multiples of 4.
func split(n, w, numWorkers int) (lo, hi int) {
	groups := (n + 3) / 4
	per := (groups + numWorkers - 1) / numWorkers
	lo, hi = min(w*per*4, n), min((w+1)*per*4, n)
	return lo, hi
}

// matmulRows computes output rows [lo, hi) for every token, four rows at a
// time so each x element loaded feeds four accumulators. (A 2-token × 4-row
// tile measured slower in scalar Go: register pressure.)
func matmulRows(op *matmulOp, lo, hi int) {
	in, n := op.in, op.n
	for t := range op.numTok {
		x := op.x[t*in : (t+1)*in]
		out := op.out[t*n : (t+1)*n]
		j := lo
		for ; j+4 <= hi; j += 4 {
			w0 := op.w[j*in : (j+1)*in]
			w1 := op.w[(j+1)*in : (j+2)*in]
			w2 := op.w[(j+2)*in : (j+3)*in]
			w3 := op.w[(j+3)*in : (j+4)*in]
			var s0, s1, s2, s3 float32
			for i, xi := range x {
				s0 += w0[i] * xi
				s1 += w1[i] * xi
				s2 += w2[i] * xi
				s3 += w3[i] * xi
			}
			out[j], out[j+1], out[j+2], out[j+3] = s0, s1, s2, s3
		}
		for ; j < hi; j++ {
			out[j] = dot(op.w[j*in:(j+1)*in], x)
		}
	}
}

// dot is Σ a[i]·b[i] in index order; len(b) ≥ len(a).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, ai := range a {
		s += ai * b[i]
	}
	return s
}

// rmsnorm writes x/sqrt(mean(x²)+eps)·g into out; all [n].
func rmsnorm(out, x, g []float32, eps float32) {
	var ss float32
	for _, v := range x {
		ss += v * v
	}
	scale := 1 / float32(math.Sqrt(float64(ss/float32(len(x))+eps)))
	g = g[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * g[i]
	}
}

// rope rotates each head of v ([numHeads][D]) by the angles whose cosines
// and sines are cs, sn ([D/2]): adjacent pairs (x[2i], x[2i+1]) in normal
// mode, (x[i], x[i+D/2]) in NEOX mode.
func rope(v []float32, numHeads, headDim int, cs, sn []float32, neox bool) {
	half := headDim / 2
	for h := range numHeads {
		x := v[h*headDim : (h+1)*headDim]
		for i := range half {
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			x0, x1 := x[a], x[b]
			x[a] = x0*cs[i] - x1*sn[i]
			x[b] = x0*sn[i] + x1*cs[i]
		}
	}
}

// swiglu writes silu(gate)·up into gate; both [n].
func swiglu(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// add does x += y; both [n].
func add(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}
