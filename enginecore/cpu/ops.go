package cpu

import (
	"math"
)

// Element-wise operations of the forward pass (the matmuls are in
// enginecore/cpu/kernels). Every output element is a sequential sum in
// index order, so results never depend on how tokens are grouped or split
// between workers.

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

// headNorm applies rmsnorm with gain g ([D]) to each head of v
// ([numHeads][D]) in place (Qwen3's QK norm).
func headNorm(v []float32, numHeads int, g []float32, eps float32) {
	d := len(g)
	for h := range numHeads {
		x := v[h*d : (h+1)*d]
		rmsnorm(x, x, g, eps)
	}
}

// rope rotates the first R dims of each head of v ([numHeads][D]) by the
// angles whose cosines and sines are cs, sn ([R/2]): adjacent pairs
// (x[2i], x[2i+1]) in normal mode, (x[i], x[i+R/2]) in NEOX mode; dims R
// to D pass through (partial RoPE).
func rope(v []float32, numHeads, headDim int, cs, sn []float32, neox bool) {
	half := len(cs)
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

// add does x += y; both [n].
func add(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

// scaleVec does x *= s; x [n].
func scaleVec(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
