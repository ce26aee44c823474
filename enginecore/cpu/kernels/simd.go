//go:build goexperiment.simd && amd64

package kernels

// AVX-512 kernels (simd/archsimd, GOEXPERIMENT=simd). Checked against the
// pure-Go kernels and the dequantized float64 product by matmul_test.go,
// which runs both. Loads go through array pointers (slice loads cost
// 30–40%); unsafe only reinterprets 4 int8 as one int32 to broadcast.

import (
	"simd/archsimd"
	"unsafe"
)

// hasAVXVNNI reports the VEX-encoded VPDPBUSD (AVX-VNNI).
var hasAVXVNNI = archsimd.X86.AVXVNNI()

func detectLevel() simdLevel {
	switch {
	case archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI() && hasAMX:
		return levelAMX
	case archsimd.X86.AVX512() && archsimd.X86.AVX512VNNI():
		return levelVNNI
	case archsimd.X86.AVX512():
		return levelAVX512
	case archsimd.X86.AVX2() && archsimd.X86.FMA() && hasAVXVNNI:
		return levelAVXVNNI
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		return levelAVX2
	}
	return levelGo
}

// asm512 reports whether m's matmuls have AVX-512 assembly kernels:
// float16-scaled 4-bit matrices, Q8_0 and Q5_0 (one scale per 32, no
// offsets).
func (m *Matrix) asm512() bool {
	return m.sc.h != nil && m.nb > 0 && (m.fam == famNib || m.fam == famByte && m.nsub == 1 && !m.hasMin)
}

// kernel names the kernels mulGroupsSIMD runs for m: "amx+" and the
// kernel of the remaining rows where whole tiles of 16 rows go through
// AMX. An AVX-512 CPU runs the AVX2 assembly for the types that have no AVX-512 assembly (Q4_K
// with float32 scales, Q6_K, Q5_K, Q5_1): at half the width it is still 10–40×
// the archsimd kernels, whose registers Go 1.26 spills.
func (m *Matrix) kernel() string {
	if level < m.packLevel() {
		return levelGo.String()
	}
	if level >= levelAMX {
		if k, _, _ := m.tiles(); k != nil {
			return "amx+" + m.vecKernel()
		}
	}
	return m.vecKernel()
}

// vecKernel names the kernels for the rows that do not fill an AMX tile.
func (m *Matrix) vecKernel() string {
	if m.fam == famLUT && level < levelAVX512 { // the byte layout's kernels, per expanded group
		v := m.lutView()
		return v.vecKernel()
	}
	switch {
	case m.fam == famF32 && level >= levelAVX512:
		return "avx512-asm"
	case level == levelGo || m.fam == famF32:
		return level.String()
	case level >= levelVNNI && m.vnni() != vnniNone:
		return "avx512vnni-asm"
	case level >= levelAVX512 && m.asm512():
		return "avx512-asm"
	case level == levelAVXVNNI && m.asmAVXVNNI():
		return "avxvnni-asm"
	case m.asm256():
		return "avx2-asm"
	}
	return level.String()
}

