//go:build goexperiment.simd && amd64

package kernels

import (
	"slices"
	"unsafe"
)

// The AVX-512 VNNI kernels (vnni_amd64.s): one token over a span of
// groups, and four tokens over one group, for every quantized type.

// vnniKind is the VNNI kernel pair of a matrix.
type vnniKind uint8

const (
	vnniNone vnniKind = iota // float matrices
	vnniNibH                 // 4-bit, float16 scales and offsets (Q4_1)
	vnniNibQ                 // 4-bit, float16 scales, offsets -8·scale (Q4_0)
	vnniNibF                 // 4-bit, float32 scales (Q4_K below the VNNI level's packing)
	vnniNibK                 // 4-bit, compact Q4_K scales (scales.k)
	vnniQ6C                  // compact Q6_K (famQ6): unpacked per group for the Q6_K kernels
	vnniQ8                   // Q8_0, Q5_0
	vnniQ5                   // Q5_K, Q5_1
	vnniQ6                   // Q6_K
)

// vnni returns m's VNNI kernels.
func (m *Matrix) vnni() vnniKind {
	f16 := m.sc.h != nil
	switch {
	case m.nb == 0:
	case m.fam == famNib && f16 && m.sc.noM:
		return vnniNibQ
	case m.fam == famNib && f16:
		return vnniNibH
	case m.fam == famNib && m.sc.k != nil:
		return vnniNibK
	case m.fam == famQ6:
		return vnniQ6C
	case m.fam == famNib:
		return vnniNibF
	case m.fam == famByte && m.nsub == 1 && !m.hasMin && f16:
		return vnniQ8
	case m.fam == famByte && m.nsub == 1 && m.hasMin && !f16:
		return vnniQ5
	case m.fam == famByte && m.nsub == 2 && !m.hasMin && !f16:
		return vnniQ6
	}
	return vnniNone
}

// mulGroupsVNNI computes rows [t0, rows) of a for groups [g0, g1) with
// the VNNI kernels: four rows at a time per group, then the rest one at
// a time, each over every whole group it stores straight into out. It
// reports false, doing nothing, for a matrix without VNNI kernels.
func (m *Matrix) mulGroupsVNNI(out []float32, a *Activations, g0, g1, t0 int) bool {
	k := m.vnni()
	if k == vnniNone {
		return false
	}
	var res [GroupRows]float32
	rows := m.rows(a)
	t4 := t0 + (rows-t0)/4*4
	switch {
	case t4 == t0:
	case k == vnniQ6C:
		m.q6Group4VNNI(out, a, g0, g1, t0, t4)
	default:
		m.group4sVNNI(k, out, a, g0, g1, t0, t4)
	}
	whole := max(g0, min(g1, m.Out/GroupRows)) // groups [g0, whole) lie inside Out
	for t := t4; t < rows; t++ {
		g := g0
		if t < a.NumTok && whole > g0 {
			o := out[t*m.Out+g0*GroupRows : t*m.Out+whole*GroupRows]
			m.rows1VNNI(k, a, g0, whole, t, &o[0])
			g = whole
		}
		for ; g < g1; g++ {
			m.rows1VNNI(k, a, g, g+1, t, &res[0])
			m.store(out, a, t, g, &res)
		}
	}
	return true
}

// group4sVNNI computes rows [t0, t4) of a, four at a time, for groups
// [g0, g1); compact Q4_K's scales are expanded to float32 once a group.
func (m *Matrix) group4sVNNI(k vnniKind, out []float32, a *Activations, g0, g1, t0, t4 int) {
	var res4 [4][GroupRows]float32
	var kx *amxScratch
	if k == vnniNibK {
		kx = amxScratchPool.Get().(*amxScratch)
		defer amxScratchPool.Put(kx)
		kx.kx = slices.Grow(kx.kx[:0], m.nb*2*GroupRows)[:m.nb*2*GroupRows]
	}
	for g := g0; g < g1; g++ {
		if kx != nil {
			m.expandK(g, kx.kx)
		}
		for t := t0; t < t4; t += 4 {
			m.group4VNNI(k, a, g, t, kx, &res4)
			for i := range 4 {
				m.store(out, a, t+i, g, &res4[i])
			}
		}
	}
}

