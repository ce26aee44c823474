//go:build !(goexperiment.simd && amd64)

package kernels

// Without GOEXPERIMENT=simd (or off amd64) only the pure-Go kernels exist.

func detectLevel() simdLevel { return levelGo }

var hasAVXVNNI = false

var hasAMX = false

func (m *Matrix) mulGroupsSIMD(out []float32, a *Activations, g0, g1 int) {
	m.mulGroupsGo(out, a, g0, g1)
}

func (m *Matrix) kernel() string { return "go" }

func quantizeRowSIMD(x []float32, q []int8, qa []uint8, qm []int8, d, s []float32, hs []int32) bool {
	return false
}
func residualRowSIMD(r, x []float32, q []int8, d []float32) bool { return false }

func dot(a, b []float32) float32                         { return dotGo(a, b) }
func addScaled(y []float32, s float32, x []float32)      { addScaledGo(y, s, x) }
func expShift(x []float32, m float32) float32            { return expShiftGo(x, m) }
func expBlock(x []float32, m float32)                    { expShiftGo(x, m) }
func siluMul(gate, up []float32)                         { siluMulGo(gate, up) }
func geluMul(gate, up []float32)                         { geluMulGo(gate, up) }
func softcap(x []float32, c float32)                     { softcapGo(x, c) }
func dotCols(out, q, k []float32, stride int, s float32) { dotColsGo(out, q, k, stride, s) }
func addRows(y, w, v []float32, stride int)              { addRowsGo(y, w, v, stride) }

func blockScores(out, q, k []float32, d int, s float32) { blockScoresGo(out, q, k, d, s) }
func blockAccum(acc []float32, d int, w []float32, n int, v []float32, stride int) {
	blockAccumGo(acc, d, w, n, v, stride)
}
func blockSoftmax(s []float32, rowN []int32, pos int, m, l, acc []float32, d int) {
	blockSoftmaxGo(s, rowN, pos, m, l, acc, d)
}
func halfToFloat(dst []float32, src []uint16) { halfToFloatGo(dst, src) }

func halfDirect(int) bool { return false }
func blockScoresHalf(out, q []float32, k []uint16, d int, s float32) {
	panic("kernels: no float16 attention kernels in this build")
}
func blockAccumHalf(acc []float32, d int, w []float32, n int, v []uint16, stride int) {
	panic("kernels: no float16 attention kernels in this build")
}

func clearUpper() {}

func add16(dst, src *[GroupRows]float32) {
	for i := range dst {
		dst[i] += src[i]
	}
}

func superSIMD() bool { return false }

func (m *Matrix) superRowsSIMD(a *Activations, i, j, g int, res0, res1 *[GroupRows]float32) {
	panic("kernels: no super-form SIMD kernels in this build")
}

func (m *Matrix) superTiles(out []float32, a *Activations, g0, g1 int) int { return 0 }

func quantizeSuperSIMD(r *[256]float32, q *[256]int8, sums *[8]int16) (float32, bool) {
	return 0, false
}

func minsGroup(acc *[GroupRows]float32, mins, xs []float32) { minsGroupGo(acc, mins, xs) }

func expandLUT(dst, src []byte, table *[16]int8) { expandLUTGo(dst, src, table) }

func expandScales(dst, src []float32, nb int) { expandScalesGo(dst, src, nb) }

func expandScalesE8M0(dst []float32, src []byte, nb int) { expandScalesE8M0Go(dst, src, nb) }
