//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
	"slices"
	"unsafe"
)

// amxConfig64 is the tile configuration of the super form's kernel: the
// same three-tile sets as amxConfig with K = 64 (two blocks per product).
var amxConfig64 = tileConfig(64)

// superRowSIMD is the super-form kernel below AMX tiles, the same at
// every SIMD level (AVX2 and up): row i of a's super rows times group g,
// rows 0–7 and 8–15 of the group in two 256-bit halves. No scalar float
// code runs between its vector code: Go's scalar float code is legacy
// SSE, which costs a state transition while the upper halves are dirty.
func (m *Matrix) superRowSIMD(a *Activations, i, g int, res *[GroupRows]float32) {
	in, nb := m.In, m.nb
	if hasF16C && superAsm {
		k := m.superScales()
		superRowAVX2(&m.qs[g*nb*nibBlockBytes], &k[g*nb*kBlockBytes], &a.kq[i*in], &a.kd[i*(nb/8)], &a.ks[i*in/32], nb, res)
		return
	}
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

// superAsm enables superRowAVX2 (tests turn it off to compare it with the
// archsimd version).
var superAsm = true

// superRowAVX2 is superRowSIMD in assembly (super_amd64.s): qs and k the
// group's blocks and compact scales, x [nb·32] the row, xd [nb/8] its
// scales, sums [nb] its block sums.
//
//go:noescape
func superRowAVX2(qs *byte, k *byte, x *int8, xd *float32, sums *int16, nb int, res *[GroupRows]float32)

// superRows2AVX2 (super_amd64.s) is superRowAVX2 for both level rows of
// a precise token (x and x+xstep bytes, xd and xd+xdstep, sums and
// sums+sstep), one half of the group (rows 8·half to 8·half+7) per call.
//
//go:noescape
func superRows2AVX2(qs *byte, k *byte, x *int8, xstep int, xd *float32, xdstep int, sums *int16, sstep int, nb, half int, res *[2][8]float32)

// superPairs reports whether superPairSIMD runs: the pair kernel is
// assembly for two levels.
func superPairs() bool { return hasF16C && superAsm && superLevels == 2 }

// superPairSIMD computes super rows k and P+k (a precise token's two
// levels) of group g into res0 and res1 with the assembly pair kernel.
func (m *Matrix) superPairSIMD(a *Activations, k, g int, res0, res1 *[GroupRows]float32) {
	in, nb, p := m.In, m.nb, len(a.resOf)
	ks := m.superScales()
	var r [2][8]float32
	for half := range 2 {
		superRows2AVX2(&m.qs[g*nb*nibBlockBytes], &ks[g*nb*kBlockBytes], &a.kq[k*in], p*in,
			&a.kd[k*(nb/8)], 4*p*(nb/8), &a.ks[k*in/32], 2*p*(in/32), nb, half, &r)
		copy(res0[8*half:8*half+8], r[0][:])
		copy(res1[8*half:8*half+8], r[1][:])
	}
}

// half8 converts 8 float16 (bits) to float32 exactly (zeros, normals and
// subnormals), as scales.load8 and VCVTPH2PS do.
func half8(h []uint16) archsimd.Float32x8 {
	v := archsimd.LoadUint16x8((*[8]uint16)(h)).ExtendToUint32()
	mag := v.And(archsimd.BroadcastUint32x8(0x7fff)).ShiftAllLeft(13).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(0x1p112))
	return mag.AsUint32x8().Or(v.And(archsimd.BroadcastUint32x8(0x8000)).ShiftAllLeft(16)).AsFloat32x8()
}

// quantizeSuperSIMD is quantizeSuperGo in 256-bit vectors (AVX2 and up):
// the same float32 operations, rounding to even by VROUNDPS as the magic
// number does.
func quantizeSuperSIMD(r *[256]float32, q *[256]int8, sums *[8]int16) (float32, bool) {
	if level < levelAVX2 {
		return 0, false
	}
	// max|r| on the bits (non-negative floats order as their bits), so
	// that no scalar float code runs with dirty upper halves (Go's
	// scalar float code is legacy SSE): clearUpper before it.
	abs := archsimd.BroadcastUint32x8(0x7fffffff)
	var m archsimd.Uint32x8
	for i := 0; i < 256; i += 8 {
		m = m.Max(archsimd.LoadFloat32x8((*[8]float32)(r[i:])).AsUint32x8().And(abs))
	}
	var lanes [8]uint32
	m.Store(&lanes)
	clearUpper()
	var bits uint32
	for e := range lanes {
		bits = max(bits, lanes[e])
	}
	d := math.Float32frombits(bits) / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	vid, vd := archsimd.BroadcastFloat32x8(id), archsimd.BroadcastFloat32x8(d)
	var qi [8]int32
	for j := range 8 {
		var s int32
		for i := 32 * j; i < 32*j+32; i += 8 {
			x := archsimd.LoadFloat32x8((*[8]float32)(r[i:]))
			f := x.Mul(vid).RoundToEven()
			x.Sub(f.Mul(vd)).Store((*[8]float32)(r[i:]))
			f.ConvertToInt32().Store(&qi)
			for e := range qi { // not range qi: Go would copy the array with SSE moves
				q[i+e] = int8(qi[e])
				s += qi[e]
			}
		}
		sums[j] = int16(s)
	}
	clearUpper()
	return d, true
}

