package kernels

// MulGroups computes out[t][r] = Σ_i W[r][i]·x[t][i] for every token t of
// a and every row r of output groups [g0, g1) (rows 16·g0 up to
// min(16·g1, Out)); out is [T][Out]. For a quantized m, a must have been
// quantized. Every output element is computed the same way whatever the
// groups, the token count or the token's place in the batch, so results
// do not depend on how work is split. It allocates nothing.
func (m *Matrix) MulGroups(out []float32, a *Activations, g0, g1 int) {
	if a.In != m.In || len(out) < a.NumTok*m.Out {
		panic("kernels: MulGroups shape mismatch")
	}
	if len(a.resOf) > 0 && m.Quantized() {
		if m.superForm() && a.noSuper || !m.superForm() && a.noResidual {
			panic("kernels: MulGroups: the activations lack the precise form " + m.Type.String() + " reads (ResetForms)")
		}
	}
	if level > levelGo {
		m.mulGroupsSIMD(out, a, g0, g1)
	} else {
		m.mulGroupsGo(out, a, g0, g1)
	}
	if m.superForm() {
		m.mulSuper(out, a, g0, g1) // after: it replaces the precise tokens' outputs
	}
	if m.mins != nil {
		m.addMins(out, a, g0, g1)
	}
	clearUpper()
}

// Kernel names the kernels MulGroups runs for m on this CPU and build:
// "avx512-asm" or "avx2-asm" (Go assembly), else the level whose
// archsimd or Go kernels run ("avx512", "avx2", "go"); with an "amx+"
// prefix where tiles of 16 rows (prefill, batches of 16 or more) run in
// AMX.
func (m *Matrix) Kernel() string { return m.kernel() }

// rows is how many rows of a the kernels multiply: the tokens, plus the
// residual rows of precise tokens for a quantized m (a float m reads X).
func (m *Matrix) rows(a *Activations) int {
	switch {
	case m.fam == famF32:
		return a.NumTok
	case m.superForm() && len(a.resOf) == a.NumTok:
		return 0 // every token precise: the super form does them all
	case m.superForm():
		return a.NumTok // the precise tokens' rows are overwritten by the super form
	}
	return a.Rows()
}

// store copies a group's 16 results for row t into out, dropping the
// zero-padded rows of the last group. A residual row's results are added
// to its token's: rows are visited in increasing order within a group, so
// the token's own row is stored first.
func (m *Matrix) store(out []float32, a *Activations, t, g int, res *[GroupRows]float32) {
	r0 := g * GroupRows
	n := min(GroupRows, m.Out-r0)
	if t < a.NumTok {
		copy(out[t*m.Out+r0:t*m.Out+r0+n], res[:n])
		return
	}
	t = int(a.resOf[t-a.NumTok])
	dst := out[t*m.Out+r0 : t*m.Out+r0+n]
	if n == GroupRows {
		add16((*[GroupRows]float32)(dst), res)
		return
	}
	for i := range dst {
		dst[i] += res[i]
	}
}

// The pure-Go kernels: the reference for the SIMD ones and the fallback
// without GOEXPERIMENT=simd or AVX-512. Same layouts and the same integer
// sums; float sums may differ from SIMD in the last bits.

func (m *Matrix) mulGroupsGo(out []float32, a *Activations, g0, g1 int) {
	if m.fam == famLUT {
		m.mulLUTGo(out, a, g0, g1)
		return
	}
	var res [GroupRows]float32
	for g := g0; g < g1; g++ {
		for t := range m.rows(a) {
			switch m.fam {
			case famF32:
				m.f32GroupGo(a.X[t*m.In:(t+1)*m.In], g, &res)
			case famNib:
				m.nibGroupGo(a, t, g, &res)
			case famByte:
				m.byteGroupGo(a, t, g, &res)
			case famQ6:
				m.q6GroupGo(a, t, g, &res)
			}
			m.store(out, a, t, g, &res)
		}
	}
}

func (m *Matrix) f32GroupGo(x []float32, g int, res *[GroupRows]float32) {
	*res = [GroupRows]float32{}
	if m.w16 != nil {
		for i, xi := range x {
			for r := range res {
				res[r] += m.weight(g, i, r) * xi
			}
		}
		return
	}
	w := m.f[g*m.In*GroupRows : (g+1)*m.In*GroupRows]
	for i, xi := range x {
		row := (*[GroupRows]float32)(w[i*GroupRows:])
		for r := range res {
			res[r] += row[r] * xi
		}
	}
}

