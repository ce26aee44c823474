package kernels

import "os"

// simdLevel is the instruction set the kernels use, picked once at start
// (detectLevel) from what this build and CPU support; tests lower it to
// check every path against the others.
type simdLevel int

const (
	levelGo     simdLevel = iota // pure Go: any CPU, or a build without GOEXPERIMENT=simd
	levelAVX2                    // AVX2 + FMA, 256-bit (CPUs, or VMs, without usable AVX-512)
	levelAVX512                  // AVX-512 F/BW/DQ/VL/CD, 512-bit
	levelAMX                     // AVX-512 plus AMX-INT8 tiles for prefill (Sapphire Rapids and later)
)

var level = capLevel(detectLevel(), os.Getenv("TANDEM_CPU_KERNELS"))

// capLevel lowers l to the level named by want ("go", "avx2", "avx512", "amx"; the
// TANDEM_CPU_KERNELS variable), never raising it past what the CPU has. An
// empty or unknown name keeps l.
func capLevel(l simdLevel, want string) simdLevel {
	for c := levelGo; c <= levelAMX; c++ {
		if c.String() == want {
			return min(l, c)
		}
	}
	return l
}

func (l simdLevel) String() string {
	return [...]string{"go", "avx2", "avx512", "amx"}[l]
}

// vec is the level of the vector (non-matmul) kernels: AMX adds tiles
// only, so its vectors are AVX-512's.
func (l simdLevel) vec() simdLevel { return min(l, levelAVX512) }

// Level names the kernels in use: "amx", "avx512", "avx2" or "go".
func Level() string { return level.String() }
