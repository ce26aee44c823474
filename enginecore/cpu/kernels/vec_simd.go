//go:build goexperiment.simd && amd64

package kernels

// AVX-512 versions of vec.go, checked against the pure-Go ones by
// vec_test.go. exp is Cephes' expf polynomial on r = x - n·ln2 with
// 2ⁿ applied by VSCALEFPS (correct underflow and overflow), about 1 ulp.
// Tails shorter than a register go through scalar code or a local array:
// archsimd's *SlicePart loads trip -race's checkptr.

import "simd/archsimd"

// vec is the level of the vector (non-matmul) kernels: the VNNI levels
// and AMX add integer matmul instructions only, so their vectors are
// AVX2's or AVX-512's.
func (l simdLevel) vec() simdLevel {
	if l == levelAVXVNNI {
		return levelAVX2
	}
	return min(l, levelAVX512)
}

func dot(a, b []float32) float32 {
	switch level.vec() {
	case levelAVX512:
		return dot512(a, b)
	case levelAVX2:
		return dot256(a, b)
	}
	return dotGo(a, b)
}

func addScaled(y []float32, s float32, x []float32) {
	switch level.vec() {
	case levelAVX512:
		addScaled512(y, s, x)
	case levelAVX2:
		addScaled256(y, s, x)
	default:
		addScaledGo(y, s, x)
	}
}

func expShift(x []float32, m float32) float32 {
	switch level.vec() {
	case levelAVX512:
		return expShift512(x, m)
	case levelAVX2:
		return expShift256(x, m)
	}
	return expShiftGo(x, m)
}

// expBlock is expShift without the sum: a block's 16 scores at the
// AVX-512 level are one exp16, as expShift512 computes them.
func expBlock(x []float32, m float32) {
	if level.vec() == levelAVX512 && len(x) == 16 {
		xx := (*[16]float32)(x)
		exp16(archsimd.LoadFloat32x16(xx).Sub(archsimd.BroadcastFloat32x16(m))).Store(xx)
		clearUpper()
		return
	}
	expShift(x, m)
}

func siluMul(gate, up []float32) {
	switch level.vec() {
	case levelAVX512:
		siluMul512(gate, up)
	case levelAVX2:
		siluMul256(gate, up)
	default:
		siluMulGo(gate, up)
	}
}

func softcap(x []float32, c float32) {
	switch level.vec() {
	case levelAVX512:
		softcap512(x, c)
	case levelAVX2:
		softcap256(x, c)
	default:
		softcapGo(x, c)
	}
}

func geluMul(gate, up []float32) {
	switch level.vec() {
	case levelAVX512:
		geluMul512(gate, up)
	case levelAVX2:
		geluMul256(gate, up)
	default:
		geluMulGo(gate, up)
	}
}

func dotCols(out, q, k []float32, stride int, s float32) {
	switch level.vec() {
	case levelAVX512:
		dotCols512(out, q, k, stride, s)
	case levelAVX2:
		dotCols256(out, q, k, stride, s)
	default:
		dotColsGo(out, q, k, stride, s)
	}
}

func addRows(y, w, v []float32, stride int) {
	switch level.vec() {
	case levelAVX512:
		addRows512(y, w, v, stride)
	case levelAVX2:
		addRows256(y, w, v, stride)
	default:
		addRowsGo(y, w, v, stride)
	}
}

// hsum adds the 16 lanes of v.
func hsum(v archsimd.Float32x16) float32 {
	v8 := v.GetLo().Add(v.GetHi())
	v4 := v8.GetLo().Add(v8.GetHi())
	var a [4]float32
	v4.Store(&a)
	return (a[0] + a[1]) + (a[2] + a[3])
}

func dot512(a, b []float32) float32 {
	var s0, s1 archsimd.Float32x16
	i := 0
	for ; i+32 <= len(a); i += 32 {
		aa, bb := (*[32]float32)(a[i:]), (*[32]float32)(b[i:])
		s0 = archsimd.LoadFloat32x16((*[16]float32)(aa[0:])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(bb[0:])), s0)
		s1 = archsimd.LoadFloat32x16((*[16]float32)(aa[16:])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(bb[16:])), s1)
	}
	for ; i+16 <= len(a); i += 16 {
		s0 = archsimd.LoadFloat32x16((*[16]float32)(a[i:])).MulAdd(archsimd.LoadFloat32x16((*[16]float32)(b[i:])), s0)
	}
	return hsum(s0.Add(s1)) + dotGo(a[i:], b[i:])
}

