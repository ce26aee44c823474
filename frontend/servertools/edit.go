package servertools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

func editFileTool() *Tool {
	def := function("edit_file", "Edit a file using exact text replacement. Each edits[].old_text must be unique in the file "+
		"and is matched against the original content, not incrementally. Merge nearby changes into "+
		"one edit instead of overlapping edits. Use write_file to replace the whole file.",
		map[string][2]string{"path": {"string", "Path to the file to edit"}}, "path", "edits")
	props := def["function"].(map[string]any)["parameters"].(map[string]any)["properties"].(map[string]any)
	props["edits"] = map[string]any{
		"type":        "array",
		"description": "One or more exact text replacements to apply",
		"items": function("", "", map[string][2]string{
			"old_text": {"string", "Exact text to find; must be unique in the file and must not overlap with other edits"},
			"new_text": {"string", "Text to replace old_text with"},
		}, "old_text", "new_text")["function"].(map[string]any)["parameters"],
	}
	return &Tool{Name: "edit_file", DisplayName: "Edit file", Write: true, Definition: def, invoke: editFile}
}

// textEdit is one replacement of edit_file.
type textEdit struct {
	Old *string `json:"old_text"`
	New *string `json:"new_text"`
}

func editFile(ctx context.Context, c call) (any, error) {
	p := struct {
		Path  *string         `json:"path"`
		Edits json.RawMessage `json:"edits"`
	}{}
	if err := decode(c.params, &p); err != nil {
		return nil, err
	}
	switch {
	case p.Path == nil:
		return nil, missing("path")
	case p.Edits == nil:
		return nil, missing("edits")
	}
	var edits []textEdit
	if json.Unmarshal(p.Edits, &edits) != nil || len(edits) == 0 {
		return failf(`"edits" must be a non-empty array`), nil
	}
	for i, e := range edits {
		switch {
		case e.Old == nil:
			return nil, missing(fmt.Sprintf("edits[%d].old_text", i))
		case e.New == nil:
			return nil, missing(fmt.Sprintf("edits[%d].new_text", i))
		case *e.Old == "":
			return failf("edits[%d].old_text must not be empty", i), nil
		}
	}
	path := *p.Path
	b, ok := c.fs.readFile(ctx, path)
	if !ok {
		return failf("failed to open file: %s", path), nil
	}
	updated, msg := applyEdits(string(b), edits, path)
	if msg != "" {
		return failf("%s", msg), nil
	}
	if !c.fs.writeFile(ctx, path, []byte(updated)) {
		return failf("failed to write file: %s", path), nil
	}
	return map[string]any{"result": "file edited successfully", "path": path, "edits_applied": len(edits)}, nil
}

// match is an edit found in the base text.
type match struct {
	edit  int // index in the request's edits
	at, n int // byte offset and length in the base text
	new   string
}

// applyEdits applies every edit to the original content, each matched
// against it (not against the others' results), or says why it cannot
// (msg). An old_text found only once whitespace and typographic quotes
// and dashes are normalized (fuzzy) matches too: then the lines no edit
// touches are kept byte for byte.
func applyEdits(orig string, edits []textEdit, path string) (updated, msg string) {
	normOrig := normalizeText(orig)
	fuzzy := false
	for i, e := range edits {
		if strings.Contains(orig, *e.Old) {
			continue
		}
		if !strings.Contains(normOrig, normalizeText(*e.Old)) {
			return "", fmt.Sprintf("could not find edits[%d].old_text in %s, it must match the file's current content exactly", i, path)
		}
		fuzzy = true
	}
	base := orig
	if fuzzy {
		base = normOrig
	}
	var ms []match
	for i, e := range edits {
		needle := *e.Old
		if fuzzy {
			needle = normalizeText(needle)
		}
		// uniqueness counts normalized text, so a copy that differs only in
		// whitespace counts too
		if n := countNonOverlapping(normOrig, normalizeText(*e.Old)); n > 1 {
			return "", fmt.Sprintf("found %d occurrences of edits[%d].old_text in %s, it must be unique", n, i, path)
		}
		at := strings.Index(base, needle)
		if at < 0 { // found exactly, but not once normalized
			return "", fmt.Sprintf("could not find edits[%d].old_text in %s, it must match the file's current content exactly", i, path)
		}
		ms = append(ms, match{edit: i, at: at, n: len(needle), new: *e.New})
	}
	slices.SortStableFunc(ms, func(a, b match) int { return a.at - b.at })
	for i := 1; i < len(ms); i++ {
		if ms[i-1].at+ms[i-1].n > ms[i].at {
			return "", fmt.Sprintf("edits[%d] and edits[%d] overlap in %s; merge them into one edit or target disjoint regions", ms[i-1].edit, ms[i].edit, path)
		}
	}
	if fuzzy {
		updated = replaceKeepingLines(orig, base, ms)
	} else {
		updated = replace(base, ms, 0)
	}
	if updated == orig {
		return "", "no changes made: the replacement(s) produced identical content"
	}
	return updated, ""
}

