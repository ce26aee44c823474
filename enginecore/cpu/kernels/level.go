package kernels

import "os"

// simdLevel is the instruction set the kernels use, picked once at start
// (detectLevel) from what this build and CPU support; tests lower it to
// check every path against the others.
type simdLevel int

const (
	levelGo      simdLevel = iota // pure Go: any CPU, or a build without GOEXPERIMENT=simd
	levelAVX2                     // AVX2 + FMA, 256-bit (CPUs, or VMs, without usable AVX-512)
	levelAVXVNNI                  // AVX2 plus AVX-VNNI (VEX vpdpbusd: Alder Lake and later client CPUs)
	levelAVX512                   // AVX-512 F/BW/DQ/VL/CD, 512-bit
	levelVNNI                     // AVX-512 plus VNNI (vpdpbusd: Cascade Lake, Ice Lake, Zen 4 and later)
	levelAMX                      // AVX-512 VNNI plus AMX-INT8 tiles for prefill (Sapphire Rapids and later)
)

var level = capLevel(detectLevel(), os.Getenv("TANDEM_CPU_KERNELS"))

// capLevel lowers l to the level named by want ("go", "avx2", "avxvnni",
// "avx512", "avx512vnni", "amx"; the
// TANDEM_CPU_KERNELS variable), never raising it past what the CPU has. An
// empty or unknown name keeps l.
func capLevel(l simdLevel, want string) simdLevel {
	for c := levelGo; c <= levelAMX; c++ {
		if c.String() == want {
			return runnable(min(l, c))
		}
	}
	return l
}

// runnable is l, or avx2 where l is avxvnni on a CPU without AVX-VNNI
// (the levels are not nested there: Ice Lake has AVX-512 VNNI but not
// the VEX form).
func runnable(l simdLevel) simdLevel {
	if l == levelAVXVNNI && !hasAVXVNNI {
		return levelAVX2
	}
	return l
}

func (l simdLevel) String() string {
	return [...]string{"go", "avx2", "avxvnni", "avx512", "avx512vnni", "amx"}[l]
}

// Level names the kernels in use: "amx", "avx512vnni", "avx512",
// "avxvnni", "avx2" or "go".
func Level() string { return level.String() }