// q6Group4VNNI computes rows [t0, t4) of a, four at a time, for groups
// [g0, g1) of compact Q6_K (famQ6): each group unpacked to the byte
// layout and its scales expanded to float32 once, for the Q6_K kernel.
func (m *Matrix) q6Group4VNNI(out []float32, a *Activations, g0, g1, t0, t4 int) {
	var res4 [4][GroupRows]float32
	s := amxScratchPool.Get().(*amxScratch)
	defer amxScratchPool.Put(s)
	in, nb := m.In, m.nb
	s.b = slices.Grow(s.b[:0], nb*byteBlockBytes)[:nb*byteBlockBytes]
	s.kx = slices.Grow(s.kx[:0], nb*2*GroupRows)[:nb*2*GroupRows]
	for g := g0; g < g1; g++ {
		qs := m.q6Group(g, s.b)
		m.expandK(g, s.kx)
		sc := unsafe.Pointer(&s.kx[0])
		for t := t0; t < t4; t += 4 {
			x, xm, xd, xs := a.qa[t*in:(t+4)*in], a.qm[t*in:(t+4)*in], a.d[t*nb:(t+4)*nb], a.s[t*nb:(t+4)*nb]
			q6Group4VNNI(&qs[0], sc, &x[0], &xm[0], in, &xd[0], &xs[0], nb, &res4)
			for i := range 4 {
				m.store(out, a, t+i, g, &res4[i])
			}
		}
	}
}

// blocks returns the packed quants and scales of groups [g0, g1).
func (m *Matrix) blocks(g0, g1 int) ([]byte, unsafe.Pointer) {
	bb, spb := m.blockBytes(), m.scPerBlock()
	qs := m.qs[g0*m.nb*bb : g1*m.nb*bb]
	switch {
	case m.sc.h != nil:
		return qs, unsafe.Pointer(&m.sc.h[g0*m.nb*spb : g1*m.nb*spb][0])
	case m.sc.k != nil:
		return qs, unsafe.Pointer(&m.sc.k[g0*m.nb*spb : g1*m.nb*spb][0])
	}
	return qs, unsafe.Pointer(&m.sc.f[g0*m.nb*spb : g1*m.nb*spb][0])
}

// rows1VNNI computes row t of a for groups [g0, g1) into out [(g1−g0)·16].
func (m *Matrix) rows1VNNI(k vnniKind, a *Activations, g0, g1, t int, out *float32) {
	in, nb := m.In, m.nb
	qs, sc := m.blocks(g0, g1)
	xd, xs := a.d[t*nb:(t+1)*nb], a.s[t*nb:(t+1)*nb]
	switch k {
	case vnniQ6C: // straight from the compact blocks
		x, hs := a.q[t*in:(t+1)*in], a.hs[2*t*nb:2*(t+1)*nb]
		q6cRows1VNNI(&qs[0], sc, &x[0], &xd[0], &hs[0], nb, g1-g0, out)
	case vnniNibH, vnniNibQ, vnniNibF, vnniNibK:
		x := a.q[t*in : (t+1)*in]
		switch k {
		case vnniNibH:
			nibRows1VNNIH(&qs[0], sc, &x[0], &xd[0], &xs[0], nb, g1-g0, out)
		case vnniNibQ:
			nibRows1VNNIQ(&qs[0], sc, &x[0], &xd[0], &xs[0], nb, g1-g0, out)
		case vnniNibK:
			nibRows1VNNIK(&qs[0], sc, &x[0], &xd[0], &xs[0], nb, g1-g0, out)
		default:
			nibRows1VNNIF(&qs[0], sc, &x[0], &xd[0], &xs[0], nb, g1-g0, out)
		}
	default:
		x, xm := a.qa[t*in:(t+1)*in], a.qm[t*in:(t+1)*in]
		switch k {
		case vnniQ8:
			q8Rows1VNNI(&qs[0], sc, &x[0], &xm[0], &xd[0], &xs[0], nb, g1-g0, out)
		case vnniQ5:
			q5Rows1VNNI(&qs[0], sc, &x[0], &xm[0], &xd[0], &xs[0], nb, g1-g0, out)
		case vnniQ6:
			q6Rows1VNNI(&qs[0], sc, &x[0], &xm[0], &xd[0], &xs[0], nb, g1-g0, out)
		}
	}
}

