package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickSpeculative runs the speculative phase on a tiny random model:
// each prompt kind without and with drafts, the same tokens both ways,
// drafts verified on the repeat prompts, the JSON and one doc section.
func TestQuickSpeculative(t *testing.T) {
	dir := t.TempDir()
	model := tinyModel(t, dir)
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\n"+sectionsMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "benchmarks")
	args := []string{"--quick", "--phase", "speculative", "--model", model, "--out", out, "--doc", doc, "--date", "2001-02-03",
		"--stream-prompt-tokens", "24", "--spec-gen-tokens", "16"}
	for range 2 { // the second run replaces the first's section
		if err := run(context.Background(), args, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	rep := readReport[SpecReport](t, filepath.Join(out, "speculative-2001-02-03.json"))
	kinds := map[string]bool{}
	for _, r := range rep.Rows {
		kinds[r.Prompt] = true
		if r.Plain.Decode <= 0 || r.Spec.Decode <= 0 || r.Ratio == nil || !r.Same || r.Accepted > r.Drafted {
			t.Errorf("%s S=%d k=%d: decode %v → %v, ratio %v, same %v, kept %d of %d", r.Prompt, r.Streams, r.K,
				r.Plain.Decode, r.Spec.Decode, r.Ratio, r.Same, r.Accepted, r.Drafted)
		}
		if r.Prompt == "repeat" && r.Drafted == 0 {
			t.Errorf("repeat prompt: no draft")
		}
	}
	if !kinds["repeat"] || !kinds["sampled"] {
		t.Errorf("prompt kinds %v", kinds)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), specBegin); n != 1 || !strings.Contains(string(md), "### Speculative decoding on the engine (2001-02-03)") {
		t.Errorf("%d speculative sections:\n%s", n, md)
	}
}

// TestSpecPrompts: a repeat prompt is one run said over and over.
func TestSpecPrompts(t *testing.T) {
	p := specPrompts("repeat", 7, 2, 10, 1000)
	for _, s := range p {
		if len(s) != 10 || s[0] != s[4] || s[3] != s[7] {
			t.Errorf("repeat prompt %v: want a run of 4 repeated", s)
		}
	}
	if r := specPrompts("sampled", 7, 1, 10, 1000)[0]; r[0] == r[4] && r[1] == r[5] {
		t.Errorf("sampled prompt %v repeats", r)
	}
}