func addScaled512(y []float32, s float32, x []float32) {
	sv := archsimd.BroadcastFloat32x16(s)
	i := 0
	for ; i+16 <= len(y); i += 16 {
		yy := (*[16]float32)(y[i:])
		archsimd.LoadFloat32x16((*[16]float32)(x[i:])).MulAdd(sv, archsimd.LoadFloat32x16(yy)).Store(yy)
	}
	addScaledGo(y[i:], s, x[i:])
}

// exp16 is e^x per lane.
func exp16(x archsimd.Float32x16) archsimd.Float32x16 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	n := x.Mul(archsimd.BroadcastFloat32x16(log2e)).RoundToEvenScaled(0)
	r := n.MulAdd(archsimd.BroadcastFloat32x16(-ln2hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x16(-ln2lo), r)
	p := archsimd.BroadcastFloat32x16(1.9875691500e-4)
	p = p.MulAdd(r, archsimd.BroadcastFloat32x16(1.3981999507e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x16(8.3334519073e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x16(4.1665795894e-2))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x16(1.6666665459e-1))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x16(5.0000001201e-1))
	y := p.MulAdd(r.Mul(r), r).Add(archsimd.BroadcastFloat32x16(1))
	return y.Scale(n)
}

func expShift512(x []float32, m float32) float32 {
	mv := archsimd.BroadcastFloat32x16(m)
	var sum archsimd.Float32x16
	i := 0
	for ; i+16 <= len(x); i += 16 {
		xx := (*[16]float32)(x[i:])
		e := exp16(archsimd.LoadFloat32x16(xx).Sub(mv))
		e.Store(xx)
		sum = sum.Add(e)
	}
	total := hsum(sum)
	for ; i < len(x); i++ { // a masked tail would exponentiate padding
		x[i] = hsum1(exp16(archsimd.BroadcastFloat32x16(x[i] - m)))
		total += x[i]
	}
	return total
}

// hsum1 is lane 0 of v (all lanes equal).
func hsum1(v archsimd.Float32x16) float32 {
	var a [4]float32
	v.GetLo().GetLo().Store(&a)
	return a[0]
}

func siluMul512(gate, up []float32) {
	one := archsimd.BroadcastFloat32x16(1)
	zero := archsimd.Float32x16{}
	i := 0
	for ; i+16 <= len(gate); i += 16 {
		gg := (*[16]float32)(gate[i:])
		g := archsimd.LoadFloat32x16(gg)
		g.Div(exp16(zero.Sub(g)).Add(one)).Mul(archsimd.LoadFloat32x16((*[16]float32)(up[i:]))).Store(gg)
	}
	if i < len(gate) {
		var gg, uu [16]float32
		n := copy(gg[:], gate[i:])
		copy(uu[:], up[i:])
		g := archsimd.LoadFloat32x16(&gg)
		g.Div(exp16(zero.Sub(g)).Add(one)).Mul(archsimd.LoadFloat32x16(&uu)).Store(&gg)
		copy(gate[i:], gg[:n])
	}
}

// dotCols512 needs len(k) ≥ (D-1)·stride + min(stride, ⌈len(out)/16⌉·16):
// a partial chunk of a block still loads 16 columns when the block has
// them, and only the first len(out) are stored.
func dotCols512(out, q, k []float32, stride int, s float32) {
	sv := archsimd.BroadcastFloat32x16(s)
	c := 0
	for ; c < len(out) && c+16 <= stride; c += 16 {
		var a0, a1, a2, a3 archsimd.Float32x16
		d := 0
		for ; d+4 <= len(q); d += 4 {
			qq := (*[4]float32)(q[d:])
			a0 = archsimd.LoadFloat32x16((*[16]float32)(k[d*stride+c:])).MulAdd(archsimd.BroadcastFloat32x16(qq[0]), a0)
			a1 = archsimd.LoadFloat32x16((*[16]float32)(k[(d+1)*stride+c:])).MulAdd(archsimd.BroadcastFloat32x16(qq[1]), a1)
			a2 = archsimd.LoadFloat32x16((*[16]float32)(k[(d+2)*stride+c:])).MulAdd(archsimd.BroadcastFloat32x16(qq[2]), a2)
			a3 = archsimd.LoadFloat32x16((*[16]float32)(k[(d+3)*stride+c:])).MulAdd(archsimd.BroadcastFloat32x16(qq[3]), a3)
		}
		for ; d < len(q); d++ {
			a0 = archsimd.LoadFloat32x16((*[16]float32)(k[d*stride+c:])).MulAdd(archsimd.BroadcastFloat32x16(q[d]), a0)
		}
		var r [16]float32
		a0.Add(a1).Add(a2.Add(a3)).Mul(sv).Store(&r)
		copy(out[c:], r[:])
	}
	for p := c; p < len(out); p++ { // columns past the last full chunk of a block
		var sum float32
		for d, qd := range q {
			sum += qd * k[d*stride+p]
		}
		out[p] = sum * s
	}
}

