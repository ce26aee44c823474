//go:build goexperiment.simd && amd64

package kernels

// The vector operations at the AVX2 level (256-bit archsimd): dot
// products, scaled adds, exp, soft-cap, the GLU gates and the attention
// rows. The matmul kernels are in avx2.go.

import "simd/archsimd"

// hsum8 adds the 8 lanes of v.
func hsum8(v archsimd.Float32x8) float32 {
	v4 := v.GetLo().Add(v.GetHi())
	var a [4]float32
	v4.Store(&a)
	return (a[0] + a[1]) + (a[2] + a[3])
}

func dot256(a, b []float32) float32 {
	var s0, s1 archsimd.Float32x8
	i := 0
	for ; i+16 <= len(a); i += 16 {
		aa, bb := (*[16]float32)(a[i:]), (*[16]float32)(b[i:])
		s0 = archsimd.LoadFloat32x8((*[8]float32)(aa[0:])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(bb[0:])), s0)
		s1 = archsimd.LoadFloat32x8((*[8]float32)(aa[8:])).MulAdd(archsimd.LoadFloat32x8((*[8]float32)(bb[8:])), s1)
	}
	return hsum8(s0.Add(s1)) + dotGo(a[i:], b[i:])
}

func addScaled256(y []float32, s float32, x []float32) {
	sv := archsimd.BroadcastFloat32x8(s)
	i := 0
	for ; i+8 <= len(y); i += 8 {
		yy := (*[8]float32)(y[i:])
		archsimd.LoadFloat32x8((*[8]float32)(x[i:])).MulAdd(sv, archsimd.LoadFloat32x8(yy)).Store(yy)
	}
	addScaledGo(y[i:], s, x[i:])
}

// exp8 is e^x per lane, Cephes' expf: without VSCALEFPS, 2ⁿ is built in
// the exponent bits, so x is clamped to [-87.3, 88.3] (results 1.2e-38 to
// 2.4e38 at the ends, where AVX-512 gives 0 and +Inf).
func exp8(x archsimd.Float32x8) archsimd.Float32x8 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	x = x.Min(archsimd.BroadcastFloat32x8(88.3762626647949)).Max(archsimd.BroadcastFloat32x8(-87.33654475))
	n := x.Mul(archsimd.BroadcastFloat32x8(log2e)).RoundToEven()
	r := n.MulAdd(archsimd.BroadcastFloat32x8(-ln2hi), x)
	r = n.MulAdd(archsimd.BroadcastFloat32x8(-ln2lo), r)
	p := archsimd.BroadcastFloat32x8(1.9875691500e-4)
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(1.3981999507e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(8.3334519073e-3))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(4.1665795894e-2))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(1.6666665459e-1))
	p = p.MulAdd(r, archsimd.BroadcastFloat32x8(5.0000001201e-1))
	y := p.MulAdd(r.Mul(r), r).Add(archsimd.BroadcastFloat32x8(1))
	pow2n := n.ConvertToInt32().Add(archsimd.BroadcastInt32x8(127)).ShiftAllLeft(23).AsFloat32x8()
	return y.Mul(pow2n)
}

func expShift256(x []float32, m float32) float32 {
	mv := archsimd.BroadcastFloat32x8(m)
	var sum archsimd.Float32x8
	i := 0
	for ; i+8 <= len(x); i += 8 {
		xx := (*[8]float32)(x[i:])
		e := exp8(archsimd.LoadFloat32x8(xx).Sub(mv))
		e.Store(xx)
		sum = sum.Add(e)
	}
	total := hsum8(sum)
	if i < len(x) {
		var t [8]float32
		n := copy(t[:], x[i:])
		exp8(archsimd.LoadFloat32x8(&t).Sub(mv)).Store(&t)
		for k := range n {
			x[i+k] = t[k]
			total += t[k]
		}
	}
	return total
}

func softcap256(x []float32, c float32) {
	one, two := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(2)
	cv, k := archsimd.BroadcastFloat32x8(c), archsimd.BroadcastFloat32x8(2/c)
	capped := func(v archsimd.Float32x8) archsimd.Float32x8 { // c·(1 − 2/(exp(2v/c)+1))
		return one.Sub(two.Div(exp8(v.Mul(k)).Add(one))).Mul(cv)
	}
	i := 0
	for ; i+8 <= len(x); i += 8 {
		xx := (*[8]float32)(x[i:])
		capped(archsimd.LoadFloat32x8(xx)).Store(xx)
	}
	if i < len(x) {
		var xx [8]float32
		n := copy(xx[:], x[i:])
		capped(archsimd.LoadFloat32x8(&xx)).Store(&xx)
		copy(x[i:], xx[:n])
	}
}

