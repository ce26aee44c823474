package kernels

import "math"

// Vector operations of the forward pass outside the matmuls (attention,
// activation). Each has an AVX-512 version (vec_simd.go) and the pure-Go
// one below; results depend only on the inputs, never on how the caller
// splits work.

// Dot returns Σ a[i]·b[i]; len(b) ≥ len(a).
func Dot(a, b []float32) float32 {
	s := dot(a, b[:len(a)])
	clearUpper()
	return s
}

func dotGo(a, b []float32) float32 {
	var s float32
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// AddScaled does y += s·x; len(x) ≥ len(y).
func AddScaled(y []float32, s float32, x []float32) {
	addScaled(y, s, x[:len(y)])
	clearUpper()
}

func addScaledGo(y []float32, s float32, x []float32) {
	for i := range y {
		y[i] += s * x[i]
	}
}

// ExpShift replaces x[i] by exp(x[i] - m) and returns their sum (softmax
// numerators; m is normally max(x), so every term is ≤ 1).
func ExpShift(x []float32, m float32) float32 {
	s := expShift(x, m)
	clearUpper()
	return s
}

func expShiftGo(x []float32, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	return sum
}

// SiLUMul writes silu(gate[i])·up[i] = gate/(1+exp(-gate))·up into gate
// (SwiGLU); len(up) ≥ len(gate).
func SiLUMul(gate, up []float32) {
	siluMul(gate, up[:len(gate)])
	clearUpper()
}

func siluMulGo(gate, up []float32) {
	for i, g := range gate {
		gate[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

// GELU's tanh form is a sigmoid: ½x(1+tanh(u)) = x/(1+exp(-2u)), with
// 2u = x·(geluA + geluB·x²) = 2√(2/π)(x + 0.044715x³).
const (
	geluA = 1.5957691216057308   // 2√(2/π)
	geluB = 0.071354816272869736 // 2√(2/π)·0.044715
)

// GELUMul writes gelu(gate[i])·up[i] into gate, GELU's tanh form
// (transformers' gelu_pytorch_tanh): x/(1+exp(-x(geluA+geluB·x²))), on
// SiLUMul's exp; len(up) ≥ len(gate).
func GELUMul(gate, up []float32) {
	geluMul(gate, up[:len(gate)])
	clearUpper()
}

// SwiGLUOAIMul writes gpt-oss's clamped SwiGLU into gate, as ggml's
// swiglu_oai computes it (alpha 1.702, limit 7): with x = min(gate[i], 7),
// x/(1+exp(−1.702x))·(clamp(up[i], −7, 7) + 1); len(up) ≥ len(gate).
func SwiGLUOAIMul(gate, up []float32) {
	const alpha, limit = 1.702, 7
	up = up[:len(gate)]
	for i, g := range gate {
		x, y := min(g, limit), max(-limit, min(up[i], limit))
		gate[i] = x / (1 + float32(math.Exp(float64(alpha*-x)))) * (y + 1)
	}
}

// Softcap does x[i] = c·tanh(x[i]/c) (Gemma 2's soft-capping of
// attention scores and logits), with tanh(y) = 1 − 2/(exp(2y)+1) on
// SiLUMul's exp at the SIMD levels (within 1e-6·c of float64) and
// math.Tanh in Go; c > 0.
func Softcap(x []float32, c float32) {
	softcap(x, c)
	clearUpper()
}

func softcapGo(x []float32, c float32) {
	for i, v := range x {
		x[i] = c * float32(math.Tanh(float64(v/c)))
	}
}

func geluMulGo(gate, up []float32) {
	for i, g := range gate {
		z := g * (geluA + geluB*g*g)
		gate[i] = g / (1 + float32(math.Exp(float64(-z)))) * up[i]
	}
}

// DotCols sets out[p] = s·Σ_d q[d]·k[d·stride+p] for p < len(out) ≤
// stride, with len(q) = D and len(k) ≥ D·stride, and returns max(out)
// (-Inf when empty): attention scores of one query against one KV block
// whose keys are stored transposed ([D][B], stride B), so that 16
// positions fill one register and need no horizontal sums.
func DotCols(out, q, k []float32, stride int, s float32) float32 {
	m := float32(math.Inf(-1))
	if len(out) == 0 {
		return m
	}
	k = k[:len(q)*stride]
	dotCols(out, q, k, stride, s)
	clearUpper()
	for _, v := range out {
		m = max(m, v)
	}
	return m
}

// AddRows does y[d] += Σ_p w[p]·v[p·stride+d] for p < len(w), with
// len(y) = D: attention's weighted sum of the values of one KV block.
func AddRows(y, w, v []float32, stride int) {
	if len(w) == 0 {
		return
	}
	v = v[:(len(w)-1)*stride+len(y)]
	addRows(y, w, v, stride)
	clearUpper()
}

// Scale does x *= s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

func dotColsGo(out, q, k []float32, stride int, s float32) {
	for p := range out {
		var sum float32
		for d, qd := range q {
			sum += qd * k[d*stride+p]
		}
		out[p] = sum * s
	}
}

func addRowsGo(y, w, v []float32, stride int) {
	for p, wp := range w {
		addScaledGo(y, wp, v[p*stride:p*stride+len(y)])
	}
}