// expandK writes group g's compact scales as float32 into dst [nb][32],
// as the kernels compute them: Q4_K's D [16] and M [16] per block, or
// Q6_K's D₀ [16] and D₁ [16] (famQ6).
func (m *Matrix) expandK(g int, dst []float32) {
	spb := m.scPerBlock()
	k := m.sc.k[g*m.nb*spb : (g+1)*m.nb*spb]
	dst = dst[:m.nb*2*GroupRows]
	if m.fam == famQ6 {
		expandQ6(&k[0], m.nb, &dst[0])
		return
	}
	expandQ4K(&k[0], m.nb, &dst[0])
}

// q6Group is group g of a famQ6 matrix in the byte layout, unpacked into
// dst [nb][512], for the Q6_K kernels.
func (m *Matrix) q6Group(g int, dst []byte) []byte {
	dst = dst[:m.nb*byteBlockBytes]
	qs := m.qs[g*m.nb*q6BlockBytes : (g+1)*m.nb*q6BlockBytes]
	q6Unpack4(&qs[0], m.nb, &dst[0])
	return dst
}

// group4VNNI computes rows t..t+3 of a for group g into res; for
// compact Q4_K, kx holds the group's scales expanded by expandK.
func (m *Matrix) group4VNNI(k vnniKind, a *Activations, g, t int, kx *amxScratch, res *[4][GroupRows]float32) {
	in, nb := m.In, m.nb
	qs, sc := m.blocks(g, g+1)
	if k == vnniNibK {
		k, sc = vnniNibF, unsafe.Pointer(&kx.kx[0])
	}
	xd, xs := a.d[t*nb:(t+4)*nb], a.s[t*nb:(t+4)*nb]
	switch k {
	case vnniNibH, vnniNibQ, vnniNibF:
		x := a.q[t*in : (t+4)*in]
		switch k {
		case vnniNibH:
			nibGroup4VNNIH(&qs[0], sc, &x[0], in, &xd[0], &xs[0], nb, res)
		case vnniNibQ:
			nibGroup4VNNIQ(&qs[0], sc, &x[0], in, &xd[0], &xs[0], nb, res)
		default:
			nibGroup4VNNIF(&qs[0], sc, &x[0], in, &xd[0], &xs[0], nb, res)
		}
	default:
		x, xm := a.qa[t*in:(t+4)*in], a.qm[t*in:(t+4)*in]
		switch k {
		case vnniQ8:
			q8Group4VNNI(&qs[0], sc, &x[0], &xm[0], in, &xd[0], &xs[0], nb, res)
		case vnniQ5:
			q5Group4VNNI(&qs[0], sc, &x[0], &xm[0], in, &xd[0], &xs[0], nb, res)
		case vnniQ6:
			q6Group4VNNI(&qs[0], sc, &x[0], &xm[0], in, &xd[0], &xs[0], nb, res)
		}
	}
}

//go:noescape
func nibRows1VNNIH(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func nibRows1VNNIQ(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func expandQ4K(k *byte, nb int, dst *float32)

//go:noescape
func expandQ6(k *byte, nb int, dst *float32)

//go:noescape
func q6Unpack4(qs *byte, nb int, dst *byte)

//go:noescape
func q6cRows1VNNI(qs *byte, sc unsafe.Pointer, x *int8, xd *float32, hs *int32, nb, groups int, out *float32)

//go:noescape
func nibRows1VNNIK(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func nibRows1VNNIF(qs *byte, sc unsafe.Pointer, x *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func q8Rows1VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func q5Rows1VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func q6Rows1VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, xd, xs *float32, nb, groups int, out *float32)

//go:noescape
func nibGroup4VNNIH(qs *byte, sc unsafe.Pointer, x *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func nibGroup4VNNIQ(qs *byte, sc unsafe.Pointer, x *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func nibGroup4VNNIF(qs *byte, sc unsafe.Pointer, x *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func q8Group4VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func q5Group4VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)

//go:noescape
func q6Group4VNNI(qs *byte, sc unsafe.Pointer, x *uint8, xm *int8, in int, xd, xs *float32, nb int, res *[4][GroupRows]float32)
