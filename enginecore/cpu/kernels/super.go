package kernels

import (
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// The super-block form: how Q4_K matrices multiply precise tokens.
//
// A precise token's activations are quantized per 256-element
// super-block, in superLevels int8 rows: level 0 is round(x/d₀), level 1
// quantizes what level 0 left (x − d₀·q₀) with its own scale, so that
// x ≈ d₀·q₀ + d₁·q₁ to about 15 bits of the super-block's largest
// element. With one activation scale per super-block, Q4_K's 6-bit
// sub-block scales and mins stay integers across it: per level row and
// output row,
//
//	I1 = Σⱼ scⱼ·Cⱼ, Cⱼ = Σ over block j of w·q   (exact int32)
//	I2 = Σⱼ mⱼ·Sⱼ,  Sⱼ = Σ over block j of q     (exact int32)
//	acc = fma(float(I1), d·xd, acc); acc = fma(float(I2), (−dmin)·xd, acc)
//
// once per super-block instead of twice per 32 elements, and a token's
// output is y₀ + y₁. AMX folds scⱼ = 8·hi + lo into the weight tiles
// (hi·w and lo·w fit a byte), so a super-block is eight full tile
// products and one float epilogue per token (superTiles); every other
// level runs one 256-bit kernel (superRowsSIMD), so that all of them give
// the same bits. Tokens that are not precise keep the per-32 int8 form.
// The logits' RMS error against the float64 oracle on SmolLM2-135M's
// real weights (docs/architecture.md): 3.8e-2 at int8 per 32, 1.9e-4
// with the residual per 32, 4.9e-4 with two levels per 256 (1.2e-6 with
// three, for half again the work: superLevels).

// superLevels is the int8 rows of a precise token in the super form (a
// third would take the error from ~5e-4 to ~1e-6 for 1.5× the work).
const superLevels = 2

// superCPU says whether precise Q4_K tokens take the super form on this
// machine: where the CPU has AMX tiles, whatever level TANDEM_CPU_KERNELS
// caps the kernels at, so that every level still gives the same bits.
// Without tiles the residual rows' four-token VNNI and AVX2 kernels are
// faster (the super form's row kernel is 3× slower there),
// and a precise token keeps the residual form. Tests set it.
var superCPU = hasAMX

// superForm reports whether m multiplies precise tokens in the super form.
func (m *Matrix) superForm() bool {
	return superCPU && m.Type == model.Q4_K && m.nb > 0 && m.nb%8 == 0
}

// SuperForm reports whether m multiplies precise tokens in the super form
// (else, if quantized, in residual rows): see Activations.ResetForms.
func (m *Matrix) SuperForm() bool { return m.superForm() }

// superScales returns m's compact Q4_K scales (scales.k's layout): the
// packing's own at the VNNI level and above, else the copy Pack keeps.
func (m *Matrix) superScales() []byte {
	if m.sc.k != nil {
		return m.sc.k
	}
	return m.kint
}

// superRows is the number of super-form rows: superLevels per precise
// token, level by level.
func (a *Activations) superRows() int {
	if a.noSuper {
		return 0
	}
	return superLevels * len(a.resOf)
}

// resetSuper sizes the super-form buffers for the precise tokens.
func (a *Activations) resetSuper() {
	n := a.superRows()
	if n == 0 {
		return
	}
	in := a.In
	a.kq = grow(a.kq, n*in)
	a.kd = grow(a.kd, n*in/256)
	a.ks = grow(a.ks, n*in/32)
	a.kr = grow(a.kr, len(a.resOf)*in)
	if a.tiledSuper() {
		a.kdT = grow(a.kdT, n/tileRows*tileRows*in/256)
		a.ksT = grow(a.ksT, n/tileRows*tileRows*in/64)
	}
}

// tiledSuper reports whether the super rows run in AMX tiles.
func (a *Activations) tiledSuper() bool { return level >= levelAMX && a.superRows() >= tileRows }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantizeSuper quantizes precise token k's super-form rows (rows k,
// P+k, … of kq: one per level) from x [In].
func (a *Activations) quantizeSuper(x []float32, k int) {
	in, p := a.In, len(a.resOf)
	nsb := in / 256
	r := a.kr[k*in : (k+1)*in]
	copy(r, x)
	for l := range superLevels {
		row := l*p + k
		for sb := range nsb {
			rs := (*[256]float32)(r[256*sb:])
			qs := (*[256]int8)(a.kq[row*in+256*sb:])
			sums := (*[8]int16)(a.ks[row*in/32+8*sb:])
			a.kd[row*nsb+sb] = quantizeSuperBlock(rs, qs, sums)
		}
	}
	if !a.tiledSuper() {
		return
	}
	// Tiles: [tile][super-block][16] scales and [tile][super-block][16]
	// [4] sums of block pairs (S₂ᵢ | S₂ᵢ₊₁<<16), for the rows in whole tiles.
	whole := a.superRows() / tileRows * tileRows
	for l := range superLevels {
		row := l*p + k
		if row >= whole {
			continue
		}
		t, i := row/tileRows, row%tileRows
		for sb := range nsb {
			a.kdT[(t*nsb+sb)*tileRows+i] = a.kd[row*nsb+sb]
			for pr := range 4 {
				s := a.ks[row*in/32+8*sb+2*pr:]
				a.ksT[((t*nsb+sb)*tileRows+i)*4+pr] = int32(uint16(s[0])) | int32(s[1])<<16
			}
		}
	}
}

// quantizeSuperBlock quantizes r (one super-block) to q = round(r/d), d =
// max|r|/127, with each block's Σq in sums, leaves r − d·q in r (each
// product rounded to float32, then the difference) and returns d. The
// SIMD version (quantizeSuperSIMD) gives the same bits.
func quantizeSuperBlock(r *[256]float32, q *[256]int8, sums *[8]int16) float32 {
	if d, ok := quantizeSuperSIMD(r, q, sums); ok {
		return d
	}
	return quantizeSuperGo(r, q, sums)
}

func quantizeSuperGo(r *[256]float32, q *[256]int8, sums *[8]int16) float32 {
	d, id := int8Scale(r[:])
	for j := range 8 {
		var s int32
		for i := 32 * j; i < 32*j+32; i++ {
			v := roundInt(float32(r[i] * id))
			q[i] = int8(v)
			s += v
			r[i] -= float32(d * float32(v))
		}
		sums[j] = int16(s)
	}
	return d
}

// storeSuper puts super row i's 16 results of group g into out: level 0
// replaces the token's output (the per-32 kernels' value, if any), later
// levels add to it in order (((y₀ + y₁) + …)).
func (m *Matrix) storeSuper(out []float32, a *Activations, i, g int, res *[GroupRows]float32) {
	p := len(a.resOf)
	t := int(a.resOf[i%p])
	r0 := g * GroupRows
	n := min(GroupRows, m.Out-r0)
	dst := out[t*m.Out+r0 : t*m.Out+r0+n]
	switch {
	case i < p:
		copy(dst, res[:n])
	case n == GroupRows:
		add16((*[GroupRows]float32)(dst), res)
	default:
		for j := range dst {
			dst[j] += res[j]
		}
	}
}

// mulSuper computes the precise tokens' outputs of groups [g0, g1) in the
// super form, after the per-32 kernels have run.
func (m *Matrix) mulSuper(out []float32, a *Activations, g0, g1 int) {
	n := a.superRows()
	if n == 0 {
		return
	}
	simd := level >= m.packLevel() && level > levelGo && superSIMD()
	i0 := 0
	if simd {
		i0 = m.superTiles(out, a, g0, g1)
	}
	p := len(a.resOf)
	var res, res1 [GroupRows]float32
	for g := g0; g < g1; g++ {
		for i := i0; i < n; i++ {
			switch {
			case !simd:
				m.superRowGo(a, i, g, &res)
			case superLevels == 2 && i < p:
				// A token's two levels at once (rows are level by level,
				// so level 0 is stored first).
				m.superRowsSIMD(a, i, i+p, g, &res, &res1)
				m.storeSuper(out, a, i, g, &res)
				m.storeSuper(out, a, i+p, g, &res1)
				continue
			case superLevels == 2 && i-p >= i0:
				continue // done with its level 0
			default:
				m.superRowsSIMD(a, i, i, g, &res, &res1)
			}
			m.storeSuper(out, a, i, g, &res)
		}
	}
}

// superRowGo is the pure-Go super-form kernel: row i of a's super rows
// times group g.
func (m *Matrix) superRowGo(a *Activations, i, g int, res *[GroupRows]float32) {
	in, nb := m.In, m.nb
	k := m.superScales()[g*nb*kBlockBytes : (g+1)*nb*kBlockBytes]
	x := a.kq[i*in : (i+1)*in]
	var acc [GroupRows]float32
	for sb := range nb / 8 {
		var i1, i2 [GroupRows]int32
		for j := 8 * sb; j < 8*sb+8; j++ {
			blk := (*[nibBlockBytes]byte)(m.qs[(g*nb+j)*nibBlockBytes:])
			s := int32(a.ks[i*in/32+j])
			for r := range GroupRows {
				var c int32
				for c4 := range 4 {
					b := (*[4]byte)(blk[c4*64+4*r:])
					for e := range 4 {
						c += int32(b[e]&0xf)*int32(x[32*j+4*c4+e]) + int32(b[e]>>4)*int32(x[32*j+16+4*c4+e])
					}
				}
				i1[r] += int32(k[j*32+r]) * c
				i2[r] += int32(k[j*32+16+r]) * s
			}
		}
		xd := a.kd[i*(nb/8)+sb]
		sbk := k[nb*32+sb*64:]
		for r := range GroupRows {
			d, dmin := half(sbk[2*r:]), half(sbk[32+2*r:])
			acc[r] = float32(math.FMA(float64(float32(i1[r])), float64(d*xd), float64(acc[r])))
			acc[r] = float32(math.FMA(float64(float32(i2[r])), float64(-dmin*xd), float64(acc[r])))
		}
	}
	*res = acc
}
