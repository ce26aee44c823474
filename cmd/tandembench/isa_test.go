package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestISAFlag(t *testing.T) {
	o, err := parseFlags([]string{"--isa", "avx2"}, io.Discard)
	if err != nil || o.isa != "avx2" {
		t.Fatalf("--isa avx2: %+v, %v", o.isa, err)
	}
	if _, err := parseFlags([]string{"--isa", "sse"}, io.Discard); err == nil || !strings.Contains(err.Error(), "--isa") {
		t.Errorf("--isa sse: %v, want an error naming the flag", err)
	}
}

func TestCheckISA(t *testing.T) {
	for _, tt := range []struct {
		isa, level string
		ok         bool
	}{
		{"", "amx", true},
		{"avx2", "avx2", true},
		{"avx2", "amx", false}, // TANDEM_CPU_KERNELS not set
	} {
		err := checkISA(tt.isa, tt.level)
		if (err == nil) != tt.ok {
			t.Errorf("checkISA(%q, %q) = %v, want ok %v", tt.isa, tt.level, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "TANDEM_CPU_KERNELS=avx2") {
			t.Errorf("checkISA: %v does not say what to set", err)
		}
	}
	s := &Setup{CPUVariant: "libggml-cpu-sapphirerapids.so"}
	if err := checkISAVariant(s, "avx2"); err == nil {
		t.Error("checkISAVariant accepted the sapphirerapids variant for --isa avx2")
	}
	s.CPUVariant = "libggml-cpu-haswell.so"
	if err := checkISAVariant(s, "avx2"); err != nil {
		t.Error(err)
	}
}

// TestISABackend: the backend directory holds isa's variant alone, a link
// to the prebuilt library, and bench.c gets it.
func TestISABackend(t *testing.T) {
	src, tmp := t.TempDir(), t.TempDir()
	for _, v := range []string{"haswell", "sapphirerapids", "zen4"} {
		if err := os.WriteFile(filepath.Join(src, variantLib(v)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &llamaBench{}
	if err := isaBackend(l, "avx2", src, tmp); err != nil {
		t.Fatal(err)
	}
	if got := cpuVariants(l.backendDir); len(got) != 1 || got[0] != "libggml-cpu-haswell.so" {
		t.Errorf("backend dir holds %v, want the haswell variant alone", got)
	}
	if dst, err := os.Readlink(filepath.Join(l.backendDir, "libggml-cpu-haswell.so")); err != nil || dst != filepath.Join(src, "libggml-cpu-haswell.so") {
		t.Errorf("link: %q, %v", dst, err)
	}
	if err := isaBackend(&llamaBench{}, "avx2", t.TempDir(), tmp); err == nil {
		t.Error("isaBackend found a variant in an empty directory")
	}
}

// TestISASection: an --isa run has its own files and doc section, and a
// rerun of either replaces only its own.
func TestISASection(t *testing.T) {
	rep := sampleReport()
	iso := sampleReport()
	iso.ISA = "avx2"
	if rep.fileBase() != "cpu-2001-02-03" || iso.fileBase() != "cpu-avx2-2001-02-03" {
		t.Errorf("file bases %q, %q", rep.fileBase(), iso.fileBase())
	}
	s := renderSection(iso, "benchmarks")
	for _, want := range []string{
		"<!-- tandembench:begin 2001-02-03 avx2 -->\n## 2001-02-03 — CPU engine vs llama.cpp, m.gguf (AVX2: Tandem's avx2 kernels, llama.cpp's haswell variant)",
		"(benchmarks/cpu-avx2-2001-02-03.png)",
		"loaded alone (--isa avx2: both sides at one instruction set)",
		"<!-- tandembench:end 2001-02-03 avx2 -->",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
	doc := spliceSection(docHeader, rep.sectionKey(), renderSection(rep, "benchmarks"))
	doc = spliceSection(doc, iso.sectionKey(), s)
	again := spliceSection(doc, iso.sectionKey(), s)
	if again != doc {
		t.Error("rerunning the avx2 section changed the doc elsewhere")
	}
	if n := strings.Count(doc, "## 2001-02-03 — CPU engine"); n != 2 {
		t.Errorf("%d sections of the day, want 2 (best and avx2):\n%s", n, doc)
	}
}

// TestTagSection: a --tag run (another model) has its own files and doc
// section, next to the default model's and an --isa run's.
func TestTagSection(t *testing.T) {
	rep, tagged, both := sampleReport(), sampleReport(), sampleReport()
	tagged.Tag = "gemma3"
	both.Tag, both.ISA = "gemma3", "avx2"
	for _, tc := range []struct {
		rep        *Report
		file, key  string
		beginMarks string
	}{
		{rep, "cpu-2001-02-03", "2001-02-03", "<!-- tandembench:begin 2001-02-03 -->"},
		{tagged, "cpu-gemma3-2001-02-03", "2001-02-03 gemma3", "<!-- tandembench:begin 2001-02-03 gemma3 -->"},
		{both, "cpu-gemma3-avx2-2001-02-03", "2001-02-03 gemma3 avx2", "<!-- tandembench:begin 2001-02-03 gemma3 avx2 -->"},
	} {
		if tc.rep.fileBase() != tc.file || tc.rep.sectionKey() != tc.key {
			t.Errorf("file base %q, key %q; want %q, %q", tc.rep.fileBase(), tc.rep.sectionKey(), tc.file, tc.key)
		}
		if s := renderSection(tc.rep, "benchmarks"); !strings.Contains(s, tc.beginMarks) || !strings.Contains(s, "(benchmarks/"+tc.file+".png)") {
			t.Errorf("section of %q lacks its marker or plot:\n%s", tc.key, s)
		}
	}
	doc := spliceSection(docHeader, rep.sectionKey(), renderSection(rep, "benchmarks"))
	doc = spliceSection(doc, tagged.sectionKey(), renderSection(tagged, "benchmarks"))
	if again := spliceSection(doc, tagged.sectionKey(), renderSection(tagged, "benchmarks")); again != doc {
		t.Error("rerunning the tagged section changed the doc elsewhere")
	}
	if n := strings.Count(doc, "## 2001-02-03 — CPU engine"); n != 2 {
		t.Errorf("%d sections of the day, want 2 (default and gemma3):\n%s", n, doc)
	}
}
