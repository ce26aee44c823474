package chattemplate

import (
	"regexp"
	"strings"
)

// preprocess applies, to the template source, the whitespace rules that
// transformers configures (trim_blocks, lstrip_blocks, and a single trailing
// newline dropped) exactly as @huggingface/jinja does them: as text rewrites
// before lexing. The engine then runs with all of its own whitespace options
// off, so that both agree on every template, including the corner cases
// where Python's lexer and @huggingface/jinja's rewrites would differ.
//
// It also removes transformers' {% generation %} and {% endgeneration %}
// tags (which mark assistant text for training masks), honouring their "-"
// modifiers.
func preprocess(src string) string {
	src = strings.TrimSuffix(src, "\n")
	src = lstripBlocks(src)
	src = trimBlocks(src)
	return generationTag.ReplaceAllStringFunc(src, func(m string) string {
		sub := generationTag.FindStringSubmatch(m)
		before, lstrip, rstrip, after := sub[1], sub[2], sub[3], sub[4]
		var b strings.Builder
		if lstrip == "" {
			b.WriteString(before)
		}
		if rstrip == "" {
			b.WriteString(after)
		}
		return b.String()
	})
}

// jsSpace is JavaScript's \s.
const jsSpace = `[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]`

var generationTag = regexp.MustCompile(`(?s)(` + jsSpace + `*)\{%(-?)` + jsSpace + `*(?:end)?generation` + jsSpace + `*(-?)%\}(` + jsSpace + `*)`)

// lstripBlocks removes spaces and tabs between the start of a line and a
// "{%", "{#" or "{-" (the JavaScript /^[ \t]*({[#%-])/gm, whose lines start
// after \n, \r, U+2028 and U+2029).
func lstripBlocks(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	lineStart := true
	for i := 0; i < len(src); {
		if lineStart {
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if j+1 < len(src) && src[j] == '{' && (src[j+1] == '%' || src[j+1] == '#' || src[j+1] == '-') {
				i = j // drop the indentation
			}
			lineStart = false
			continue
		}
		switch {
		case src[i] == '\n' || src[i] == '\r':
			lineStart = true
			b.WriteByte(src[i])
			i++
		case strings.HasPrefix(src[i:], "\u2028") || strings.HasPrefix(src[i:], "\u2029"):
			lineStart = true
			b.WriteString(src[i : i+3])
			i += 3
		default:
			b.WriteByte(src[i])
			i++
		}
	}
	return b.String()
}

// trimBlocks removes the newline right after "%}", "#}" or "-}" (the
// JavaScript /([#%-]})\n/g).
func trimBlocks(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); i++ {
		b.WriteByte(src[i])
		if src[i] == '}' && i > 0 && i+1 < len(src) && src[i+1] == '\n' &&
			(src[i-1] == '%' || src[i-1] == '#' || src[i-1] == '-') {
			i++ // skip the newline
		}
	}
	return b.String()
}
