//go:build goexperiment.simd && amd64

package main

import "simd/archsimd"

var readKernel, readSum = func() (string, func([]uint64) uint64) {
	if archsimd.X86.AVX2() {
		return "avx2", readSumAVX2
	}
	return "go", readSumGo
}()

// readSumAVX2 folds b (len a multiple of 32) with 256-bit loads into
// four chains, four cache lines per iteration.
func readSumAVX2(b []uint64) uint64 {
	var a0, a1, a2, a3 archsimd.Uint64x4
	for i := 0; i+32 <= len(b); i += 32 {
		a0 = a0.Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i:]))).Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+16:])))
		a1 = a1.Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+4:]))).Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+20:])))
		a2 = a2.Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+8:]))).Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+24:])))
		a3 = a3.Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+12:]))).Xor(archsimd.LoadUint64x4((*[4]uint64)(b[i+28:])))
	}
	var out [4]uint64
	a0.Xor(a1).Xor(a2).Xor(a3).Store(&out)
	return out[0] ^ out[1] ^ out[2] ^ out[3]
}
