package detok_test

import (
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/detok"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// TestSequence: one sequence's text from engine outputs — EOS hidden
// unless included, stop strings only after min_tokens, a stop string
// across outputs, nothing after the end.
func TestSequence(t *testing.T) {
	const eos = 257 // <|end_of_text|>, special in the byte tokenizer
	type push struct {
		ids               []int32
		finished, byToken bool
	}
	tests := []struct {
		name     string
		cfg      detok.SequenceConfig
		pushes   []push
		want     string // all text emitted
		wantStop string // the stop string that ended it, if one did
	}{
		{name: "EOS hidden", pushes: []push{{ids: ids("Hi")}, {ids: []int32{eos}, finished: true, byToken: true}}, want: "Hi"},
		{name: "EOS included", cfg: detok.SequenceConfig{IncludeStop: true}, pushes: []push{{ids: ids("Hi")}, {ids: []int32{eos}, finished: true, byToken: true}}, want: "Hi<|end_of_text|>"},
		{name: "length keeps the last token", pushes: []push{{ids: ids("ab"), finished: true}}, want: "ab"},
		{name: "stop string across outputs", cfg: detok.SequenceConfig{Stops: []string{"END"}}, pushes: []push{{ids: ids("one E")}, {ids: ids("ND two")}, {ids: ids("more")}}, want: "one ", wantStop: "END"},
		{name: "stop string included", cfg: detok.SequenceConfig{Stops: []string{"END"}, IncludeStop: true}, pushes: []push{{ids: ids("oneEND")}, {ids: ids("x")}}, want: "oneEND", wantStop: "END"},
		{name: "min_tokens defers stop strings", cfg: detok.SequenceConfig{Stops: []string{"a"}, MinTokens: 2}, pushes: []push{{ids: ids("a")}, {ids: ids("b")}, {ids: ids("ca")}}, want: "abc", wantStop: "a"},
		{name: "held-back prefix released at the end", cfg: detok.SequenceConfig{Stops: []string{"xyz"}}, pushes: []push{{ids: ids("ox")}, {ids: ids("y"), finished: true}}, want: "oxy"},
		{name: "UTF-8 split then flushed", pushes: []push{{ids: []int32{0xC3}}, {ids: []int32{0xA9}, finished: true}}, want: "é"},
	}
	tok := tokenizer.NewByte()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := detok.NewSequence(tok, tt.cfg)
			var got strings.Builder
			var stopAt string
			n := 0
			for _, p := range tt.pushes {
				if stopAt == "" {
					n += len(p.ids) // pushes after the end are ignored
				}
				text, stopped, which := seq.Push(p.ids, p.finished, p.byToken)
				got.WriteString(text)
				if stopped {
					if stopAt != "" {
						t.Fatalf("stopped twice")
					}
					stopAt = which
				}
			}
			if got.String() != tt.want || stopAt != tt.wantStop {
				t.Errorf("text %q, stop %q; want %q, %q", got.String(), stopAt, tt.want, tt.wantStop)
			}
			if seq.NumTokens() != n {
				t.Errorf("NumTokens %d, want %d", seq.NumTokens(), n)
			}
		})
	}
}
