package servertools

import "testing"

func edits(pairs ...string) []textEdit {
	var out []textEdit
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, textEdit{Old: &pairs[i], New: &pairs[i+1]})
	}
	return out
}

func TestApplyEdits(t *testing.T) {
	tests := []struct {
		name, orig string
		edits      []textEdit
		want, msg  string
	}{
		{"one", "a\nb\nc\n", edits("b", "B"), "a\nB\nc\n", ""},
		{"two matched against the original", "line1\nline2\nline3\n", edits("line2", "line2-edited", "line3\n", "line3\nline4\n"),
			"line1\nline2-edited\nline3\nline4\n", ""},
		{"order of edits does not matter", "x y z", edits("z", "Z", "x", "X"), "X y Z", ""},
		{"not unique", "dup\ndup\n", edits("dup", "changed"), "", "found 2 occurrences of edits[0].old_text in f, it must be unique"},
		{"whitespace-only copy counts", "dup \ndup\n", edits("dup", "x"), "", "found 2 occurrences of edits[0].old_text in f, it must be unique"},
		{"overlap", "line1\nline2\n", edits("line1\nline2", "a", "line2", "b"), "",
			"edits[0] and edits[1] overlap in f; merge them into one edit or target disjoint regions"},
		{"not found", "abc", edits("xyz", "q"), "", "could not find edits[0].old_text in f, it must match the file's current content exactly"},
		{"identical", "abc", edits("b", "b"), "", "no changes made: the replacement(s) produced identical content"},
		{"fuzzy quotes", "say \u201chi\u201d\nkeep\u00a0this \n", edits(`say "hi"`, `say "bye"`), "say \"bye\"\nkeep\u00a0this \n", ""},
		{"fuzzy trailing spaces, other lines kept", "a  \nb\t\nc \n", edits("b\nc", "B\nC"), "a  \nB\nC\n", ""},
		{"fuzzy dash across lines", "x \u2014 y\nz\n", edits("x - y\nz", "w"), "w\n", ""},
		{"no trailing newline", "a\nb", edits("b", "c"), "a\nc", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := applyEdits(tc.orig, tc.edits, "f")
			if got != tc.want || msg != tc.msg {
				t.Errorf("applyEdits = %q, %q; want %q, %q", got, msg, tc.want, tc.msg)
			}
		})
	}
}

func TestNormalizeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a  \r\nb\t", "a\nb"},
		{"\u2018q\u2019 \u201cq\u201d", `'q' "q"`},
		{"\u2010\u2013\u2014\u2212", "----"},
		{"a\u00a0b\u2009c\u3000d", "a b c d"},
		{"\n\n", "\n\n"}, // line count kept
	}
	for _, tc := range tests {
		if got := normalizeText(tc.in); got != tc.want {
			t.Errorf("normalizeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
