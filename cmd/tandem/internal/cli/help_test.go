package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestHelpGolden renders the test command's help: groups in order, the
// ungrouped flag under Other, aliases on one line, placeholders from
// backquotes, durations and names, defaults only when not zero.
func TestHelpGolden(t *testing.T) {
	var s settings
	var b strings.Builder
	if err := testCommand(&s).WriteHelp(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "help.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("help (-want +got), rerun with -update if intended:\n%s", diff)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		text          string
		indent, width int
		want          string
	}{
		{"a b c", 0, 80, "a b c"},
		{"aaa bbb ccc", 2, 9, "aaa bbb\n  ccc"},
		{"aaa bbb ccc", 2, 8, "aaa\n  bbb\n  ccc"},
		{"aaa bbb ccc", 0, 7, "aaa bbb\nccc"},
		{"toolongword x", 0, 4, "toolongword\nx"},
		{"  spaced   out ", 0, 80, "spaced out"},
	}
	for _, tt := range tests {
		if got := wrap(tt.text, tt.indent, tt.width); got != tt.want {
			t.Errorf("wrap(%q, %d, %d) = %q, want %q", tt.text, tt.indent, tt.width, got, tt.want)
		}
	}
}
