package chattemplate

import (
	"regexp"
	"strings"
)

// rawEnd finds the end of a {% raw %} block.
var rawEnd = regexp.MustCompile(`\{%[-+]?\s*endraw\s*[-+]?%\}`)

// rewriteTernaries rewrites conditional expressions nested in brackets,
//
//	f(a if c else b)   ('x' if c else 'y') + z   [a if c else b]
//
// which gonja v2.9.1 cannot parse (it knows "a if c else b" only as a whole
// {{ }} or {% set %} expression), into the equivalent
//
//	(((c) and [(a)]) or [(b)])[0]
//
// which evaluates the same way: c once, then only the branch taken. A
// missing else yields none. Chained conditionals (a if c else b if d else e)
// rewrite recursively. Text outside tags, comments and raw blocks is left
// alone.
//
// It also returns the deepest bracket nesting inside a tag.
func rewriteTernaries(src string) (string, int) {
	var b strings.Builder
	deepest := 0
	b.Grow(len(src))
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "{")
		if j < 0 {
			b.WriteString(src[i:])
			break
		}
		j += i
		b.WriteString(src[i:j])
		switch {
		case strings.HasPrefix(src[j:], "{#"):
			end := strings.Index(src[j:], "#}")
			if end < 0 {
				b.WriteString(src[j:])
				return b.String(), deepest
			}
			b.WriteString(src[j : j+end+2])
			i = j + end + 2
		case strings.HasPrefix(src[j:], "{{"), strings.HasPrefix(src[j:], "{%"):
			closer := "}}"
			if src[j+1] == '%' {
				closer = "%}"
			}
			open := j + 2
			if open < len(src) && (src[open] == '-' || src[open] == '+') {
				open++ // whitespace control stays with the brace
			}
			toks, end, depth := scanTag(src, open, closer)
			deepest = max(deepest, depth)
			if end < 0 { // unterminated: leave it to the parser to report
				b.WriteString(src[j:])
				return b.String(), deepest
			}
			body := src[open:end]
			b.WriteString(src[j:open])
			if isRawTag(body) {
				stop := rawEnd.FindStringIndex(src[end:])
				if stop == nil {
					b.WriteString(src[j+2:])
					return b.String(), deepest
				}
				b.WriteString(src[open : end+stop[1]])
				i = end + stop[1]
				continue
			}
			r := &ternaryRewriter{src: src, toks: toks, match: matchBrackets(toks)}
			if len(toks) > 0 {
				b.WriteString(src[open:toks[0].start])
				b.WriteString(r.top(closer == "}}"))
				b.WriteString(src[toks[len(toks)-1].end:end])
			} else {
				b.WriteString(body)
			}
			b.WriteString(closer)
			i = end + len(closer)
		default:
			b.WriteByte('{')
			i = j + 1
		}
	}
	return b.String(), deepest
}

type tokKind uint8

const (
	tokOther tokKind = iota
	tokOpen          // ( [ {
	tokClose         // ) ] }
	tokDelim         // , :
	tokIf
	tokElse
)

type tagToken struct {
	kind       tokKind
	start, end int // byte offsets into the source
}

// scanTag splits the inside of a tag that starts at i into tokens, up to the
// closer outside strings and brackets. It returns the closer's offset, or
// -1 when the tag does not end, and the deepest bracket nesting.
func scanTag(src string, i int, closer string) ([]tagToken, int, int) {
	var toks []tagToken
	depth, deepest := 0, 0
	for i < len(src) {
		c := src[i]
		switch {
		case depth == 0 && strings.HasPrefix(src[i:], closer):
			return toks, i, deepest
		case depth == 0 && c == '-' && strings.HasPrefix(src[i+1:], closer):
			return toks, i + 1, deepest // the "-" of "-}}" stays outside
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(src))
			toks = append(toks, tagToken{kind: tokOther, start: i, end: end})
			i = end
		case c == '(' || c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
			toks = append(toks, tagToken{kind: tokOpen, start: i, end: i + 1})
			i++
		case c == ')' || c == ']' || c == '}':
			depth = max(depth-1, 0)
			toks = append(toks, tagToken{kind: tokClose, start: i, end: i + 1})
			i++
		case c == ',' || c == ':':
			toks = append(toks, tagToken{kind: tokDelim, start: i, end: i + 1})
			i++
		case isNameStart(c):
			j := i + 1
			for j < len(src) && (isNameStart(src[j]) || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			kind := tokOther
			if dotted := i > 0 && src[i-1] == '.'; !dotted {
				switch src[i:j] {
				case "if":
					kind = tokIf
				case "else":
					kind = tokElse
				}
			}
			toks = append(toks, tagToken{kind: kind, start: i, end: j})
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			toks = append(toks, tagToken{kind: tokOther, start: i, end: i + 1})
			i++
		}
	}
	return toks, -1, deepest
}

func isNameStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isRawTag(body string) bool {
	return strings.TrimSpace(strings.Trim(body, "-+")) == "raw"
}

// matchBrackets maps each opening token to its closing token (and an
// unmatched opener to the end of the tag).
func matchBrackets(toks []tagToken) []int {
	match := make([]int, len(toks))
	var stack []int
	for i, t := range toks {
		match[i] = i
		switch t.kind {
		case tokOpen:
			stack = append(stack, i)
		case tokClose:
			if len(stack) > 0 {
				match[stack[len(stack)-1]] = i
				stack = stack[:len(stack)-1]
			}
		}
	}
	for _, open := range stack {
		match[open] = len(toks) - 1
	}
	return match
}

type ternaryRewriter struct {
	src   string
	toks  []tagToken
	match []int // index of the closing token of each opening token
}

