package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flagSet builds a flag set from space-separated /proc/cpuinfo names.
func flagSet(s string) map[string]bool {
	return parseCPUFlags("flags\t\t: " + s + "\n")
}

// CPUs as /proc/cpuinfo lists their kernel flags.
const (
	flagsHaswell   = "sse4_2 avx f16c fma bmi2 avx2"
	flagsSkylakeX  = flagsHaswell + " avx512f avx512cd avx512dq avx512bw avx512vl"
	flagsIceLake   = flagsSkylakeX + " avx512vbmi avx512_vnni"
	flagsZen4      = flagsIceLake + " avx512_bf16"
	flagsSapphireR = flagsZen4 + " avx_vnni avx512_fp16 amx_tile amx_int8 amx_bf16"
)

// allVariants is every library node-llama-cpp ships for linux-x64.
var allVariants = func() []string {
	var out []string
	for _, v := range x86Variants {
		out = append(out, variantLib(v.name))
	}
	return out
}()

func TestBestVariant(t *testing.T) {
	tests := []struct {
		name      string
		flags     string
		available []string
		want      string
	}{
		{"AVX2-only AMD EPYC (this machine)", flagsHaswell + " sse4a abm", allVariants, "libggml-cpu-haswell.so"},
		{"Skylake-X", flagsSkylakeX, allVariants, "libggml-cpu-skylakex.so"},
		{"Cascade Lake", flagsSkylakeX + " avx512_vnni", allVariants, "libggml-cpu-cascadelake.so"},
		{"Ice Lake", flagsIceLake, allVariants, "libggml-cpu-icelake.so"},
		{"Zen 4", flagsZen4, allVariants, "libggml-cpu-zen4.so"},
		{"Sapphire Rapids: AMX, not zen4", flagsSapphireR, allVariants, "libggml-cpu-sapphirerapids.so"},
		{"Sapphire Rapids without the AMX library", flagsSapphireR, []string{"libggml-cpu-haswell.so", "libggml-cpu-zen4.so"}, "libggml-cpu-zen4.so"},
		{"Alder Lake: AVX-VNNI, no AVX-512", flagsHaswell + " avx_vnni", allVariants, "libggml-cpu-alderlake.so"},
		{"Sandy Bridge", "sse4_2 avx", allVariants, "libggml-cpu-sandybridge.so"},
		{"no SIMD flags", "fpu sse sse2", allVariants, "libggml-cpu-x64.so"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, ok := bestVariant(flagSet(tt.flags), tt.available)
			if !ok || got != tt.want {
				t.Errorf("bestVariant = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
	if got, _, ok := bestVariant(flagSet(flagsHaswell), []string{"libggml-cpu-zen4.so"}); ok {
		t.Errorf("bestVariant with only an unusable variant = %q, want none", got)
	}
}

// TestVariantScore checks the scores against ggml's own, as
// `.cache/llamabench --variant-scores` printed them on the AVX2-only AMD
// EPYC this was written on.
func TestVariantScore(t *testing.T) {
	flags := flagSet("fpu sse sse2 pni ssse3 fma sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2 sha_ni")
	want := map[string]int{
		"x64": 1, "sse42": 5, "sandybridge": 21, "ivybridge": 23, "piledriver": 24, "haswell": 64,
		"skylakex": 0, "cannonlake": 0, "cascadelake": 0, "icelake": 0, "cooperlake": 0, "zen4": 0, "alderlake": 0, "sapphirerapids": 0,
	}
	got := map[string]int{}
	for _, v := range x86Variants {
		got[v.name] = variantScore(v, flags)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scores (-ggml +ours):\n%s", diff)
	}
}

func TestCheckVariant(t *testing.T) {
	dir := t.TempDir()
	for _, lib := range allVariants {
		if err := os.WriteFile(filepath.Join(dir, lib), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		setup    Setup
		flags    string
		wantBest string
		wantErr  string
	}{
		{"the best one", Setup{BackendDir: dir, CPUVariant: "libggml-cpu-haswell.so"}, flagsHaswell, "libggml-cpu-haswell.so", ""},
		{"zen4 on Sapphire Rapids", Setup{BackendDir: dir, CPUVariant: "libggml-cpu-zen4.so"}, flagsSapphireR, "libggml-cpu-sapphirerapids.so",
			`loaded CPU variant "libggml-cpu-zen4.so", but the best prebuilt variant for this CPU`},
		{"none loaded", Setup{BackendDir: dir}, flagsHaswell, "libggml-cpu-haswell.so", `loaded CPU variant "unknown"`},
		{"native build: nothing to check", Setup{CPUVariant: ""}, flagsSapphireR, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.setup
			err := checkVariant(&s, flagSet(tt.flags))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("checkVariant: %v, want error %q", err, tt.wantErr)
			}
			if s.BestVariant != tt.wantBest {
				t.Errorf("BestVariant = %q, want %q", s.BestVariant, tt.wantBest)
			}
		})
	}
}

func TestPresentKernelFlags(t *testing.T) {
	got := presentKernelFlags(parseCPUFlags("processor\t: 0\nflags\t\t: fpu amx_int8 avx2 sse4_2 fma avx512_vnni\n\nprocessor\t: 1\nflags\t\t: fpu\n"))
	if diff := cmp.Diff([]string{"sse4_2", "fma", "avx2", "avx512_vnni", "amx_int8"}, got); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
	if got := parseCPUFlags("Features\t: fp asimd\n"); got != nil {
		t.Errorf("flags of a CPU without a flags line = %v, want nil", got)
	}
}

func TestNativeMissing(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "llamabench-native")
	if got := nativeMissing(bin); !strings.Contains(got, "not found") {
		t.Errorf("nativeMissing without binary or reason = %q", got)
	}
	if err := os.WriteFile(bin+".unavailable", []byte("cmake not found\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := nativeMissing(bin); got != "cmake not found" {
		t.Errorf("nativeMissing = %q, want the reason build.sh left", got)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := nativeMissing(bin); got != "" {
		t.Errorf("nativeMissing with a binary = %q, want none", got)
	}
}
