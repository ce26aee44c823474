package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQuickStructured runs the structured phase on a tiny random model
// (byte vocabulary): both decodes at each stream count, the replayed
// masks, the JSON, and a doc section that a rerun replaces.
func TestQuickStructured(t *testing.T) {
	dir := t.TempDir()
	model := tinyModel(t, dir)
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\nintro\n\n"+sectionsMarker+"\n\nolder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "benchmarks")
	args := []string{"--quick", "--phase", "structured", "--model", model, "--out", out, "--doc", doc, "--date", "2001-02-03"}
	for range 2 { // the second run replaces the first's section
		if err := run(context.Background(), args, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	rep := readReport[StructuredReport](t, filepath.Join(out, "structured-2001-02-03.json"))
	var streams []int
	for _, r := range rep.Rows {
		streams = append(streams, r.Streams)
		if r.Unconstrained.Decode <= 0 || r.Constrained.Decode <= 0 || r.Ratio == nil {
			t.Errorf("S=%d: decode %v / %v, ratio %v", r.Streams, r.Unconstrained.Decode, r.Constrained.Decode, r.Ratio)
		}
		if want := r.Streams * (r.GenTokens + 1); r.NumMasks != want || r.MaskRow.P50 <= 0 {
			t.Errorf("S=%d: %d masks (p50 %v µs), want one per output token, %d", r.Streams, r.NumMasks, r.MaskRow.P50, want)
		}
	}
	if diff := cmp.Diff([]int{1, 4}, streams); diff != "" {
		t.Errorf("stream counts (-want +got):\n%s", diff)
	}
	if len(rep.Targets) != 1 || !strings.Contains(rep.Targets[0].Name, "1 row") {
		t.Errorf("targets %+v, want the 1-row mask target only (no 64-stream row in --quick)", rep.Targets)
	}
	// --replot redraws the section from the JSON alone.
	doc2 := filepath.Join(dir, "replot.md")
	if err := run(context.Background(), []string{"--phase", "structured", "--replot", filepath.Join(out, "structured-2001-02-03.json"), "--out", out, "--doc", doc2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if md2, err := os.ReadFile(doc2); err != nil || !strings.Contains(string(md2), "### Constrained decoding on the engine (2001-02-03)") {
		t.Errorf("replot: %v\n%s", err, md2)
	}
	if rep.Compile.P50 <= 0 || !strings.Contains(rep.Constraint, "x-guidance") {
		t.Errorf("compile %v µs, constraint %q", rep.Compile.P50, rep.Constraint)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), structuredBegin); n != 1 {
		t.Errorf("%d structured sections, want 1:\n%s", n, md)
	}
	if i, j := strings.Index(string(md), structuredEnd), strings.Index(string(md), sectionsMarker); i < 0 || j < i || !strings.HasSuffix(string(md), "older\n") {
		t.Errorf("section not before the CPU sections:\n%s", md)
	}
}

func TestSpliceStructured(t *testing.T) {
	section := structuredBegin + "\nnew\n" + structuredEnd + "\n"
	tests := []struct {
		name, doc, want string
	}{
		{"replaces", "a\n" + structuredBegin + "\nold\n" + structuredEnd + "\nb\n", "a\n" + structuredBegin + "\nnew\n" + structuredEnd + "\nb\n"},
		{"before the sections", "a\n\n" + sectionsMarker + "\n", "a\n\n" + section + "\n" + sectionsMarker + "\n"},
		{"at the end", "a", "a\n\n" + section},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, spliceStructured(tt.doc, section)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
