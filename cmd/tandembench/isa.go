package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// A run at one instruction set (--isa) puts Tandem's kernels for it next
// to llama.cpp's prebuilt variant for it: on a CPU that has more (AMX,
// AVX-512), this is how the AVX2 level both sides ship for older and
// smaller CPUs is measured, on the same machine in the same run.

// isaRun is what --isa NAME runs on each side.
type isaRun struct {
	level   string // Tandem's kernels.Level(), set by TANDEM_CPU_KERNELS
	variant string // llama.cpp's prebuilt CPU variant (libggml-cpu-NAME.so)
	title   string // how the doc section names the pair
}

var isaRuns = map[string]isaRun{
	"avx2":    {level: "avx2", variant: "haswell", title: "AVX2: Tandem's avx2 kernels, llama.cpp's haswell variant"},
	"avxvnni": {level: "avxvnni", variant: "alderlake", title: "AVX2 + AVX-VNNI: Tandem's avxvnni kernels, llama.cpp's alderlake variant"},
}

// checkISA fails when Tandem's kernels are not isa's (the level is fixed
// at start from TANDEM_CPU_KERNELS, so the caller must set it).
func checkISA(isa, level string) error {
	r, ok := isaRuns[isa]
	if !ok || level == r.level {
		return nil
	}
	return fmt.Errorf("--isa %s: Tandem runs its %s kernels; set TANDEM_CPU_KERNELS=%s", isa, level, r.level)
}

// isaBackend makes l load isa's prebuilt variant alone: a backend
// directory under tmp holding a link to that library from src (ggml
// loads the best variant it finds in the directory, so that one or
// none).
func isaBackend(l *llamaBench, isa, src, tmp string) error {
	r := isaRuns[isa]
	lib := filepath.Join(src, variantLib(r.variant))
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("%w: --isa %s: llama.cpp's %s variant: %w", ErrMissing, isa, r.variant, err)
	}
	dir := filepath.Join(tmp, "backend-"+r.variant)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(lib, filepath.Join(dir, filepath.Base(lib))); err != nil && !os.IsExist(err) {
		return err
	}
	l.backendDir = dir
	return nil
}

// checkISAVariant fails when llama.cpp loaded another variant than isa's.
func checkISAVariant(s *Setup, isa string) error {
	r, ok := isaRuns[isa]
	if !ok {
		return nil
	}
	if want := variantLib(r.variant); s.CPUVariant != want {
		return fmt.Errorf("--isa %s: llama.cpp loaded %q, want %q", isa, orUnknown(s.CPUVariant), want)
	}
	return nil
}

// isaTitle is the doc section's suffix for a run at one instruction set.
func isaTitle(isa string) string {
	if r, ok := isaRuns[isa]; ok {
		return " (" + r.title + ")"
	}
	return ""
}

// fileBase names the run's JSON and PNG: cpu-DATE, with the tag and
// the instruction set when set: cpu-TAG-ISA-DATE.
func (rep *Report) fileBase() string {
	base := "cpu-"
	for _, s := range []string{rep.Tag, rep.ISA} {
		if s != "" {
			base += s + "-"
		}
	}
	return base + rep.Date
}

// sectionKey tells the run's doc section from others (a rerun replaces
// the section of the same key): the date, the tag and the instruction
// set.
func (rep *Report) sectionKey() string {
	key := rep.Date
	for _, s := range []string{rep.Tag, rep.ISA} {
		if s != "" {
			key += " " + s
		}
	}
	return key
}
