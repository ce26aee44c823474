package kernels

import (
	"encoding/binary"
	"sync"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// famLUT keeps IQ4_NL, IQ4_XS, MXFP4 and Q3_K matrices nearly as small as
// their files: each weight its 4-bit index into the type's table of 16
// int8 values (lutTables), in famNib's layout, with one scale per 32
// (float16 where exact, IQ4_NL's; MXFP4's E8M0 byte; else float32), or
// for Q3_K one per 16 (lutSub). A matmul expands each group, as it reaches it, into the byte
// layout in a scratch buffer (expandLUT: the indices looked up, and a
// float32 scale per 32 written twice, as the two halves of Q6_K's), and
// runs the byte kernels on it: IQ4_NL Q8_0's, the others Q6_K's, which
// the byte layout (famByte) runs at every level anyway, so the results
// have the same bits; fewer than four rows with float32 scales (decode)
// skip the expansion: byteGroup1LUT*AVX2 look the indices up as they
// multiply, with the same sums. Packed, 0.53–0.75 bytes a weight instead
// of 1.06–1.25 (MXFP4 as small as its file). Pack chooses it below the AVX-512
// level (lutPacking), whose kernels read it through mulGroupsAVX2 and the
// Go ones; the AVX-512 levels keep the byte layout.

// lutTables are the value tables of the types famLUT packs.
var lutTables = map[model.DType]*[16]int8{
	model.IQ4_NL: &model.IQ4Values,
	model.IQ4_XS: &model.IQ4Values,
	model.MXFP4:  &model.MXFP4Values,
	model.Q3_K:   &q3KValues,
}

// q3KValues is Q3_K's table: index q+4 for q in [-4, 3].
var q3KValues = [16]int8{-4, -3, -2, -1, 0, 1, 2, 3}

// lutSub is a famLUT matrix's scales per 32-element block: Q3_K's are
// per 16 (D = d·(scale−32), as its byte layout has them), the others'
// per 32.
func (m *Matrix) lutSub() int {
	if m.Type == model.Q3_K {
		return 2
	}
	return 1
}

// lutPacking reports whether Pack keeps the table types' 4-bit indices
// (famLUT) at this level.
func lutPacking() bool { return level < levelAVX512 }

// packLUTFile packs t, a table type's [Out][In], into m as famLUT straight
// from the file's blocks, whose 16 index bytes already hold element i in
// the low nibble and 16+i in the high one, as famNib's rows do: the
// bytes are copied, and the scale per 32 read (IQ4_NL's float16 d as it
// is; MXFP4's E8M0 byte as it is; IQ4_XS's d·(ls−32) as float32). Q3_K's
// indices are formed (q+4 from its low and high bits) and its two
// scales per 32 read as its byte layout's.
func (m *Matrix) packLUTFile(t *model.Tensor) {
	in, out := m.In, m.Out
	groups, nb, rb := m.NumGroups(), in/32, t.Type.RowBytes(in)
	m.fam, m.nb = famLUT, nb
	sub := m.lutSub()
	m.qs = make([]byte, groups*nb*nibBlockBytes)
	switch t.Type {
	case model.IQ4_NL:
		m.sc.h = make([]uint16, groups*nb*GroupRows)
	case model.MXFP4:
		m.sc.e = make([]byte, groups*nb*GroupRows)
	default:
		m.sc.f = make([]float32, groups*nb*sub*GroupRows)
	}
	var q3 [32]int8
	var q3idx [16]byte
	for r := range out {
		g, lane := r/GroupRows, r%GroupRows
		row := t.Data[r*rb : (r+1)*rb]
		for j := range nb {
			var idx []byte
			k := (g*nb + j) * sub * GroupRows
			switch t.Type {
			case model.IQ4_NL:
				blk := row[18*j : 18*j+18]
				m.sc.h[k+lane], idx = binary.LittleEndian.Uint16(blk), blk[2:18]
			case model.IQ4_XS:
				blk := row[136*(j/8) : 136*(j/8)+136]
				m.sc.f[k+lane] = half(blk) * float32(model.IQ4XSScale(j%8, blk))
				idx = blk[8+16*(j%8) : 8+16*(j%8)+16]
			case model.MXFP4:
				blk := row[17*j : 17*j+17]
				m.sc.e[k+lane], idx = blk[0], blk[1:17]
			case model.Q3_K:
				blk := row[110*(j/8) : 110*(j/8)+110]
				dd := half(blk[108:])
				for h := range 2 {
					s := 2*(j%8) + h
					m.sc.f[k+h*GroupRows+lane] = dd * float32(model.Q3KScale(s, blk[96:108]))
					model.Q3KQuants(blk, s, (*[16]int8)(q3[16*h:]))
				}
				for i := range 16 {
					q3idx[i] = byte(q3[i]+4) | byte(q3[16+i]+4)<<4
				}
				idx = q3idx[:]
			}
			dst := m.qs[(g*nb+j)*nibBlockBytes:][:nibBlockBytes]
			for c := range 4 { // chunk c holds each row's bytes 4c..4c+3
				copy(dst[c*64+lane*4:c*64+lane*4+4], idx[4*c:4*c+4])
			}
		}
	}
}

// lutView is the famByte matrix a famLUT one expands to, for the
// kernels' choice: its float16 scales (IQ4_NL's) are m's, its quants and
// float32 ones a group's expansion (expandGroup), as group 0.
func (m *Matrix) lutView() Matrix {
	v := Matrix{In: m.In, Out: m.Out, Type: m.Type, fam: famByte, nb: m.nb, nsub: 2}
	if m.sc.h != nil {
		v.nsub, v.sc.h = 1, m.sc.h
	}
	return v
}

// lutScratch is a group expanded: qs [nb][512], and float32 scales
// [nb][2][16] (unused for float16 ones and Q3_K's).
type lutScratch struct {
	qs []byte
	sc []float32
}

var lutScratchPool = sync.Pool{New: func() any { return new(lutScratch) }}

// expandGroup writes group g of a famLUT matrix into s in the byte
// layout and returns its quants and scales as group 0 of lutView.
func (m *Matrix) expandGroup(g int, s *lutScratch) ([]byte, scales) {
	nb := m.nb
	if cap(s.qs) < nb*byteBlockBytes {
		s.qs = make([]byte, nb*byteBlockBytes)
	}
	qs := s.qs[:nb*byteBlockBytes]
	expandLUT(qs, m.qs[g*nb*nibBlockBytes:(g+1)*nb*nibBlockBytes], lutTables[m.Type])
	if m.sc.h != nil {
		return qs, scales{h: m.sc.h[g*nb*GroupRows : (g+1)*nb*GroupRows]}
	}
	if m.lutSub() == 2 { // already two per 32
		return qs, scales{f: m.sc.f[g*nb*2*GroupRows : (g+1)*nb*2*GroupRows]}
	}
	if cap(s.sc) < nb*2*GroupRows {
		s.sc = make([]float32, nb*2*GroupRows)
	}
	sc := s.sc[:nb*2*GroupRows]
	if m.sc.e != nil {
		expandScalesE8M0(sc, m.sc.e[g*nb*GroupRows:(g+1)*nb*GroupRows], nb)
	} else {
		expandScales(sc, m.sc.f[g*nb*GroupRows:(g+1)*nb*GroupRows], nb)
	}
	return qs, scales{f: sc}
}

// expandScalesGo writes each of nb blocks' 16 scales (src [nb][16])
// twice into dst [nb][2][16].
func expandScalesGo(dst, src []float32, nb int) {
	for j := range nb {
		d := src[j*GroupRows : (j+1)*GroupRows]
		copy(dst[2*j*GroupRows:], d)
		copy(dst[(2*j+1)*GroupRows:], d)
	}
}

// expandScalesE8M0Go is expandScalesGo from E8M0 bytes (src [nb][16]).
func expandScalesE8M0Go(dst []float32, src []byte, nb int) {
	for j := range nb {
		for r := range GroupRows {
			v := model.MXFP4Scale(src[j*GroupRows+r])
			dst[2*j*GroupRows+r], dst[(2*j+1)*GroupRows+r] = v, v
		}
	}
}

// expandLUTGo is expandLUT in Go: block by block, chunk c of a famNib
// block's low nibbles becomes chunk c of the byte block, its high
// nibbles chunk 4+c, each index looked up in table.
func expandLUTGo(dst, src []byte, table *[16]int8) {
	for b := range len(src) / nibBlockBytes {
		s, d := src[b*nibBlockBytes:][:nibBlockBytes], dst[b*byteBlockBytes:][:byteBlockBytes]
		for c := range 4 {
			for i := range 64 {
				v := s[c*64+i]
				d[c*64+i], d[(4+c)*64+i] = byte(table[v&15]), byte(table[v>>4])
			}
		}
	}
}

// mulLUTGo is mulGroupsGo for famLUT: each group expanded, then the byte
// family's Go kernel.
func (m *Matrix) mulLUTGo(out []float32, a *Activations, g0, g1 int) {
	s := lutScratchPool.Get().(*lutScratch)
	defer lutScratchPool.Put(s)
	var res [GroupRows]float32
	v := m.lutView()
	for g := g0; g < g1; g++ {
		v.qs, v.sc = m.expandGroup(g, s)
		for t := range m.rows(a) {
			v.byteGroupGo(a, t, 0, &res)
			m.store(out, a, t, g, &res)
		}
	}
}