func (m *Matrix) mulGroupsSIMD(out []float32, a *Activations, g0, g1 int) {
	if level < m.packLevel() || m.fam == famLUT && level >= levelAVX512 { // famLUT: packed below AVX-512 only
		m.mulGroupsGo(out, a, g0, g1)
		return
	}
	if m.fam == famLUT {
		m.mulGroupsAVX2(out, a, g0, g1, 0)
		return
	}
	if m.fam == famF32 && level >= levelAVX512 {
		m.mulFloat(out, a, g0, g1)
		return
	}
	// Whole tiles of 16 rows first, in AMX where the CPU has it; the
	// kernels below take the rest.
	t0 := m.mulTiles(out, a, g0, g1)
	if level >= levelVNNI && m.mulGroupsVNNI(out, a, g0, g1, t0) {
		return
	}
	if level < levelAVX512 || m.fam != famF32 && !m.asm512() && m.asm256() {
		m.mulGroupsAVX2(out, a, g0, g1, t0)
		return
	}
	var res [GroupRows]float32
	var res4 [4][GroupRows]float32
	in, nb, spb := m.In, m.nb, m.scPerBlock()
	rows := m.rows(a)
	blockBytes := nibBlockBytes
	if m.fam == famByte {
		blockBytes = byteBlockBytes
	}
	// Float16-scaled 4-bit matrices and Q8_0 (one scale per 32, no
	// offsets) have assembly kernels; they read sc.h and trust the bounds
	// checked by the slicing here.
	asm := m.asm512()
	for g := g0; g < g1; g++ {
		var qs []byte
		var sc scales
		if m.fam != famF32 {
			qs, sc = m.qs[g*nb*blockBytes:(g+1)*nb*blockBytes], m.sc.slice(g*nb*spb, (g+1)*nb*spb)
		}
		t := t0
		// Four tokens at a time share each unpacked weight block (the
		// per-token arithmetic is exactly that of the one-token kernels).
		for ; t+4 <= rows && (m.fam != famByte || asm); t += 4 {
			switch m.fam {
			case famF32:
				f32Group4(m.f[g*in*GroupRows:(g+1)*in*GroupRows], a.X[t*in:(t+4)*in], &res4)
			case famNib:
				xq, xd, xs := a.q[t*in:(t+4)*in], a.d[t*nb:(t+4)*nb], a.s[t*nb:(t+4)*nb]
				if asm {
					if sc.noM {
						nibGroup4AVX512Q(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, &res4)
					} else {
						nibGroup4AVX512(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, &res4)
					}
				} else {
					nibGroup4(qs, sc, xq, xd, xs, &res4)
				}
			case famByte: // asm
				xa, xm, xd := a.qa[t*in:(t+4)*in], a.qm[t*in:(t+4)*in], a.d[t*nb:(t+4)*nb]
				byteGroup4Q8AVX512(&qs[0], &sc.h[0], &xa[0], &xm[0], in, &xd[0], nb, &res4)
			}
			for k := range 4 {
				m.store(out, a, t+k, g, &res4[k])
			}
		}
		for ; t < rows; t++ {
			switch m.fam {
			case famF32:
				f32Group1(m.f[g*in*GroupRows:(g+1)*in*GroupRows], a.X[t*in:(t+1)*in], &res)
			case famNib:
				xq, xd, xs := a.q[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb]
				if asm {
					if sc.noM {
						nibGroup1AVX512Q(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, &res)
					} else {
						nibGroup1AVX512(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, &res)
					}
				} else {
					nibGroup1(qs, sc, xq, xd, xs, &res)
				}
			case famByte:
				xa, xm, xd := a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb]
				if asm {
					byteGroup1Q8AVX512(&qs[0], &sc.h[0], &xa[0], &xm[0], &xd[0], nb, &res)
				} else {
					byteGroup1(qs, sc, m.nsub, m.hasMin, xa, xm, xd, a.s[t*nb:(t+1)*nb], &res)
				}
			}
			m.store(out, a, t, g, &res)
		}
	}
}

// f32Group1: w [In][16], x [In]; two accumulator chains over i mod 2
// (f32Group4 keeps the same two per token: Go has 16 vector registers).
func f32Group1(w, x []float32, res *[GroupRows]float32) {
	var a0, a1 archsimd.Float32x16
	w = w[:len(x)*GroupRows]
	i := 0
	for ; i+2 <= len(x); i += 2 {
		ww := (*[2 * GroupRows]float32)(w[i*GroupRows:])
		xx := (*[2]float32)(x[i:])
		a0 = archsimd.LoadFloat32x16((*[16]float32)(ww[0:])).MulAdd(archsimd.BroadcastFloat32x16(xx[0]), a0)
		a1 = archsimd.LoadFloat32x16((*[16]float32)(ww[16:])).MulAdd(archsimd.BroadcastFloat32x16(xx[1]), a1)
	}
	if i < len(x) {
		a0 = archsimd.LoadFloat32x16((*[16]float32)(w[i*GroupRows:])).MulAdd(archsimd.BroadcastFloat32x16(x[i]), a0)
	}
	a0.Add(a1).Store(res)
}

