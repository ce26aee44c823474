//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// The super form's row kernel in archsimd: the test reference for the
// assembly (super_amd64.s), which must give its bits. It is not used
// outside tests: Go compiles its spills and shift count to legacy-SSE
// moves, each an SSE/AVX state transition, and it runs ~500× slower.

func init() { superRowReference = (*Matrix).superRowArchsimd }

// superRowArchsimd is row i of a's super rows times group g, rows 0–7 and
// 8–15 of the group in two 256-bit halves; no scalar float code runs
// between its vector code.
func (m *Matrix) superRowArchsimd(a *Activations, i, g int, res *[GroupRows]float32) {
	in, nb := m.In, m.nb
	k := m.superScales()[g*nb*kBlockBytes : (g+1)*nb*kBlockBytes]
	qs := m.qs[g*nb*nibBlockBytes : (g+1)*nb*nibBlockBytes]
	x := a.kq[i*in : (i+1)*in]
	sums := a.ks[i*in/32 : (i+1)*in/32]
	xds := a.kd[i*(nb/8) : (i+1)*(nb/8)]
	mask := archsimd.BroadcastUint8x32(0x0f)
	ones := archsimd.BroadcastInt16x16(1)
	var accA, accB archsimd.Float32x8
	for sb := range nb / 8 {
		var i1A, i1B, i2A, i2B archsimd.Int32x8
		for j := 8 * sb; j < 8*sb+8; j++ {
			w := (*[nibBlockBytes]byte)(qs[j*nibBlockBytes:])
			xw := (*[8]int32)(unsafe.Pointer((*[32]int8)(x[32*j:])))
			var sA, sB archsimd.Int16x16
			for c := range 4 {
				bl, bh := bcast4x32(xw[c]), bcast4x32(xw[4+c])
				va := archsimd.LoadUint8x32((*[32]uint8)(w[c*64:]))
				vb := archsimd.LoadUint8x32((*[32]uint8)(w[c*64+32:]))
				sA = sA.Add(va.And(mask).DotProductPairsSaturated(bl)).
					Add(va.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(mask).DotProductPairsSaturated(bh))
				sB = sB.Add(vb.And(mask).DotProductPairsSaturated(bl)).
					Add(vb.AsUint16x16().ShiftAllRight(4).AsUint8x32().And(mask).DotProductPairsSaturated(bh))
			}
			// This block's 16 scales, then 16 mins (8 bytes past them are
			// read and dropped: ExtendLo8 loads 16).
			kj := (*[40]byte)(k[j*32:])
			scA := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&kj[0]))).ExtendLo8ToInt32()
			scB := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&kj[8]))).ExtendLo8ToInt32()
			mnA := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&kj[16]))).ExtendLo8ToInt32()
			mnB := archsimd.LoadInt8x16((*[16]int8)(unsafe.Pointer(&kj[24]))).ExtendLo8ToInt32()
			s := archsimd.BroadcastInt32x8(int32(sums[j]))
			i1A = i1A.Add(sA.DotProductPairs(ones).Mul(scA))
			i1B = i1B.Add(sB.DotProductPairs(ones).Mul(scB))
			i2A = i2A.Add(mnA.Mul(s))
			i2B = i2B.Add(mnB.Mul(s))
		}
		sbk := (*[32]uint16)(unsafe.Pointer(&k[nb*32+sb*64])) // d [16] then dmin [16], float16
		xd := archsimd.BroadcastFloat32x8(xds[sb])
		neg := archsimd.BroadcastUint32x8(0x80000000)
		dA, dB := half8(sbk[0:]), half8(sbk[8:])
		mA := half8(sbk[16:]).AsUint32x8().Xor(neg).AsFloat32x8()
		mB := half8(sbk[24:]).AsUint32x8().Xor(neg).AsFloat32x8()
		accA = i1A.ConvertToFloat32().MulAdd(dA.Mul(xd), accA)
		accA = i2A.ConvertToFloat32().MulAdd(mA.Mul(xd), accA)
		accB = i1B.ConvertToFloat32().MulAdd(dB.Mul(xd), accB)
		accB = i2B.ConvertToFloat32().MulAdd(mB.Mul(xd), accB)
	}
	accA.Store((*[8]float32)(res[0:]))
	accB.Store((*[8]float32)(res[8:]))
	clearUpper()
}

// half8 converts 8 float16 (bits) to float32 exactly (zeros, normals and
// subnormals), as scales.load8 and VCVTPH2PS do.
func half8(h []uint16) archsimd.Float32x8 {
	v := archsimd.LoadUint16x8((*[8]uint16)(h)).ExtendToUint32()
	mag := v.And(archsimd.BroadcastUint32x8(0x7fff)).ShiftAllLeft(13).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(0x1p112))
	return mag.AsUint32x8().Or(v.And(archsimd.BroadcastUint32x8(0x8000)).ShiftAllLeft(16)).AsFloat32x8()
}
