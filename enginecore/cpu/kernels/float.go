//go:build goexperiment.simd && amd64

package kernels

import "unsafe"

// mulFloat is MulGroups for float matrices at the AVX-512 level
// (float_amd64.s): four tokens at a time per group, then the rest one
// at a time over every whole group.
func (m *Matrix) mulFloat(out []float32, a *Activations, g0, g1 int) {
	var res [GroupRows]float32
	var res4 [4][GroupRows]float32
	in, numTok := m.In, a.NumTok
	t4 := numTok / 4 * 4
	for g := g0; g < g1; g++ {
		w := m.floatGroups(g, g+1)
		for t := 0; t < t4; t += 4 {
			x := a.X[t*in : (t+4)*in]
			m.floatGroup4(w, &x[0], &res4)
			for k := range 4 {
				m.store(out, a, t+k, g, &res4[k])
			}
		}
	}
	whole := max(g0, min(g1, m.Out/GroupRows)) // groups [g0, whole) lie inside Out
	for t := t4; t < numTok; t++ {
		x := a.X[t*in : (t+1)*in]
		if whole > g0 {
			o := out[t*m.Out+g0*GroupRows : t*m.Out+whole*GroupRows]
			m.floatRows1(m.floatGroups(g0, whole), &x[0], whole-g0, &o[0])
		}
		for g := whole; g < g1; g++ {
			m.floatRows1(m.floatGroups(g, g+1), &x[0], 1, &res[0])
			m.store(out, a, t, g, &res)
		}
	}
}

// floatGroups is the weights of groups [g0, g1).
func (m *Matrix) floatGroups(g0, g1 int) *byte {
	n := m.In * GroupRows
	if m.w16 != nil {
		return (*byte)(unsafe.Pointer(&m.w16[g0*n : g1*n][0]))
	}
	return (*byte)(unsafe.Pointer(&m.f[g0*n : g1*n][0]))
}

func (m *Matrix) floatRows1(w *byte, x *float32, groups int, out *float32) {
	switch {
	case m.w16 == nil:
		floatRows1F32(w, x, m.In, groups, out)
	case m.bf16:
		floatRows1BF16(w, x, m.In, groups, out)
	default:
		floatRows1F16(w, x, m.In, groups, out)
	}
}

func (m *Matrix) floatGroup4(w *byte, x *float32, res *[4][GroupRows]float32) {
	switch {
	case m.w16 == nil:
		floatGroup4F32(w, x, m.In, res)
	case m.bf16:
		floatGroup4BF16(w, x, m.In, res)
	default:
		floatGroup4F16(w, x, m.In, res)
	}
}

// The float kernels, in float_amd64.s.
//
//go:noescape
func floatRows1F32(w *byte, x *float32, in, groups int, out *float32)

//go:noescape
func floatRows1F16(w *byte, x *float32, in, groups int, out *float32)

//go:noescape
func floatRows1BF16(w *byte, x *float32, in, groups int, out *float32)

//go:noescape
func floatGroup4F32(w *byte, x *float32, in int, res *[4][GroupRows]float32)

//go:noescape
func floatGroup4F16(w *byte, x *float32, in int, res *[4][GroupRows]float32)

//go:noescape
func floatGroup4BF16(w *byte, x *float32, in int, res *[4][GroupRows]float32)
