//go:build goexperiment.simd && amd64

package kernels

import (
	"slices"
	"sync"
	"unsafe"
)

// AMX: the prefill matmuls multiply 16 tokens by a 16-row group per
// instruction in the CPU's tile unit (Sapphire Rapids and later), with
// the float epilogue of the one-token kernels (amx_amd64.s).

// cpuAMX reports AMX-TILE and AMX-INT8 with the OS managing tile state.
func cpuAMX() bool

// hasAMX reports whether the tile unit is usable: the CPU has it and
// Linux granted this process the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), which a process must ask
// for before its first tile instruction.
var hasAMX = cpuAMX() && requestAMX()

// amxConfig and amxConfig16 are the tile configurations the kernels
// load (LDTILECFG's 64-byte layout: palette 1, then colsb [16]uint16 and
// rows [16]uint8): two sets of three tiles, C 16×64 bytes (tmm0, tmm3),
// A 16×K (tmm1, tmm4) and B K/4×64 (tmm2, tmm5), for blocks of K = 32
// and (Q6_K's scales) K = 16.
var amxConfig, amxConfig16 = tileConfig(32), tileConfig(16)

func tileConfig(k int) (c [64]byte) {
	c[0] = 1
	tile := func(t, rows, colsb int) {
		c[16+2*t], c[16+2*t+1] = byte(colsb), byte(colsb>>8)
		c[48+t] = byte(rows)
	}
	for _, set := range []int{0, 3} {
		tile(set, tileRows, 4*GroupRows)
		tile(set+1, tileRows, k)
		tile(set+2, k/4, 4*GroupRows)
	}
	return c
}

// amxScratch is a worker's buffers for the tile kernels: unpacked
// 4-bit blocks and the tiles' results, reused between matmuls.
type amxScratch struct {
	b     []byte    // [nb][512] a group's blocks as B tiles
	res   []float32 // [tiles·16][16]
	kx    []float32 // [nb][2][16] a compact group's D and M, or D₀ and D₁ (expandK)
	q6    []byte    // [nb][512] a compact Q6_K group in the byte layout (q6Group)
	tinfo []int64   // [tiles] the super kernel's tile outputs (superTiles)
}

var amxScratchPool = sync.Pool{New: func() any { return new(amxScratch) }}

