//go:build goexperiment.simd && amd64 && !linux

package kernels

// requestAMX: only Linux's permission request is known here, so other
// systems run the AVX-512 VNNI kernels.
func requestAMX() bool { return false }
