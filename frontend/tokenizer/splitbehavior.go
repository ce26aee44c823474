package tokenizer

import (
	"fmt"

	"github.com/dlclark/regexp2"
)

// behaviorSplitter is HF's Split pre-tokenizer for every behavior but
// Isolated without invert (regexSplitter, or a scanner, serves that):
// the text is cut into matches of the pattern and the spans between
// them (with invert, the spans are the matches), then
//
//	Removed             the matches are dropped;
//	Isolated            every piece is a word;
//	MergedWithPrevious  a match joins the piece before it, unless that
//	                    piece is a match too;
//	MergedWithNext      a match joins the piece after it, likewise;
//	Contiguous          runs of adjacent matches become one word,
//
// as tokenizers' SplitDelimiterBehavior does.
type behaviorSplitter struct {
	re       *regexp2.Regexp
	behavior string
	invert   bool
}

// splitBehaviors are the behaviors behaviorSplitter implements.
var splitBehaviors = map[string]bool{"Removed": true, "Isolated": true, "MergedWithPrevious": true, "MergedWithNext": true, "Contiguous": true}

func newBehaviorSplitter(pattern, behavior string, invert bool) (*behaviorSplitter, error) {
	if !splitBehaviors[behavior] {
		return nil, fmt.Errorf("%w: Split behavior %q", ErrUnsupported, behavior)
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("%w: split regex %q: %w", ErrUnsupported, pattern, err)
	}
	return &behaviorSplitter{re: re, behavior: behavior, invert: invert}, nil
}

// piece is a span [a, b) of the text and whether it is a match.
type piece struct {
	a, b  int
	match bool
}

func (sp *behaviorSplitter) split(dst []string, s string, _ bool) []string {
	pieces := sp.pieces(s)
	var out []piece
	switch sp.behavior {
	case "Removed":
		for _, p := range pieces {
			if !p.match {
				out = append(out, p)
			}
		}
	case "Isolated":
		out = pieces
	case "MergedWithPrevious":
		prev := false
		for _, p := range pieces {
			if p.match && !prev && len(out) > 0 {
				out[len(out)-1].b = p.b
			} else {
				out = append(out, p)
			}
			prev = p.match
		}
	case "MergedWithNext":
		prev := false
		for i := len(pieces) - 1; i >= 0; i-- {
			p := pieces[i]
			if p.match && !prev && len(out) > 0 {
				out[len(out)-1].a = p.a
			} else {
				out = append(out, p)
			}
			prev = p.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case "Contiguous":
		for i, p := range pieces {
			if i > 0 && p.match == pieces[i-1].match && len(out) > 0 {
				out[len(out)-1].b = p.b
			} else {
				out = append(out, p)
			}
		}
	}
	for _, p := range out {
		if p.b > p.a {
			dst = append(dst, s[p.a:p.b])
		}
	}
	return dst
}

// pieces cuts s into the pattern's non-empty matches and the spans
// between them, in order, marking matches (or, inverted, the spans).
func (sp *behaviorSplitter) pieces(s string) []piece {
	runes, off := runeOffsets(s)
	var out []piece
	start := 0
	m, err := sp.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			a, b := off[m.Index], off[m.Index+m.Length]
			if a > start {
				out = append(out, piece{start, a, sp.invert})
			}
			out = append(out, piece{a, b, !sp.invert})
			start = b
		}
		m, err = sp.re.FindNextMatch(m)
	}
	if start < len(s) {
		out = append(out, piece{start, len(s), sp.invert})
	}
	return out
}
