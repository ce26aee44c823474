package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQuickFrontend runs the frontend phase in --quick mode against real
// tandem processes (a null engine and a frontend): every row measured,
// the JSON and the doc section written.
func TestQuickFrontend(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/tandem and runs its processes")
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(doc, []byte("# Benchmarks\n\n"+sectionsMarker+"\n\nolder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "benchmarks")
	args := []string{"--quick", "--phase", "frontend", "--out", out, "--doc", doc, "--date", "2001-02-03"}
	if err := run(context.Background(), args, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "frontend-2001-02-03.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep FrontendReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var streams []int
	for _, r := range rep.Rows {
		streams = append(streams, r.Streams)
		if r.Tokens != r.Requests*rep.GenTokens || r.TokS <= 0 || r.DirectTokS <= 0 || r.TTFT.P50 <= 0 || r.DirectTTFT.P50 <= 0 {
			t.Errorf("S=%d: row %+v", r.Streams, r)
		}
		if r.AllocsPerToken <= 0 {
			t.Errorf("S=%d: %v allocs/token, want > 0 from the frontend's /metrics", r.Streams, r.AllocsPerToken)
		}
		if r.Paced == nil || r.Paced.TTFT.P50 <= 0 || r.Paced.DirectTTFT.P50 <= 0 {
			t.Errorf("S=%d: paced %+v", r.Streams, r.Paced)
		} else if paired := r.Streams > 1; r.Paced.Paired != paired || paired && r.Paced.PairAddedUs == (Percentiles{}) {
			t.Errorf("S=%d: paced run paired %v (per pair %+v), want paired %v", r.Streams, r.Paced.Paired, r.Paced.PairAddedUs, paired)
		}
	}
	if diff := cmp.Diff([]int{1, 4}, streams); diff != "" {
		t.Errorf("stream counts (-want +got):\n%s", diff)
	}
	if len(rep.Wire) != 4 || rep.Wire[0].EncodeNs <= 0 || rep.Wire[3].DecodeNs <= 0 {
		t.Errorf("wire measures %+v", rep.Wire)
	}
	md, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{frontendBegin, frontendEnd, "Quick smoke run", "tok/s per frontend core", "Added TTFT, paced", "OUTPUTS, 64 outputs"} {
		if !strings.Contains(s, want) {
			t.Errorf("doc lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, frontendEnd), strings.Index(s, sectionsMarker); i < 0 || j < i || !strings.HasSuffix(s, "older\n") {
		t.Errorf("frontend section not before the dated sections:\n%s", s)
	}
}

func TestSpliceFrontend(t *testing.T) {
	section := frontendBegin + "\nnew\n" + frontendEnd + "\n"
	tests := []struct{ name, doc, want string }{
		{"replaces", "a\n" + frontendBegin + "\nold\n" + frontendEnd + "\nb\n", "a\n" + section + "b\n"},
		{"before the sections", "a\n\n" + sectionsMarker + "\n", "a\n\n" + section + "\n" + sectionsMarker + "\n"},
		{"appended", "a", "a\n\n" + section},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, spliceFrontend(tt.doc, section)); diff != "" {
				t.Errorf("spliceFrontend (-want +got):\n%s", diff)
			}
		})
	}
}
