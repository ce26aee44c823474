package tokenizer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBehaviorSplitter checks HF Split's behaviors on the example of
// tokenizers' SplitDelimiterBehavior documentation ("the-final--countdown"
// split on "-"), and with invert, where the spans between dashes are the
// matches. Every row is what the tokenizers library itself gives
// (npm tokenizers 0.23.2: splitPreTokenizer("-", behavior,
// invert).preTokenizeString(text)).
func TestBehaviorSplitter(t *testing.T) {
	const text = "the-final--countdown"
	tests := []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Removed", false, []string{"the", "final", "countdown"}},
		{"Isolated", false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", false, []string{"the-", "final-", "-", "countdown"}},
		{"MergedWithNext", false, []string{"the", "-final", "-", "-countdown"}},
		{"Contiguous", false, []string{"the", "-", "final", "--", "countdown"}},
		{"Removed", true, []string{"-", "-", "-"}},
		{"Isolated", true, []string{"the", "-", "final", "-", "-", "countdown"}},
		{"MergedWithPrevious", true, []string{"the", "-final", "-", "-countdown"}},
		{"MergedWithNext", true, []string{"the-", "final-", "-", "countdown"}},
		{"Contiguous", true, []string{"the", "-", "final", "--", "countdown"}},
	}
	for _, tt := range tests {
		name := tt.behavior
		if tt.invert {
			name += "/invert"
		}
		t.Run(name, func(t *testing.T) {
			sp, err := newBehaviorSplitter("-", tt.behavior, tt.invert)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, sp.split(nil, text, true)); diff != "" {
				t.Errorf("split (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := newBehaviorSplitter("-", "Shuffled", false); err == nil {
		t.Error("an unknown behavior was accepted")
	}
}