func geluMul256(gate, up []float32) {
	one, a, b := archsimd.BroadcastFloat32x8(1), archsimd.BroadcastFloat32x8(geluA), archsimd.BroadcastFloat32x8(geluB)
	zero := archsimd.Float32x8{}
	gelu := func(g, u archsimd.Float32x8) archsimd.Float32x8 {
		z := g.Mul(g.Mul(g).Mul(b).Add(a))
		return g.Div(exp8(zero.Sub(z)).Add(one)).Mul(u)
	}
	i := 0
	for ; i+8 <= len(gate); i += 8 {
		gg := (*[8]float32)(gate[i:])
		gelu(archsimd.LoadFloat32x8(gg), archsimd.LoadFloat32x8((*[8]float32)(up[i:]))).Store(gg)
	}
	if i < len(gate) {
		var gg, uu [8]float32
		n := copy(gg[:], gate[i:])
		copy(uu[:], up[i:])
		gelu(archsimd.LoadFloat32x8(&gg), archsimd.LoadFloat32x8(&uu)).Store(&gg)
		copy(gate[i:], gg[:n])
	}
}

func siluMul256(gate, up []float32) {
	one := archsimd.BroadcastFloat32x8(1)
	zero := archsimd.Float32x8{}
	i := 0
	for ; i+8 <= len(gate); i += 8 {
		gg := (*[8]float32)(gate[i:])
		g := archsimd.LoadFloat32x8(gg)
		g.Div(exp8(zero.Sub(g)).Add(one)).Mul(archsimd.LoadFloat32x8((*[8]float32)(up[i:]))).Store(gg)
	}
	if i < len(gate) {
		var gg, uu [8]float32
		n := copy(gg[:], gate[i:])
		copy(uu[:], up[i:])
		g := archsimd.LoadFloat32x8(&gg)
		g.Div(exp8(zero.Sub(g)).Add(one)).Mul(archsimd.LoadFloat32x8(&uu)).Store(&gg)
		copy(gate[i:], gg[:n])
	}
}

// dotCols256 is dotCols512 with 8-column chunks.
func dotCols256(out, q, k []float32, stride int, s float32) {
	sv := archsimd.BroadcastFloat32x8(s)
	c := 0
	for ; c < len(out) && c+8 <= stride; c += 8 {
		var a0, a1 archsimd.Float32x8
		d := 0
		for ; d+2 <= len(q); d += 2 {
			a0 = archsimd.LoadFloat32x8((*[8]float32)(k[d*stride+c:])).MulAdd(archsimd.BroadcastFloat32x8(q[d]), a0)
			a1 = archsimd.LoadFloat32x8((*[8]float32)(k[(d+1)*stride+c:])).MulAdd(archsimd.BroadcastFloat32x8(q[d+1]), a1)
		}
		if d < len(q) {
			a0 = archsimd.LoadFloat32x8((*[8]float32)(k[d*stride+c:])).MulAdd(archsimd.BroadcastFloat32x8(q[d]), a0)
		}
		var r [8]float32
		a0.Add(a1).Mul(sv).Store(&r)
		copy(out[c:], r[:])
	}
	if c < len(out) {
		dotColsGo(out[c:], q, k[c:], stride, s)
	}
}

func addRows256(y, w, v []float32, stride int) {
	d := len(y)
	i := 0
	for ; i+32 <= d; i += 32 {
		yy := (*[32]float32)(y[i:])
		a0 := archsimd.LoadFloat32x8((*[8]float32)(yy[0:]))
		a1 := archsimd.LoadFloat32x8((*[8]float32)(yy[8:]))
		a2 := archsimd.LoadFloat32x8((*[8]float32)(yy[16:]))
		a3 := archsimd.LoadFloat32x8((*[8]float32)(yy[24:]))
		for p, wp := range w {
			vv := (*[32]float32)(v[p*stride+i:])
			wv := archsimd.BroadcastFloat32x8(wp)
			a0 = archsimd.LoadFloat32x8((*[8]float32)(vv[0:])).MulAdd(wv, a0)
			a1 = archsimd.LoadFloat32x8((*[8]float32)(vv[8:])).MulAdd(wv, a1)
			a2 = archsimd.LoadFloat32x8((*[8]float32)(vv[16:])).MulAdd(wv, a2)
			a3 = archsimd.LoadFloat32x8((*[8]float32)(vv[24:])).MulAdd(wv, a3)
		}
		a0.Store((*[8]float32)(yy[0:]))
		a1.Store((*[8]float32)(yy[8:]))
		a2.Store((*[8]float32)(yy[16:]))
		a3.Store((*[8]float32)(yy[24:]))
	}
	for p, wp := range w {
		addScaledGo(y[i:], wp, v[p*stride+i:p*stride+d])
	}
}
