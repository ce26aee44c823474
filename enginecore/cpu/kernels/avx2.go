//go:build goexperiment.simd && amd64

package kernels

// AVX2 + FMA kernels (256-bit), for CPUs and VMs without usable AVX-512
// (some hypervisors list the flags but leave the ZMM state off, and Go
// then reports no AVX-512). Same packed layouts and integer sums as the
// AVX-512 kernels; a 64-byte chunk of a 16-row group is read as two
// halves, rows 0–7 and 8–15. The 4-bit and Q8_0 matmuls run in
// assembly (avx2_amd64.s); F32, Q5_K and Q6_K in archsimd, one token at
// a time. Activations are quantized by the pure-Go quantizer. Checked like
// the others by the tests, which run every level the CPU has.

import (
	"simd/archsimd"
	"unsafe"
)

var hasF16C = cpuF16C()

// avx2Asm enables the assembly kernels at the AVX2 level (tests turn it
// off to compare them with the archsimd ones).
var avx2Asm = true

// cpuF16C reports whether the CPU converts float16 (VCVTPH2PS).
func cpuF16C() bool

// kquantBytes reports a Q6_K, Q5_K or Q5_1 matrix (float32 scales, see
// Pack).
func (m *Matrix) kquantBytes() bool {
	return m.fam == famByte && m.sc.h == nil && (m.nsub == 2) != m.hasMin
}

// asmAVXVNNI reports whether m's AVX2 assembly has an AVX-VNNI variant:
// the 4-bit and Q8_0 (and Q5_0) kernels.
func (m *Matrix) asmAVXVNNI() bool {
	return m.asm256() && (m.fam == famNib || !m.kquantBytes())
}

// asm256 reports whether m's matmuls have AVX2 assembly kernels: 4-bit
// matrices (float16 scales need F16C), Q8_0 and Q5_0, Q6_K, Q5_K and
// Q5_1.
func (m *Matrix) asm256() bool {
	f16 := m.sc.h != nil
	return avx2Asm && m.nb > 0 && (m.fam == famNib && (!f16 || hasF16C) ||
		m.fam == famByte && m.nsub == 1 && !m.hasMin && f16 && hasF16C || m.kquantBytes())
}

// mulGroupsAVX2 mirrors mulGroupsSIMD at 256 bits, for rows from t0: 4-bit matrices (either
// scale width) and Q8_0 go through the assembly kernels (avx2_amd64.s),
// four tokens at a time and then one; the rest through archsimd.
func (m *Matrix) mulGroupsAVX2(out []float32, a *Activations, g0, g1, t0 int) {
	var res [GroupRows]float32
	var res4 [4][GroupRows]float32
	if m.fam == famLUT {
		if m.sc.h == nil && avx2Asm && m.rows(a)-t0 < 4 { // no four-token kernel to feed: straight from the indices
			m.lutRows1(out, a, g0, g1, t0, &res)
			return
		}
		// Each group expanded to the byte layout first.
		s := lutScratchPool.Get().(*lutScratch)
		defer lutScratchPool.Put(s)
		v := m.lutView()
		for g := g0; g < g1; g++ {
			qs, sc := m.expandGroup(g, s)
			m.groupAVX2(&v, qs, sc, out, a, g, t0, &res, &res4)
		}
		return
	}
	nb, spb := m.nb, m.scPerBlock()
	blockBytes := nibBlockBytes
	if m.fam == famByte {
		blockBytes = byteBlockBytes
	}
	for g := g0; g < g1; g++ {
		var qs []byte
		var sc scales
		if m.fam != famF32 {
			qs, sc = m.qs[g*nb*blockBytes:(g+1)*nb*blockBytes], m.sc.slice(g*nb*spb, (g+1)*nb*spb)
		}
		m.groupAVX2(m, qs, sc, out, a, g, t0, &res, &res4)
	}
}