// top rewrites a whole tag: the expression of {{ }} and the value of
// {% set %} may be conditionals too (gonja requires their else); the other
// statements only inside brackets ({% for x in y if c %} is a filter).
func (r *ternaryRewriter) top(isOutput bool) string {
	n := len(r.toks)
	if isOutput {
		return r.item(0, n)
	}
	if r.text(0) != "set" {
		return r.emit(0, n)
	}
	for i := 1; i < n; i++ {
		switch {
		case r.toks[i].kind == tokOpen:
			i = r.match[i]
		case r.isAssign(i) && i+1 < n:
			return r.emit(0, i+1) + r.src[r.toks[i].end:r.toks[i+1].start] + r.item(i+1, n)
		}
	}
	return r.emit(0, n)
}

func (r *ternaryRewriter) text(i int) string { return r.src[r.toks[i].start:r.toks[i].end] }

// isAssign reports whether token i is a lone "=" (not part of ==, !=, <=, >=).
func (r *ternaryRewriter) isAssign(i int) bool {
	if r.text(i) != "=" {
		return false
	}
	t := r.toks[i]
	before := t.start > 0 && strings.ContainsRune("=!<>", rune(r.src[t.start-1]))
	after := t.end < len(r.src) && r.src[t.end] == '='
	return !before && !after
}

// emit reproduces tokens [lo, hi) with the insides of brackets rewritten.
func (r *ternaryRewriter) emit(lo, hi int) string {
	if lo >= hi {
		return ""
	}
	var b strings.Builder
	for i := lo; i < hi; i++ {
		t := r.toks[i]
		if i > lo {
			b.WriteString(r.src[r.toks[i-1].end:t.start])
		}
		if t.kind != tokOpen || r.match[i] == i || r.match[i] >= hi {
			b.WriteString(r.src[t.start:t.end])
			continue
		}
		closeAt := r.match[i]
		// gonja cannot call a method on a parenthesized expression,
		// (x).strip(); [(x)][0].strip() is the same and it can.
		boxed := r.text(i) == "(" && !r.isCall(i) && r.methodFollows(closeAt)
		if boxed {
			b.WriteByte('[')
		}
		b.WriteString(r.src[t.start:t.end])
		if closeAt > i+1 {
			b.WriteString(r.src[t.end:r.toks[i+1].start])
			b.WriteString(r.group(i+1, closeAt))
			b.WriteString(r.src[r.toks[closeAt-1].end:r.toks[closeAt].start])
		} else {
			b.WriteString(r.src[t.end:r.toks[closeAt].start])
		}
		b.WriteString(r.src[r.toks[closeAt].start:r.toks[closeAt].end])
		if boxed {
			b.WriteString("][0]")
		}
		i = closeAt
	}
	return b.String()
}

// isCall reports whether the "(" at i opens a call's arguments: it follows
// a name (not a keyword), a ")" or a "]".
func (r *ternaryRewriter) isCall(i int) bool {
	if i == 0 {
		return false
	}
	p := r.toks[i-1]
	if p.kind == tokClose {
		return r.text(i-1) != "}"
	}
	if p.kind != tokOther || !isNameStart(r.src[p.start]) {
		return false
	}
	switch r.text(i - 1) {
	case "and", "or", "not", "in", "is", "if", "else":
		return false
	}
	return true
}

// methodFollows reports whether ".name(" follows token c.
func (r *ternaryRewriter) methodFollows(c int) bool {
	return c+3 < len(r.toks) && r.text(c+1) == "." && r.toks[c+2].kind == tokOther &&
		isNameStart(r.src[r.toks[c+2].start]) && r.text(c+3) == "("
}

// group rewrites the items of a bracket's inside, [lo, hi), separated by
// commas and colons at this depth.
func (r *ternaryRewriter) group(lo, hi int) string {
	var b strings.Builder
	start := lo
	for i := lo; i <= hi; i++ {
		if i < hi && r.toks[i].kind == tokOpen {
			i = r.match[i]
			continue
		}
		if i < hi && r.toks[i].kind != tokDelim {
			continue
		}
		if start < i {
			b.WriteString(r.item(start, i))
		}
		if i < hi {
			if start < i {
				b.WriteString(r.src[r.toks[i-1].end:r.toks[i].start])
			}
			b.WriteString(r.src[r.toks[i].start:r.toks[i].end])
			if i+1 < hi {
				b.WriteString(r.src[r.toks[i].end:r.toks[i+1].start])
			}
		}
		start = i + 1
	}
	return b.String()
}

// item rewrites one expression [lo, hi) that may be a conditional.
func (r *ternaryRewriter) item(lo, hi int) string {
	ifAt, elseAt := -1, -1
	for i := lo; i < hi; i++ {
		switch r.toks[i].kind {
		case tokOpen:
			i = r.match[i]
		case tokIf:
			if ifAt < 0 {
				ifAt = i
			}
		case tokElse:
			if ifAt >= 0 && elseAt < 0 {
				elseAt = i
			}
		}
	}
	if ifAt <= lo {
		return r.emit(lo, hi)
	}
	if hi-lo > 2 && r.isAssign(lo+1) && ifAt > lo+2 {
		// A keyword argument: name=value.
		return r.emit(lo, lo+2) + r.src[r.toks[lo+1].end:r.toks[lo+2].start] + r.item(lo+2, hi)
	}
	condEnd, alt := hi, "none"
	if elseAt > ifAt {
		condEnd = elseAt
		alt = r.item(elseAt+1, hi)
	}
	return "(((" + r.emit(ifAt+1, condEnd) + ") and [(" + r.emit(lo, ifAt) + ")]) or [(" + alt + ")])[0]"
}