// f32Group4 is f32Group1 for four tokens x [4][In] sharing each weight
// load.
func f32Group4(w, x []float32, res *[4][GroupRows]float32) {
	in := len(x) / 4
	x0, x1, x2, x3 := x[0:in], x[in:2*in], x[2*in:3*in], x[3*in:4*in]
	var a00, a01, a10, a11, a20, a21, a30, a31 archsimd.Float32x16
	w = w[:in*GroupRows]
	i := 0
	for ; i+2 <= in; i += 2 {
		ww := (*[2 * GroupRows]float32)(w[i*GroupRows:])
		y0, y1, y2, y3 := (*[2]float32)(x0[i:]), (*[2]float32)(x1[i:]), (*[2]float32)(x2[i:]), (*[2]float32)(x3[i:])
		w0 := archsimd.LoadFloat32x16((*[16]float32)(ww[0:]))
		a00 = w0.MulAdd(archsimd.BroadcastFloat32x16(y0[0]), a00)
		a10 = w0.MulAdd(archsimd.BroadcastFloat32x16(y1[0]), a10)
		a20 = w0.MulAdd(archsimd.BroadcastFloat32x16(y2[0]), a20)
		a30 = w0.MulAdd(archsimd.BroadcastFloat32x16(y3[0]), a30)
		w1 := archsimd.LoadFloat32x16((*[16]float32)(ww[16:]))
		a01 = w1.MulAdd(archsimd.BroadcastFloat32x16(y0[1]), a01)
		a11 = w1.MulAdd(archsimd.BroadcastFloat32x16(y1[1]), a11)
		a21 = w1.MulAdd(archsimd.BroadcastFloat32x16(y2[1]), a21)
		a31 = w1.MulAdd(archsimd.BroadcastFloat32x16(y3[1]), a31)
	}
	if i < in {
		wi := archsimd.LoadFloat32x16((*[16]float32)(w[i*GroupRows:]))
		a00 = wi.MulAdd(archsimd.BroadcastFloat32x16(x0[i]), a00)
		a10 = wi.MulAdd(archsimd.BroadcastFloat32x16(x1[i]), a10)
		a20 = wi.MulAdd(archsimd.BroadcastFloat32x16(x2[i]), a20)
		a30 = wi.MulAdd(archsimd.BroadcastFloat32x16(x3[i]), a30)
	}
	a00.Add(a01).Store(&res[0])
	a10.Add(a11).Store(&res[1])
	a20.Add(a21).Store(&res[2])
	a30.Add(a31).Store(&res[3])
}

// load16 loads scales [i, i+16) as float32. The float16 conversion is
// exact: (h&0x7fff)<<13 read as float32 is the magnitude ·2⁻¹¹² (for
// subnormals too), then the sign goes back in. (Inf and NaN scales would
// come out finite; files have none.)
func (s scales) load16(i int) archsimd.Float32x16 {
	if s.h == nil {
		return archsimd.LoadFloat32x16((*[16]float32)(s.f[i:]))
	}
	h := archsimd.LoadUint16x16((*[16]uint16)(s.h[i:])).ExtendToUint32()
	mag := h.And(archsimd.BroadcastUint32x16(0x7fff)).ShiftAllLeft(13).AsFloat32x16().Mul(archsimd.BroadcastFloat32x16(0x1p112))
	return mag.AsUint32x16().Or(h.And(archsimd.BroadcastUint32x16(0x8000)).ShiftAllLeft(16)).AsFloat32x16()
}

// nibDM16 loads D and M of block j of a 4-bit group's scales.
func (s scales) nibDM16(j int) (d, m archsimd.Float32x16) {
	o := j * s.nibStride()
	d = s.load16(o)
	if s.noM {
		return d, d.Mul(archsimd.BroadcastFloat32x16(-8))
	}
	return d, s.load16(o + GroupRows)
}

// bcast4 broadcasts 4 int8 (one int32) to all 16 lanes.
func bcast4(v int32) archsimd.Int8x64 { return archsimd.BroadcastInt32x16(v).AsInt8x64() }

