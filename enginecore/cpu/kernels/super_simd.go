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

// superSIMD reports whether the super form's SIMD kernels run: the row
// kernel converts float16 by F16C, which every CPU with AMX has.
func superSIMD() bool { return hasF16C }

// superRows2AVX2 (super_amd64.s) multiplies two super rows (x and
// x+xstep bytes, their scales xd and xd+xdstep, their block sums sums and
// sums+sstep) by one group of qs and its compact scales k, one half of
// the group (rows 8·half to 8·half+7) per call.
//
//go:noescape
func superRows2AVX2(qs *byte, k *byte, x *int8, xstep int, xd *float32, xdstep int, sums *int16, sstep int, nb, half int, res *[2][8]float32)

// superRowsSIMD computes super rows i and j of group g into res0 and
// res1 (j = i: one row, res1 unused but written), the same bits at every
// level.
func (m *Matrix) superRowsSIMD(a *Activations, i, j, g int, res0, res1 *[GroupRows]float32) {
	in, nb := m.In, m.nb
	ks := m.superScales()
	var r [2][8]float32
	for half := range 2 {
		superRows2AVX2(&m.qs[g*nb*nibBlockBytes], &ks[g*nb*kBlockBytes], &a.kq[i*in], (j-i)*in,
			&a.kd[i*(nb/8)], 4*(j-i)*(nb/8), &a.ks[i*in/32], 2*(j-i)*(in/32), nb, half, &r)
		copy(res0[8*half:8*half+8], r[0][:])
		copy(res1[8*half:8*half+8], r[1][:])
	}
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