func (m *Matrix) nibGroupGo(a *Activations, t, g int, res *[GroupRows]float32) {
	*res = [GroupRows]float32{}
	for j := range m.nb {
		blk := (*[nibBlockBytes]byte)(m.qs[(g*m.nb+j)*nibBlockBytes:])
		spb := m.scPerBlock()
		sc := m.sc.slice(g*m.nb*spb, (g+1)*m.nb*spb)
		x := (*[32]int8)(a.q[t*m.In+32*j:])
		dx, sx := a.d[t*m.nb+j], a.s[t*m.nb+j]
		var sum [GroupRows]int32
		for c := range 4 {
			chunk := (*[64]byte)(blk[c*64:])
			l0, l1, l2, l3 := int32(x[4*c]), int32(x[4*c+1]), int32(x[4*c+2]), int32(x[4*c+3])
			h0, h1, h2, h3 := int32(x[16+4*c]), int32(x[16+4*c+1]), int32(x[16+4*c+2]), int32(x[16+4*c+3])
			for r := range GroupRows {
				b := (*[4]byte)(chunk[4*r:])
				sum[r] += int32(b[0]&0xf)*l0 + int32(b[1]&0xf)*l1 + int32(b[2]&0xf)*l2 + int32(b[3]&0xf)*l3 +
					int32(b[0]>>4)*h0 + int32(b[1]>>4)*h1 + int32(b[2]>>4)*h2 + int32(b[3]>>4)*h3
			}
		}
		for r := range GroupRows {
			d, mn := sc.nibDM(j, r)
			res[r] += float32(sum[r])*(d*dx) + mn*sx
		}
	}
}

func (m *Matrix) byteGroupGo(a *Activations, t, g int, res *[GroupRows]float32) {
	*res = [GroupRows]float32{}
	spb := m.scPerBlock()
	chunks := 8 / m.nsub // chunks of 4 elements per scale
	for j := range m.nb {
		blk := (*[byteBlockBytes]byte)(m.qs[(g*m.nb+j)*byteBlockBytes:])
		sc := m.sc.slice((g*m.nb+j)*spb, (g*m.nb+j+1)*spb)
		x := (*[32]int8)(a.q[t*m.In+32*j:])
		dx, sx := a.d[t*m.nb+j], a.s[t*m.nb+j]
		for s := range m.nsub {
			var sum [GroupRows]int32
			for c := s * chunks; c < (s+1)*chunks; c++ {
				chunk := (*[64]byte)(blk[c*64:])
				x0, x1, x2, x3 := int32(x[4*c]), int32(x[4*c+1]), int32(x[4*c+2]), int32(x[4*c+3])
				for r := range GroupRows {
					b := (*[4]byte)(chunk[4*r:])
					sum[r] += int32(int8(b[0]))*x0 + int32(int8(b[1]))*x1 + int32(int8(b[2]))*x2 + int32(int8(b[3]))*x3
				}
			}
			for r := range GroupRows {
				res[r] += float32(sum[r]) * (sc.at(s*GroupRows+r) * dx)
			}
		}
		if m.hasMin {
			for r := range GroupRows {
				res[r] += sc.at(GroupRows+r) * sx
			}
		}
	}
}

// q6GroupGo is byteGroupGo for compact Q6_K (famQ6): each block unpacked
// to the byte layout, the same sums and float operations as Q6_K's.
func (m *Matrix) q6GroupGo(a *Activations, t, g int, res *[GroupRows]float32) {
	*res = [GroupRows]float32{}
	sc := m.sc.slice(g*m.nb*q6ScaleBytes, (g+1)*m.nb*q6ScaleBytes)
	var blk [byteBlockBytes]byte
	for j := range m.nb {
		q6Unpack(&blk, m.qs[(g*m.nb+j)*q6BlockBytes:])
		x := (*[32]int8)(a.q[t*m.In+32*j:])
		dx := a.d[t*m.nb+j]
		for s := range 2 {
			var sum [GroupRows]int32
			for c := 4 * s; c < 4*(s+1); c++ {
				chunk := (*[64]byte)(blk[c*64:])
				x0, x1, x2, x3 := int32(x[4*c]), int32(x[4*c+1]), int32(x[4*c+2]), int32(x[4*c+3])
				for r := range GroupRows {
					b := (*[4]byte)(chunk[4*r:])
					sum[r] += int32(int8(b[0]))*x0 + int32(int8(b[1]))*x1 + int32(int8(b[2]))*x2 + int32(int8(b[3]))*x3
				}
			}
			for r := range GroupRows {
				res[r] += float32(sum[r]) * (sc.q6D(j, s, r) * dx)
			}
		}
	}
}