// superTiles runs the super rows that fill whole tiles through the AMX
// kernel for groups [g0, g1) and returns how many rows it did (0
// without AMX or with fewer than 16 rows). Where every tile holds one
// level of consecutive tokens (a prompt of a multiple of 16 tokens), the
// kernel writes the outputs itself (level 0 first, as storeSuper would);
// else its sums go through storeSuper.
func (m *Matrix) superTiles(out []float32, a *Activations, g0, g1 int) int {
	if !a.tiledSuper() {
		return 0
	}
	in, nb, p := m.In, m.nb, len(a.resOf)
	tiles := a.superRows() / tileRows
	k := m.superScales()
	s := amxScratchPool.Get().(*amxScratch)
	defer amxScratchPool.Put(s)
	s.b = slices.Grow(s.b[:0], superPrepBytes+64)[:superPrepBytes+64]
	prep := unsafe.Pointer(&s.b[0])
	prep = unsafe.Add(prep, (64-uintptr(prep)%64)%64)
	s.res = slices.Grow(s.res[:0], tiles*tileRows*GroupRows)[:tiles*tileRows*GroupRows]
	// tinfo [0, tiles): where the kernel writes each tile's rows (direct);
	// [tiles, 2·tiles): zeros, leaving every tile's sums in s.res.
	s.tinfo = slices.Grow(s.tinfo[:0], 2*tiles)[:2*tiles]
	clear(s.tinfo)
	direct := p%tileRows == 0 && int(a.resOf[p-1]-a.resOf[0]) == p-1
	for t := range tiles {
		if direct {
			l, k0 := t*tileRows/p, t*tileRows%p
			s.tinfo[t] = int64(int(a.resOf[0])+k0)*int64(m.Out)*4 | int64(min(l, 1)+1)
		}
	}
	for g := g0; g < g1; g++ {
		clear(s.res)
		own := direct && (g+1)*GroupRows <= m.Out // the kernel writes out itself
		tinfo := s.tinfo[tiles:]
		if own {
			tinfo = s.tinfo[:tiles]
		}
		superTilesAMX(&amxConfig64[0], &m.qs[g*nb*nibBlockBytes], &k[g*nb*kBlockBytes], &a.kq[0], in,
			&a.kdT[0], &a.ksT[0], nb, tiles, (*byte)(prep), &s.res[0], &out[g*GroupRows], 4*m.Out, &tinfo[0])
		if own {
			continue
		}
		for i := range tiles * tileRows {
			m.storeSuper(out, a, i, g, (*[GroupRows]float32)(s.res[i*GroupRows:]))
		}
	}
	return tiles * tileRows
}

// superPrepBytes is the AMX super kernel's weight tiles for one
// super-block: four K = 64 chunks, each a hi and a lo tile of 1 KiB.
const superPrepBytes = 4 * 2048

// superTilesAMX (super_amd64.s): one group (qs [nb][256], k its compact
// scales) times tiles·16 super rows (xq, row stride in; xdT [tiles][nb/8]
// [16] scales; xsT [tiles][nb/8][16][4] block-pair sums), accumulated into
// acc [tiles·16][16] (zeroed by the caller); prep is 64-byte-aligned
// scratch of superPrepBytes. tinfo [tiles]: where each tile's rows go in
// the end (see super_amd64.s): an offset from out, ldo bytes a row, or 0
// to leave them in acc.
//
//go:noescape
func superTilesAMX(cfg *byte, qs *byte, k *byte, xq *int8, in int, xdT *float32, xsT *int32, nb, tiles int, prep *byte, acc *float32, out *float32, ldo int, tinfo *int64)