// nibGroup1: per block, 4 chunks of 64 bytes hold 16 rows × 4 nibble
// bytes; low nibbles pair with x[4c..4c+3], high with x[16+4c..]. Eight
// u8×s8 pair sums stay below 2¹⁵ (8·2·15·127), so they add as int16.
func nibGroup1(qs []byte, sc scales, xq []int8, xd, xs []float32, res *[GroupRows]float32) {
	mask := archsimd.BroadcastUint8x64(0x0f)
	ones := archsimd.BroadcastInt16x32(1)
	var acc archsimd.Float32x16
	nb := len(xd)
	qs, xq, xs = qs[:nb*nibBlockBytes], xq[:nb*32], xs[:nb]
	for j := range nb {
		w := (*[nibBlockBytes]byte)(qs[j*nibBlockBytes:])
		x := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[j*32:])))
		v0 := archsimd.LoadUint8x64((*[64]uint8)(w[0:]))
		v1 := archsimd.LoadUint8x64((*[64]uint8)(w[64:]))
		v2 := archsimd.LoadUint8x64((*[64]uint8)(w[128:]))
		v3 := archsimd.LoadUint8x64((*[64]uint8)(w[192:]))
		s := v0.And(mask).DotProductPairsSaturated(bcast4(x[0])).
			Add(v0.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(mask).DotProductPairsSaturated(bcast4(x[4])))
		s = s.Add(v1.And(mask).DotProductPairsSaturated(bcast4(x[1]))).
			Add(v1.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(mask).DotProductPairsSaturated(bcast4(x[5])))
		s = s.Add(v2.And(mask).DotProductPairsSaturated(bcast4(x[2]))).
			Add(v2.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(mask).DotProductPairsSaturated(bcast4(x[6])))
		s = s.Add(v3.And(mask).DotProductPairsSaturated(bcast4(x[3]))).
			Add(v3.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(mask).DotProductPairsSaturated(bcast4(x[7])))
		d, mn := sc.nibDM16(j)
		acc = s.DotProductPairs(ones).ConvertToFloat32().MulAdd(d.Mul(archsimd.BroadcastFloat32x16(xd[j])), acc)
		acc = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[j]), acc)
	}
	acc.Store(res)
}

// nibGroup1AVX512 and nibGroup4AVX512 are nibGroup1 and nibGroup4 for
// float16 scales, in assembly (nib4_amd64.s): qs [nb][256], sc [nb][2][16]
// float16, xq [4][in], xd, xs [4][nb] (one row each for nibGroup1AVX512).
//
//go:noescape
func nibGroup1AVX512(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func nibGroup4AVX512(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

// nibGroup1AVX512Q and nibGroup4AVX512Q are the same for Q4_0's scales
// (D only; M = D·(-8)).
//
//go:noescape
func nibGroup1AVX512Q(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func nibGroup4AVX512Q(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

// byteGroup4Q8AVX512 and byteGroup1Q8AVX512 are byteGroup1 for Q8_0
// layouts (nsub 1, no offsets, float16 scales) and four or one tokens, in
// assembly (byte_amd64.s): qs [nb][512], sc [nb][16] float16, xa, xm
// [4][in] (one row for byteGroup1Q8AVX512), xd [4][nb].
//
//go:noescape
func byteGroup4Q8AVX512(qs *byte, sc *uint16, xa *uint8, xm *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func byteGroup1Q8AVX512(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)

// nibGroup4 is nibGroup1 for four tokens (xq [4][In], xd, xs [4][nb])
// sharing each unpacked chunk. Go allocates only 16 vector registers, so
// it unpacks chunk by chunk into four int16 sums rather than keeping the
// whole block unpacked.
func nibGroup4(qs []byte, sc scales, xq []int8, xd, xs []float32, res *[4][GroupRows]float32) {
	mask := archsimd.BroadcastUint8x64(0x0f)
	ones := archsimd.BroadcastInt16x32(1)
	var acc0, acc1, acc2, acc3 archsimd.Float32x16
	nb := len(xd) / 4
	in := nb * 32
	qs, xq, xs = qs[:nb*nibBlockBytes], xq[:4*in], xs[:4*nb]
	for j := range nb {
		w := (*[nibBlockBytes]byte)(qs[j*nibBlockBytes:])
		x0 := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[j*32:])))
		x1 := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[in+j*32:])))
		x2 := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[2*in+j*32:])))
		x3 := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[3*in+j*32:])))
		var s0, s1, s2, s3 archsimd.Int16x32
		for c := range 4 {
			v := archsimd.LoadUint8x64((*[64]uint8)(w[c*64:]))
			lo, hi := v.And(mask), v.AsUint16x32().ShiftAllRight(4).AsUint8x64().And(mask)
			s0 = s0.Add(lo.DotProductPairsSaturated(bcast4(x0[c]))).Add(hi.DotProductPairsSaturated(bcast4(x0[4+c])))
			s1 = s1.Add(lo.DotProductPairsSaturated(bcast4(x1[c]))).Add(hi.DotProductPairsSaturated(bcast4(x1[4+c])))
			s2 = s2.Add(lo.DotProductPairsSaturated(bcast4(x2[c]))).Add(hi.DotProductPairsSaturated(bcast4(x2[4+c])))
			s3 = s3.Add(lo.DotProductPairsSaturated(bcast4(x3[c]))).Add(hi.DotProductPairsSaturated(bcast4(x3[4+c])))
		}
		d, mn := sc.nibDM16(j)
		acc0 = s0.DotProductPairs(ones).ConvertToFloat32().MulAdd(d.Mul(archsimd.BroadcastFloat32x16(xd[j])), acc0)
		acc0 = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[j]), acc0)
		acc1 = s1.DotProductPairs(ones).ConvertToFloat32().MulAdd(d.Mul(archsimd.BroadcastFloat32x16(xd[nb+j])), acc1)
		acc1 = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[nb+j]), acc1)
		acc2 = s2.DotProductPairs(ones).ConvertToFloat32().MulAdd(d.Mul(archsimd.BroadcastFloat32x16(xd[2*nb+j])), acc2)
		acc2 = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[2*nb+j]), acc2)
		acc3 = s3.DotProductPairs(ones).ConvertToFloat32().MulAdd(d.Mul(archsimd.BroadcastFloat32x16(xd[3*nb+j])), acc3)
		acc3 = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[3*nb+j]), acc3)
	}
	acc0.Store(&res[0])
	acc1.Store(&res[1])
	acc2.Store(&res[2])
	acc3.Store(&res[3])
}