// replace applies ms (sorted, disjoint; offsets less off) to s.
func replace(s string, ms []match, off int) string {
	var b strings.Builder
	last := 0
	for _, m := range ms {
		b.WriteString(s[last : m.at-off])
		b.WriteString(m.new)
		last = m.at - off + m.n
	}
	b.WriteString(s[last:])
	return b.String()
}

// replaceKeepingLines applies ms, matched in base (orig normalized line
// by line, so line i of one is line i of the other), taking the lines no
// edit touches from orig.
func replaceKeepingLines(orig, base string, ms []match) string {
	origLines, spans := linesWithEndings(orig), lineSpans(base)
	type group struct {
		start, end int // lines, end exclusive
		ms         []match
	}
	var groups []group
	for _, m := range ms {
		start, end := touchedLines(spans, m.at, m.n)
		if k := len(groups) - 1; k >= 0 && start < groups[k].end {
			groups[k].end = max(groups[k].end, end)
			groups[k].ms = append(groups[k].ms, m)
			continue
		}
		groups = append(groups, group{start, end, []match{m}})
	}
	var b strings.Builder
	next := 0
	for _, g := range groups {
		for _, l := range origLines[next:g.start] {
			b.WriteString(l)
		}
		from, to := spans[g.start][0], spans[g.end-1][1]
		b.WriteString(replace(base[from:to], g.ms, from))
		next = g.end
	}
	for _, l := range origLines[next:] {
		b.WriteString(l)
	}
	return b.String()
}

// touchedLines are the lines [start, end) that bytes [at, at+n) fall in.
func touchedLines(spans [][2]int, at, n int) (start, end int) {
	start = len(spans) - 1
	for i, s := range spans {
		if s[0] <= at && at < s[1] {
			start = i
			break
		}
	}
	end = start
	for end < len(spans)-1 && spans[end][1] < at+n {
		end++
	}
	return start, end + 1
}

// linesWithEndings splits s after each '\n' (the last line may lack one).
func linesWithEndings(s string) []string {
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// lineSpans are the byte ranges of s's lines, newline included.
func lineSpans(s string) [][2]int {
	var out [][2]int
	off := 0
	for _, l := range linesWithEndings(s) {
		out = append(out, [2]int{off, off + len(l)})
		off += len(l)
	}
	return out
}

// countNonOverlapping counts needle's non-overlapping occurrences.
func countNonOverlapping(s, needle string) int {
	if needle == "" {
		return 0
	}
	return strings.Count(s, needle)
}

// fuzzyChars are typographic characters read as their ASCII kin:
// quotes, dashes, the minus sign and the special spaces.
var fuzzyChars = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", `"`, "\u201D", `"`, "\u201E", `"`, "\u201F", `"`,
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2004", " ", "\u2005", " ", "\u2006", " ", "\u2007", " ",
	"\u2008", " ", "\u2009", " ", "\u200A", " ", "\u202F", " ", "\u205F", " ", "\u3000", " ")

// normalizeText strips each line's trailing spaces, tabs and '\r' and
// reads typographic characters as ASCII; the line count is unchanged.
func normalizeText(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = fuzzyChars.Replace(strings.TrimRight(l, " \t\r"))
	}
	return strings.Join(ls, "\n")
}