// tileKernel is the signature of the AMX kernels (amx_amd64.s): one
// group (qs, sc) times tiles·16 rows of a (from row 0).
type tileKernel func(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

// tiles returns m's AMX kernel, its tile configuration and whether it
// unpacks 4-bit blocks; nil for a matrix without one (float matrices).
func (m *Matrix) tiles() (k tileKernel, cfg *[64]byte, unpack bool) {
	f16 := m.sc.h != nil
	switch {
	case m.nb == 0:
	case m.fam == famNib && f16 && m.sc.noM:
		return nibTilesAMXQ, &amxConfig, true
	case m.fam == famNib && f16:
		return nibTilesAMXH, &amxConfig, true
	case m.fam == famNib: // float32 D and M, or compact Q4_K expanded to them
		return nibTilesAMXF, &amxConfig, true
	case m.fam == famByte && m.nsub == 1 && !m.hasMin && f16:
		return q8TilesAMX, &amxConfig, false
	case m.fam == famByte && m.nsub == 1 && m.hasMin && !f16:
		return q5TilesAMX, &amxConfig, false
	case m.fam == famByte && m.nsub == 2 && !m.hasMin && !f16, m.fam == famQ6:
		return q6TilesAMX, &amxConfig16, false
	}
	return nil, nil, false
}

// mulTiles runs the rows of a that fill whole tiles (a multiple of 16
// from row 0) through m's AMX kernel for groups [g0, g1), and returns
// how many rows it did: 0 without tiles. Tiles of token rows write
// straight into out; tiles of the residual rows of consecutive tokens
// (a prompt's, all precise) add straight into those tokens' rows after;
// other tiles (mixed rows, a group cut by Out) go through a scratch and
// store.
func (m *Matrix) mulTiles(out []float32, a *Activations, g0, g1 int) int {
	if !a.tiled {
		return 0
	}
	k, cfg, unpack := m.tiles()
	if k == nil {
		return 0
	}
	in, nb, rows := m.In, m.nb, m.rows(a)
	tiles := rows / tileRows // the tiles' scales are a.Rows() apart in dT and sT
	if tiles == 0 {
		return 0
	}
	direct := min(tiles, a.NumTok/tileRows) // tiles of token rows only
	s := amxScratchPool.Get().(*amxScratch)
	defer amxScratchPool.Put(s)
	var buf *byte
	if unpack {
		s.b = slices.Grow(s.b[:0], nb*nibBlockBytes*2)[:nb*nibBlockBytes*2]
		buf = &s.b[0]
	}
	s.res = slices.Grow(s.res[:0], tiles*tileRows*GroupRows)[:tiles*tileRows*GroupRows]
	if m.sc.k != nil {
		s.kx = slices.Grow(s.kx[:0], nb*2*GroupRows)[:nb*2*GroupRows]
	}
	if m.fam == famQ6 {
		s.q6 = slices.Grow(s.q6[:0], nb*byteBlockBytes)[:nb*byteBlockBytes]
	}
	// resRun > 0: the tiled residual rows (those below tiles·16) belong to
	// consecutive tokens, so their tiles can add into the tokens' rows.
	resRun := 0
	if n := tiles*tileRows - a.NumTok; n > 0 && n <= len(a.resOf) {
		resRun = n
		for i := range n {
			if a.resOf[i] != a.resOf[0]+int32(i) {
				resRun = 0
				break
			}
		}
	}
	for g := g0; g < g1; g++ {
		qs, sc := m.blocks(g, g+1)
		if m.fam == famQ6 { // compact Q6_K: the byte layout the kernel reads
			qs = m.q6Group(g, s.q6)
		}
		if m.sc.k != nil {
			m.expandK(g, s.kx)
			sc = unsafe.Pointer(&s.kx[0])
		}
		t0 := 0
		if (g+1)*GroupRows <= m.Out && direct > 0 {
			o := out[g*GroupRows : (direct*tileRows-1)*m.Out+(g+1)*GroupRows]
			k(&cfg[0], &qs[0], sc, &a.q[0], in, &a.dT[0], &a.sT[0], 4*a.Rows(), nb, direct, buf, &o[0], 4*m.Out, 0)
			t0 = direct * tileRows
		}
		if t0 == a.NumTok && t0 < tiles*tileRows && resRun > 0 {
			// The residual rows of consecutive tokens r, r+1, …: added
			// straight into their outputs.
			r := int(a.resOf[0])
			o := out[r*m.Out+g*GroupRows : (r+tiles*tileRows-t0-1)*m.Out+(g+1)*GroupRows]
			k(&cfg[0], &qs[0], sc, &a.q[t0*in], in, &a.dT[t0], &a.sT[t0], 4*a.Rows(), nb, tiles-t0/tileRows, buf, &o[0], 4*m.Out, 1)
		} else if t0 < tiles*tileRows {
			k(&cfg[0], &qs[0], sc, &a.q[t0*in], in, &a.dT[t0], &a.sT[t0], 4*a.Rows(), nb, tiles-t0/tileRows, buf, &s.res[0], 4*GroupRows, 0)
			for t := t0; t < tiles*tileRows; t++ {
				m.store(out, a, t, g, (*[GroupRows]float32)(s.res[(t-t0)*GroupRows:]))
			}
		}
	}
	return tiles * tileRows
}

// The AMX kernels, in amx_amd64.s.
//
//go:noescape
func nibTilesAMXH(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

//go:noescape
func nibTilesAMXQ(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

//go:noescape
func nibTilesAMXF(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

//go:noescape
func q8TilesAMX(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

//go:noescape
func q5TilesAMX(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)

//go:noescape
func q6TilesAMX(cfg *byte, qs *byte, sc unsafe.Pointer, xq *int8, in int, xdT, xsT *float32, stride, nb, tiles int, buf *byte, res *float32, ldres, add int)
