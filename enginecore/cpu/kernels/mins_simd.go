//go:build goexperiment.simd && amd64

package kernels

// minsGroup is minsGroupGo in 256-bit FMAs (mins_amd64.s) at every SIMD
// level, so that the levels agree to the bit: two chains (even and odd
// k), summed at the end. xs has an even number of elements (In % 256 ==
// 0 for Q2_K).
func minsGroup(acc *[GroupRows]float32, mins, xs []float32) {
	if level == levelGo || len(xs) == 0 {
		minsGroupGo(acc, mins, xs)
		return
	}
	_ = mins[len(xs)*GroupRows-1]
	minsGroupAVX2(acc, &mins[0], &xs[0], len(xs)&^1)
}

//go:noescape
func minsGroupAVX2(acc *[GroupRows]float32, mins *float32, xs *float32, n int)