func addRows512(y, w, v []float32, stride int) {
	d := len(y)
	i := 0
	// 64 columns at a time in four registers, then 16, then a masked tail.
	for ; i+64 <= d; i += 64 {
		yy := (*[64]float32)(y[i:])
		a0 := archsimd.LoadFloat32x16((*[16]float32)(yy[0:]))
		a1 := archsimd.LoadFloat32x16((*[16]float32)(yy[16:]))
		a2 := archsimd.LoadFloat32x16((*[16]float32)(yy[32:]))
		a3 := archsimd.LoadFloat32x16((*[16]float32)(yy[48:]))
		for p, wp := range w {
			vv := (*[64]float32)(v[p*stride+i:])
			wv := archsimd.BroadcastFloat32x16(wp)
			a0 = archsimd.LoadFloat32x16((*[16]float32)(vv[0:])).MulAdd(wv, a0)
			a1 = archsimd.LoadFloat32x16((*[16]float32)(vv[16:])).MulAdd(wv, a1)
			a2 = archsimd.LoadFloat32x16((*[16]float32)(vv[32:])).MulAdd(wv, a2)
			a3 = archsimd.LoadFloat32x16((*[16]float32)(vv[48:])).MulAdd(wv, a3)
		}
		a0.Store((*[16]float32)(yy[0:]))
		a1.Store((*[16]float32)(yy[16:]))
		a2.Store((*[16]float32)(yy[32:]))
		a3.Store((*[16]float32)(yy[48:]))
	}
	for ; i+16 <= d; i += 16 {
		yy := (*[16]float32)(y[i:])
		a := archsimd.LoadFloat32x16(yy)
		for p, wp := range w {
			a = archsimd.LoadFloat32x16((*[16]float32)(v[p*stride+i:])).MulAdd(archsimd.BroadcastFloat32x16(wp), a)
		}
		a.Store(yy)
	}
	for p, wp := range w {
		addScaledGo(y[i:], wp, v[p*stride+i:p*stride+d])
	}
}

func geluMul512(gate, up []float32) {
	one, a, b := archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(geluA), archsimd.BroadcastFloat32x16(geluB)
	zero := archsimd.Float32x16{}
	gelu := func(g, u archsimd.Float32x16) archsimd.Float32x16 {
		z := g.Mul(g.Mul(g).Mul(b).Add(a))
		return g.Div(exp16(zero.Sub(z)).Add(one)).Mul(u)
	}
	i := 0
	for ; i+16 <= len(gate); i += 16 {
		gg := (*[16]float32)(gate[i:])
		gelu(archsimd.LoadFloat32x16(gg), archsimd.LoadFloat32x16((*[16]float32)(up[i:]))).Store(gg)
	}
	if i < len(gate) {
		var gg, uu [16]float32
		n := copy(gg[:], gate[i:])
		copy(uu[:], up[i:])
		gelu(archsimd.LoadFloat32x16(&gg), archsimd.LoadFloat32x16(&uu)).Store(&gg)
		copy(gate[i:], gg[:n])
	}
}

func softcap512(x []float32, c float32) {
	one, two := archsimd.BroadcastFloat32x16(1), archsimd.BroadcastFloat32x16(2)
	cv, k := archsimd.BroadcastFloat32x16(c), archsimd.BroadcastFloat32x16(2/c)
	capped := func(v archsimd.Float32x16) archsimd.Float32x16 { // c·(1 − 2/(exp(2v/c)+1))
		return one.Sub(two.Div(exp16(v.Mul(k)).Add(one))).Mul(cv)
	}
	i := 0
	for ; i+16 <= len(x); i += 16 {
		xx := (*[16]float32)(x[i:])
		capped(archsimd.LoadFloat32x16(xx)).Store(xx)
	}
	if i < len(x) {
		var xx [16]float32
		n := copy(xx[:], x[i:])
		capped(archsimd.LoadFloat32x16(&xx)).Store(&xx)
		copy(x[i:], xx[:n])
	}
}