// byteChunk is Σ over one 64-byte chunk of w·x for 16 rows × 4 elements:
// maddubs needs an unsigned operand, so it multiplies |x| by w with x's
// sign applied ((w^m)-m, m = -1 where x < 0).
func byteChunk(w *[64]int8, xa, xm int32, ones archsimd.Int16x32) archsimd.Int32x16 {
	m := bcast4(xm)
	b := archsimd.LoadInt8x64(w).Xor(m).Sub(m)
	return bcast4(xa).AsUint8x64().DotProductPairsSaturated(b).DotProductPairs(ones)
}

// byteGroup1: per block, 8 chunks of 64 bytes hold 16 rows × 4 int8; one
// scale per 32 (nsub 1) or 16 (nsub 2) elements, and for Q5_K an offset.
func byteGroup1(qs []byte, sc scales, nsub int, hasMin bool, xa []uint8, xm []int8, xd, xs []float32, res *[GroupRows]float32) {
	ones := archsimd.BroadcastInt16x32(1)
	var acc archsimd.Float32x16
	nb := len(xd)
	spb := nsub * GroupRows
	if hasMin {
		spb *= 2
	}
	qs, xa, xm, xs = qs[:nb*byteBlockBytes], xa[:nb*32], xm[:nb*32], xs[:nb]
	for j := range nb {
		w := (*[byteBlockBytes]int8)(unsafe.Pointer((*[byteBlockBytes]byte)(qs[j*byteBlockBytes:])))
		a := (*[8]int32)(unsafe.Pointer((*[32]uint8)(xa[j*32:])))
		m := (*[8]int32)(unsafe.Pointer((*[32]int8)(xm[j*32:])))
		dx := archsimd.BroadcastFloat32x16(xd[j])
		s0 := byteChunk((*[64]int8)(w[0:]), a[0], m[0], ones).
			Add(byteChunk((*[64]int8)(w[64:]), a[1], m[1], ones)).
			Add(byteChunk((*[64]int8)(w[128:]), a[2], m[2], ones)).
			Add(byteChunk((*[64]int8)(w[192:]), a[3], m[3], ones))
		s1 := byteChunk((*[64]int8)(w[256:]), a[4], m[4], ones).
			Add(byteChunk((*[64]int8)(w[320:]), a[5], m[5], ones)).
			Add(byteChunk((*[64]int8)(w[384:]), a[6], m[6], ones)).
			Add(byteChunk((*[64]int8)(w[448:]), a[7], m[7], ones))
		d0 := sc.load16(j * spb)
		if nsub == 1 {
			acc = s0.Add(s1).ConvertToFloat32().MulAdd(d0.Mul(dx), acc)
		} else {
			d1 := sc.load16(j*spb + GroupRows)
			acc = s0.ConvertToFloat32().MulAdd(d0.Mul(dx), acc)
			acc = s1.ConvertToFloat32().MulAdd(d1.Mul(dx), acc)
		}
		if hasMin {
			mn := sc.load16(j*spb + nsub*GroupRows)
			acc = mn.MulAdd(archsimd.BroadcastFloat32x16(xs[j]), acc)
		}
	}
	acc.Store(res)
}