// groupAVX2 computes rows from t0 of a for group g of m, whose quants
// and scales are qs and sc in the layout of k (m itself, or the byte
// layout a famLUT group expands to).
func (m *Matrix) groupAVX2(k *Matrix, qs []byte, sc scales, out []float32, a *Activations, g, t0 int, res *[GroupRows]float32, res4 *[4][GroupRows]float32) {
	in, nb := m.In, m.nb
	rows := m.rows(a)
	f16, kq, asm := k.sc.h != nil, k.kquantBytes(), k.asm256()
	vnni := level == levelAVXVNNI && k.asmAVXVNNI()
	small := int(m.Type) < len(sums16) && sums16[m.Type] // the K-quant kernels' int16 sums (bytek_amd64.s)
	t := t0
	for ; asm && t+4 <= rows; t += 4 {
		if k.fam == famNib {
			xq, xd, xs := a.q[t*in:(t+4)*in], a.d[t*nb:(t+4)*nb], a.s[t*nb:(t+4)*nb]
			for half := range 2 {
				if f16 {
					switch {
					case vnni && sc.noM:
						nibGroup4AVXVNNIQ(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
					case vnni:
						nibGroup4AVXVNNIH(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
					case sc.noM:
						nibGroup4AVX2Q(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
					default:
						nibGroup4AVX2H(&qs[0], &sc.h[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
					}
				} else if vnni {
					nibGroup4AVXVNNIF(&qs[0], &sc.f[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
				} else {
					nibGroup4AVX2F(&qs[0], &sc.f[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
				}
			}
		} else {
			// The AVX2 kernels read the signed q rows, AVX-VNNI's |q| and
			// the sign rows.
			xa, xm, xq := a.qa[t*in:(t+4)*in], a.qm[t*in:(t+4)*in], a.q[t*in:(t+4)*in]
			xd, xs := a.d[t*nb:(t+4)*nb], a.s[t*nb:(t+4)*nb]
			for half := range 2 {
				switch {
				case !kq && vnni:
					byteGroup4Q8AVXVNNI(&qs[0], &sc.h[0], &xa[0], &xm[0], in, &xd[0], nb, res4, half)
				case !kq:
					byteGroup4Q8AVX2(&qs[0], &sc.h[0], &xa[0], &xq[0], in, &xd[0], nb, res4, half)
				case k.hasMin:
					byteGroup4Q5AVX2(&qs[0], &sc.f[0], &xa[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
				case small:
					byteGroup4Q6SAVX2(&qs[0], &sc.f[0], &xa[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
				default:
					byteGroup4Q6AVX2(&qs[0], &sc.f[0], &xa[0], &xq[0], in, &xd[0], &xs[0], nb, res4, half)
				}
			}
		}
		for i := range 4 {
			m.store(out, a, t+i, g, &res4[i])
		}
	}
	for ; t < rows; t++ {
		switch {
		case k.fam == famF32:
			f32Group256(m.f[g*in*GroupRows:(g+1)*in*GroupRows], a.X[t*in:(t+1)*in], res)
		case k.fam == famNib && asm:
			xq, xd, xs := a.q[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb]
			switch {
			case f16 && vnni && sc.noM:
				nibGroup1AVXVNNIQ(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, res)
			case f16 && vnni:
				nibGroup1AVXVNNIH(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, res)
			case f16 && sc.noM:
				nibGroup1AVX2Q(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, res)
			case f16:
				nibGroup1AVX2H(&qs[0], &sc.h[0], &xq[0], &xd[0], &xs[0], nb, res)
			case vnni:
				nibGroup1AVXVNNIF(&qs[0], &sc.f[0], &xq[0], &xd[0], &xs[0], nb, res)
			default:
				nibGroup1AVX2F(&qs[0], &sc.f[0], &xq[0], &xd[0], &xs[0], nb, res)
			}
		case k.fam == famNib:
			nibGroup256(qs, sc, a.q[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb], res)
		case asm && kq:
			xa, xm, xd, xs := a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb]
			if k.hasMin {
				byteGroup1Q5AVX2(&qs[0], &sc.f[0], &xa[0], &xm[0], &xd[0], &xs[0], nb, res)
			} else {
				byteGroup1Q6AVX2(&qs[0], &sc.f[0], &xa[0], &xm[0], &xd[0], &xs[0], nb, res)
			}
		case asm: // Q8_0
			xa, xm, xd := a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb]
			if vnni {
				byteGroup1Q8AVXVNNI(&qs[0], &sc.h[0], &xa[0], &xm[0], &xd[0], nb, res)
			} else {
				byteGroup1Q8AVX2(&qs[0], &sc.h[0], &xa[0], &xm[0], &xd[0], nb, res)
			}
		default:
			byteGroup256(qs, sc, k.nsub, k.hasMin, a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb], res)
		}
		m.store(out, a, t, g, res)
	}
}

// The assembly kernels (avx2_amd64.s): nibGroup*AVX2H/F for float16 or
// float32 scales, qs [nb][256], sc [nb][2][16], xq [4][in] (one row for
// the one-token kernels), xd, xs [4][nb]; byteGroup*Q8AVX2 for Q8_0, qs
// [nb][512], sc [nb][16] float16, xd [4][nb]. The one-token byte
// kernels read |q| at xa and the sign rows xm; the four-token ones the
// signed q rows xq (xa only locates the rows: the frame is the AVX-VNNI
// kernels', which read xa and xm). The four-token kernels fill rows
// 8·half to 8·half+7 of res.

//go:noescape
func nibGroup4AVX2H(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup4AVX2F(qs *byte, sc *float32, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup1AVX2H(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

// nibGroup4AVX2Q and nibGroup1AVX2Q are the float16 kernels for Q4_0's
// scales (D only; M = D·(-8)).
//
//go:noescape
func nibGroup4AVX2Q(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup1AVX2Q(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func nibGroup1AVX2F(qs *byte, sc *float32, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func byteGroup4Q8AVX2(qs *byte, sc *uint16, xa *uint8, xq *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func byteGroup1Q8AVX2(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)

// byteGroup*Q6AVX2 and byteGroup*Q5AVX2: Q6_K and Q5_K, float32 scales sc
// [nb][nsub][16] (then M [nb][16] for Q5_K), xs [4][nb] (unread for Q6_K);
// the four-token ones (bytek_amd64.s) with int16 sums where |w| ≤ 32
// (byteGroup4Q6SAVX2; byteGroup4Q5AVX2's types all are).

//go:noescape
func byteGroup4Q6AVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func byteGroup4Q6SAVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func byteGroup4Q5AVX2(qs *byte, sc *float32, xa *uint8, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func byteGroup1Q6AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func byteGroup1Q5AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

// load8 loads scales [i, i+8) as float32 (see load16).
func (s scales) load8(i int) archsimd.Float32x8 {
	if s.h == nil {
		return archsimd.LoadFloat32x8((*[8]float32)(s.f[i:]))
	}
	h := archsimd.LoadUint16x8((*[8]uint16)(s.h[i:])).ExtendToUint32()
	mag := h.And(archsimd.BroadcastUint32x8(0x7fff)).ShiftAllLeft(13).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(0x1p112))
	return mag.AsUint32x8().Or(h.And(archsimd.BroadcastUint32x8(0x8000)).ShiftAllLeft(16)).AsFloat32x8()
}

// nibDM8 loads D and M of rows [r0, r0+8) of block j of a 4-bit group's
// scales.
func (s scales) nibDM8(j, r0 int) (d, m archsimd.Float32x8) {
	o := j*s.nibStride() + r0
	d = s.load8(o)
	if s.noM {
		return d, d.Mul(archsimd.BroadcastFloat32x8(-8))
	}
	return d, s.load8(o + GroupRows)
}

func bcast4x32(v int32) archsimd.Int8x32 { return archsimd.BroadcastInt32x8(v).AsInt8x32() }

// f32Group256: two chains over i mod 2 per half, like f32Group1.
func f32Group256(w, x []float32, res *[GroupRows]float32) {
	var a0, a1, b0, b1 archsimd.Float32x8
	w = w[:len(x)*GroupRows]
	i := 0
	for ; i+2 <= len(x); i += 2 {
		ww := (*[2 * GroupRows]float32)(w[i*GroupRows:])
		x0, x1 := archsimd.BroadcastFloat32x8(x[i]), archsimd.BroadcastFloat32x8(x[i+1])
		a0 = archsimd.LoadFloat32x8((*[8]float32)(ww[0:])).MulAdd(x0, a0)
		b0 = archsimd.LoadFloat32x8((*[8]float32)(ww[8:])).MulAdd(x0, b0)
		a1 = archsimd.LoadFloat32x8((*[8]float32)(ww[16:])).MulAdd(x1, a1)
		b1 = archsimd.LoadFloat32x8((*[8]float32)(ww[24:])).MulAdd(x1, b1)
	}
	if i < len(x) {
		xi := archsimd.BroadcastFloat32x8(x[i])
		a0 = archsimd.LoadFloat32x8((*[8]float32)(w[i*GroupRows:])).MulAdd(xi, a0)
		b0 = archsimd.LoadFloat32x8((*[8]float32)(w[i*GroupRows+8:])).MulAdd(xi, b0)
	}
	a0.Add(a1).Store((*[8]float32)(res[0:]))
	b0.Add(b1).Store((*[8]float32)(res[8:]))
}

func nibGroup256(qs []byte, sc scales, xq []int8, xd, xs []float32, res *[GroupRows]float32) {
	mask := archsimd.BroadcastUint8x32(0x0f)
	ones := archsimd.BroadcastInt16x16(1)
	var accA, accB archsimd.Float32x8
	nb := len(xd)
	qs, xq, xs = qs[:nb*nibBlockBytes], xq[:nb*32], xs[:nb]
	for j := range nb {
		w := (*[nibBlockBytes]byte)(qs[j*nibBlockBytes:])
		x := (*[8]int32)(unsafe.Pointer((*[32]int8)(xq[j*32:])))
		var sA, sB archsimd.Int16x16
		for c := range 4 {
			bl, bh := bcast4x32(x[c]), bcast4x32(x[4+c])
			va := archsimd.LoadUint8x32((*[32]uint8)(w[c*64:]))
			vb := archsimd.LoadUint8x32((*[32]uint8)(w[c*64+32:]))
			sA = sA.Add(va.And(mask).DotProductPairsSaturated(bl)).
				Add(va.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(mask).DotProductPairsSaturated(bh))
			sB = sB.Add(vb.And(mask).DotProductPairsSaturated(bl)).
				Add(vb.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(mask).DotProductPairsSaturated(bh))
		}
		dx, sx := archsimd.BroadcastFloat32x8(xd[j]), archsimd.BroadcastFloat32x8(xs[j])
		dA, mA := sc.nibDM8(j, 0)
		dB, mB := sc.nibDM8(j, 8)
		accA = sA.DotProductPairs(ones).ConvertToFloat32().MulAdd(dA.Mul(dx), accA)
		accA = mA.MulAdd(sx, accA)
		accB = sB.DotProductPairs(ones).ConvertToFloat32().MulAdd(dB.Mul(dx), accB)
		accB = mB.MulAdd(sx, accB)
	}
	accA.Store((*[8]float32)(res[0:]))
	accB.Store((*[8]float32)(res[8:]))
}

// byteChunk256 is byteChunk for 8 rows.
func byteChunk256(w *[32]int8, a archsimd.Uint8x32, m archsimd.Int8x32, ones archsimd.Int16x16) archsimd.Int32x8 {
	b := archsimd.LoadInt8x32(w).Xor(m).Sub(m)
	return a.DotProductPairsSaturated(b).DotProductPairs(ones)
}

func byteGroup256(qs []byte, sc scales, nsub int, hasMin bool, xa []uint8, xm []int8, xd, xs []float32, res *[GroupRows]float32) {
	ones := archsimd.BroadcastInt16x16(1)
	var accA, accB archsimd.Float32x8
	nb := len(xd)
	spb := nsub * GroupRows
	if hasMin {
		spb *= 2
	}
	qs, xa, xm, xs = qs[:nb*byteBlockBytes], xa[:nb*32], xm[:nb*32], xs[:nb]
	for j := range nb {
		w := (*[byteBlockBytes]int8)(unsafe.Pointer((*[byteBlockBytes]byte)(qs[j*byteBlockBytes:])))
		xa4 := (*[8]int32)(unsafe.Pointer((*[32]uint8)(xa[j*32:])))
		xm4 := (*[8]int32)(unsafe.Pointer((*[32]int8)(xm[j*32:])))
		dx := archsimd.BroadcastFloat32x8(xd[j])
		var sA, sB [2]archsimd.Int32x8 // per sub-block of 16 (nsub 2) or halves of one (nsub 1)
		for c := range 8 {
			a, m := bcast4x32(xa4[c]).AsUint8x32(), bcast4x32(xm4[c])
			sA[c/4] = sA[c/4].Add(byteChunk256((*[32]int8)(w[c*64:]), a, m, ones))
			sB[c/4] = sB[c/4].Add(byteChunk256((*[32]int8)(w[c*64+32:]), a, m, ones))
		}
		o := j * spb
		if nsub == 1 {
			accA = sA[0].Add(sA[1]).ConvertToFloat32().MulAdd(sc.load8(o).Mul(dx), accA)
			accB = sB[0].Add(sB[1]).ConvertToFloat32().MulAdd(sc.load8(o+8).Mul(dx), accB)
		} else {
			accA = sA[0].ConvertToFloat32().MulAdd(sc.load8(o).Mul(dx), accA)
			accB = sB[0].ConvertToFloat32().MulAdd(sc.load8(o+8).Mul(dx), accB)
			accA = sA[1].ConvertToFloat32().MulAdd(sc.load8(o+GroupRows).Mul(dx), accA)
			accB = sB[1].ConvertToFloat32().MulAdd(sc.load8(o+GroupRows+8).Mul(dx), accB)
		}
		if hasMin {
			sx := archsimd.BroadcastFloat32x8(xs[j])
			accA = sc.load8(o+nsub*GroupRows).MulAdd(sx, accA)
			accB = sc.load8(o+nsub*GroupRows+8).MulAdd(sx, accB)
		}
	}
	accA.Store((*[8]float32)(res[0:]))
	accB.Store((*[8]float32)(res[8:]))
}

// The AVX-VNNI variants of the 4-bit and Q8_0 kernels (avx2_amd64.s).
//
//go:noescape
func nibGroup4AVXVNNIH(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup4AVXVNNIQ(qs *byte, sc *uint16, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup4AVXVNNIF(qs *byte, sc *float32, xq *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func nibGroup1AVXVNNIH(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func nibGroup1AVXVNNIQ(qs *byte, sc *uint16, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func nibGroup1AVXVNNIF(qs *byte, sc *float32, xq *int8, xd, xs *float32, nb int, res *[GroupRows]float32)

//go:noescape
func byteGroup4Q8AVXVNNI(qs *byte, sc *uint16, xa *uint8, xm *int8, in int, xd *float32, nb int, res *[4][GroupRows]float32, half int)

//go:noescape
func byteGroup1Q8AVXVNNI(qs *byte, sc *uint16, xa *uint8, xm *int8, xd *float32, nb int, res *[GroupRows]float32)

// lutRows1 computes rows [t0, rows) of a, one at a time, for groups
// [g0, g1) of a famLUT matrix with float32 scales (IQ4_XS: one per 32;
// Q3_K: two) or E8M0 ones (MXFP4), in byteGroup1LUTAVX2,
// byteGroup1LUT2AVX2 or byteGroup1LUTEAVX2: the bits of the byte kernel
// on the expanded group.
func (m *Matrix) lutRows1(out []float32, a *Activations, g0, g1, t0 int, res *[GroupRows]float32) {
	in, nb, rows, table, sub := m.In, m.nb, m.rows(a), lutTables[m.Type], m.lutSub()
	for g := g0; g < g1; g++ {
		qs, sc := m.qs[g*nb*nibBlockBytes:(g+1)*nb*nibBlockBytes], m.sc.slice(g*nb*sub*GroupRows, (g+1)*nb*sub*GroupRows)
		for t := t0; t < rows; t++ {
			xa, xm, xd := a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in], a.d[t*nb:(t+1)*nb]
			switch {
			case sc.e != nil:
				byteGroup1LUTEAVX2(&qs[0], &sc.e[0], &xa[0], &xm[0], &xd[0], table, nb, res)
			case sub == 2:
				byteGroup1LUT2AVX2(&qs[0], &sc.f[0], &xa[0], &xm[0], &xd[0], table, nb, res)
			default:
				byteGroup1LUTAVX2(&qs[0], &sc.f[0], &xa[0], &xm[0], &xd[0], table, nb, res)
			}
			m.store(out, a, t, g, res)
		}
	}
}

// byteGroup1LUTAVX2 reads sc [nb][16], one scale per 32 (used for both
// halves); byteGroup1LUT2AVX2 sc [nb][2][16], Q6_K's two;
// byteGroup1LUTEAVX2 sc [nb][16] E8M0 bytes, one per 32.
//
//go:noescape
func byteGroup1LUTAVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)

//go:noescape
func byteGroup1LUT2AVX2(qs *byte, sc *float32, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)

//go:noescape
func byteGroup1LUTEAVX2(qs *byte, sc *byte, xa *uint8, xm *int8, xd *float32, table *[16]int8, nb int, res *[GroupRows]float32)
