package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The prebuilt llama.cpp column is only a fair baseline if ggml loaded the
// CPU variant library that suits this CPU best: on a Sapphire Rapids Xeon
// node-llama-cpp's zen4 variant once ran instead of sapphirerapids (no AMX)
// and prefilled 4.5× slower than a native build. tandembench therefore
// works out the best variant from /proc/cpuinfo itself, the way ggml
// scores them, and refuses to report a run that loaded another.

// x86Variant is one of ggml's x86 CPU variant libraries
// (libggml-cpu-NAME.so) and the features it is compiled for, as listed by
// ggml_add_cpu_backend_variant under GGML_CPU_ALL_VARIANTS in
// ggml/src/CMakeLists.txt.
type x86Variant struct {
	name  string
	feats []string
}

var x86Variants = []x86Variant{
	{"x64", nil},
	{"sse42", []string{"SSE42"}},
	{"sandybridge", []string{"SSE42", "AVX"}},
	{"ivybridge", []string{"SSE42", "AVX", "F16C"}},
	{"piledriver", []string{"SSE42", "AVX", "F16C", "FMA"}},
	{"haswell", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2"}},
	{"skylakex", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512"}},
	{"cannonlake", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI"}},
	{"cascadelake", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI"}},
	{"icelake", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI"}},
	{"cooperlake", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI", "AVX512_BF16"}},
	{"zen4", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}},
	{"alderlake", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX_VNNI"}},
	{"sapphirerapids", []string{"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_TILE", "AMX_INT8"}},
}

// x86Feature is one term of ggml_backend_cpu_x86_score
// (ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp): a variant compiled with the
// feature scores 0 unless the CPU has every flag, else adds weight. The
// flags are /proc/cpuinfo's names for the CPUID bits ggml reads. AMX_TILE
// is compiled in but not scored.
type x86Feature struct {
	weight int
	flags  []string
}

var x86Features = map[string]x86Feature{
	"FMA":         {1, []string{"fma"}},
	"F16C":        {1 << 1, []string{"f16c"}},
	"SSE42":       {1 << 2, []string{"sse4_2"}},
	"BMI2":        {1 << 3, []string{"bmi2"}},
	"AVX":         {1 << 4, []string{"avx"}},
	"AVX2":        {1 << 5, []string{"avx2"}},
	"AVX_VNNI":    {1 << 6, []string{"avx_vnni"}},
	"AVX512":      {1 << 7, []string{"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}},
	"AVX512_VBMI": {1 << 8, []string{"avx512vbmi"}},
	"AVX512_BF16": {1 << 9, []string{"avx512_bf16"}},
	"AVX512_VNNI": {1 << 10, []string{"avx512_vnni"}},
	"AMX_INT8":    {1 << 11, []string{"amx_int8"}},
}

// kernelFlags are the /proc/cpuinfo flags that decide which matmul kernels
// Tandem and llama.cpp can use; the report lists those present.
var kernelFlags = []string{
	"sse4_2", "avx", "f16c", "fma", "bmi2", "avx2", "avx_vnni",
	"avx512f", "avx512cd", "avx512dq", "avx512bw", "avx512vl", "avx512vbmi",
	"avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
}

// variantScore is ggml's score of variant v on a CPU with flags: 0 if the
// CPU lacks a feature v is compiled for, else 1 plus the features' weights.
func variantScore(v x86Variant, flags map[string]bool) int {
	score := 1
	for _, f := range v.feats {
		feat, scored := x86Features[f]
		if !scored {
			continue
		}
		for _, fl := range feat.flags {
			if !flags[fl] {
				return 0
			}
		}
		score += feat.weight
	}
	return score
}

// bestVariant is the library ggml should load on a CPU with flags among
// the available ones (file names such as "libggml-cpu-haswell.so"), and
// its score: the highest, the first listed on a tie (ggml keeps the first
// strictly better one it finds). ok is false when none scores above 0.
func bestVariant(flags map[string]bool, available []string) (lib string, score int, ok bool) {
	for _, v := range x86Variants {
		name := variantLib(v.name)
		if !slices.Contains(available, name) {
			continue
		}
		if s := variantScore(v, flags); s > score {
			score, lib = s, name
		}
	}
	return lib, score, score > 0
}

// libScore is the score of the variant library lib on a CPU with flags, 0
// for a library that is not one of x86Variants.
func libScore(lib string, flags map[string]bool) int {
	for _, v := range x86Variants {
		if variantLib(v.name) == lib {
			return variantScore(v, flags)
		}
	}
	return 0
}

func variantLib(name string) string { return "libggml-cpu-" + name + ".so" }

// cpuFlags reads the flags of the first processor in /proc/cpuinfo (nil
// where there is none, as off x86).
func cpuFlags() map[string]bool {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	return parseCPUFlags(string(data))
}

// parseCPUFlags is cpuFlags on cpuinfo's text.
func parseCPUFlags(cpuinfo string) map[string]bool {
	for line := range strings.SplitSeq(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags := map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			return flags
		}
	}
	return nil
}

// presentKernelFlags lists the kernelFlags that flags has, in kernelFlags' order.
func presentKernelFlags(flags map[string]bool) []string {
	var out []string
	for _, f := range kernelFlags {
		if flags[f] {
			out = append(out, f)
		}
	}
	return out
}

// cpuVariants lists the libggml-cpu-*.so files in dir.
func cpuVariants(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// checkVariant fills s.BestVariant and fails when the prebuilt libraries
// in s.BackendDir loaded a CPU variant that scores below the best for
// flags. A setup without a backend directory (the native build, CPU
// backend linked in) and a machine without x86 flags pass unchecked.
func checkVariant(s *Setup, flags map[string]bool) error {
	if s.BackendDir == "" || flags == nil {
		return nil
	}
	best, score, ok := bestVariant(flags, cpuVariants(s.BackendDir))
	if !ok {
		return fmt.Errorf("llama.cpp: no CPU variant library in %s suits this CPU (flags %s)", s.BackendDir, strings.Join(presentKernelFlags(flags), " "))
	}
	s.BestVariant = best
	if libScore(s.CPUVariant, flags) < score {
		return fmt.Errorf("llama.cpp loaded CPU variant %q, but the best prebuilt variant for this CPU (flags %s) is %q, "+
			"so the prebuilt column would not be a fair baseline (ggml skips a variant that fails to load without a word)",
			orUnknown(s.CPUVariant), strings.Join(presentKernelFlags(flags), " "), best)
	}
	return nil
}

// variantScores is bin --variant-scores: the score ggml gives each
// variant library on this CPU, or why it does not load.
func variantScores(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "--variant-scores").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s --variant-scores: %v: %s", bin, err, out)
	}
	return strings.TrimSpace(string(out))
}