// quantizeRowSIMD quantizes one row (x, q, qa, qm [nb·32], d, s [nb],
// hs [nb][2]) in assembly at the AVX2 levels and above, with
// quantizeBlock's roundings; it reports false below.
func quantizeRowSIMD(x []float32, q []int8, qa []uint8, qm []int8, d, s []float32, hs []int32) bool {
	nb := len(d)
	if level < levelAVX2 || nb == 0 {
		return false
	}
	x, q, qa, qm, s = x[:nb*32], q[:nb*32], qa[:nb*32], qm[:nb*32], s[:nb]
	hs = hs[:2*nb]
	if level >= levelAVX512 {
		quantizeRowAVX512(&x[0], nb, &q[0], &qa[0], &qm[0], &d[0], &s[0], &hs[0])
	} else {
		quantizeRowAVX2(&x[0], nb, &q[0], &qa[0], &qm[0], &d[0], &s[0], &hs[0])
	}
	return true
}

// residualRowSIMD sets r = x − float32(d·q) block by block (r, x, q
// [nb·32], d [nb]) at the AVX2 levels and above; it reports false below.
func residualRowSIMD(r, x []float32, q []int8, d []float32) bool {
	nb := len(d)
	if level < levelAVX2 || nb == 0 {
		return false
	}
	r, x, q = r[:nb*32], x[:nb*32], q[:nb*32]
	if level >= levelAVX512 {
		residualRowAVX512(&x[0], &q[0], &d[0], nb, &r[0])
	} else {
		residualRowAVX2(&x[0], &q[0], &d[0], nb, &r[0])
	}
	return true
}

// quantizeRowAVX512 and residualRowAVX512 are in quant_amd64.s.
//
//go:noescape
func quantizeRowAVX512(x *float32, nb int, q *int8, qa *uint8, qm *int8, d, s *float32, hs *int32)

//go:noescape
func residualRowAVX512(x *float32, q *int8, d *float32, nb int, r *float32)

// quantizeRowAVX2 and residualRowAVX2: the same at 256 bits (AVX2 and
// AVX-VNNI levels), in quant_amd64.s.
//
//go:noescape
func quantizeRowAVX2(x *float32, nb int, q *int8, qa *uint8, qm *int8, d, s *float32, hs *int32)

//go:noescape
func residualRowAVX2(x *float32, q *int8, d *float32, nb int, r *float32)

// add16 adds src into dst.
// clearUpper ends a kernel's vector code (VZEROUPPER). Go does not
// clear the upper halves of the vector registers after archsimd code,
// and the legacy-SSE scalar float code it emits then runs with false
// dependencies on them; built with GOAMD64=v3 that made the next Go
// loops (rmsnorm) ~30× slower and a prompt's prefill 4.5×. Every
// exported kernel that may run archsimd code calls it before returning.
func clearUpper() {
	if level > levelGo {
		archsimd.ClearAVXUpperBits()
	}
}

func add16(dst, src *[GroupRows]float32) {
	switch {
	case level >= levelAVX512:
		archsimd.LoadFloat32x16(dst).Add(archsimd.LoadFloat32x16(src)).Store(dst)
	case level >= levelAVX2:
		lo, hi := (*[8]float32)(dst[:8]), (*[8]float32)(dst[8:])
		archsimd.LoadFloat32x8(lo).Add(archsimd.LoadFloat32x8((*[8]float32)(src[:8]))).Store(lo)
		archsimd.LoadFloat32x8(hi).Add(archsimd.LoadFloat32x8((*[8]float32)(src[8:]))).Store(hi)
	default:
		for i := range dst {
			dst[i] += src[i]
		}
	}
}
