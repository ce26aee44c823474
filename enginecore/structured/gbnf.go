package structured

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// GBNF is llama.cpp's grammar format (grammars/README.md there): rules
// `name ::= body`, the root rule named root, "…" literals with C-like
// escapes, [...] and [^...] character classes, `.` for any character,
// grouping, |, *, +, ?, {m}, {m,}, {m,n} and # comments. vLLM's grammar
// field takes GBNF or Lark (it tells them apart as llguidance's
// grammar_from does), so Tandem does too: a grammar with a `name ::=`
// line is GBNF and is translated to LLGuidance's Lark before compiling.

// gbnfRuleStart is a line that starts a GBNF rule.
var gbnfRuleStart = regexp.MustCompile(`(?m)^\s*[A-Za-z0-9_-]+\s*::=`)

// isGBNF reports whether grammar is GBNF rather than Lark.
func isGBNF(grammar string) bool {
	for _, line := range strings.Split(grammar, "\n") {
		if i := strings.IndexAny(line, "#"); i >= 0 && !strings.Contains(line[:i], `"`) {
			line = line[:i]
		}
		if gbnfRuleStart.MatchString(line) {
			return true
		}
	}
	return false
}

// GBNFToLark translates a GBNF grammar to LLGuidance's Lark: each rule on
// one line (`r_name: …`, names prefixed so none is read as a Lark
// terminal or keyword), `start: r_root`, literals re-quoted, character
// classes and `.` as /regex/ terminals. Errors name the line.
func GBNFToLark(src string) (string, error) {
	p := &gbnfParser{src: src, line: 1}
	var rules []string
	seenRoot := false
	for {
		p.skipSpace(true)
		if p.eof() {
			break
		}
		name, ok := p.ident()
		if !ok {
			return "", p.errorf("want a rule name")
		}
		p.skipSpace(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return "", p.errorf("want ::= after %q", name)
		}
		p.pos += 3
		body, err := p.body()
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(body) == "" {
			body = `""`
		}
		seenRoot = seenRoot || name == "root"
		rules = append(rules, larkName(name)+": "+body)
	}
	if !seenRoot {
		return "", fmt.Errorf("%w: GBNF grammar has no root rule", ErrInvalid)
	}
	return "start: " + larkName("root") + "\n" + strings.Join(rules, "\n") + "\n", nil
}

// larkName maps a GBNF rule name to a Lark rule name: lower case (Lark's
// upper-case names are terminals), with a prefix so that names differing
// only in case stay apart and none collides with start.
func larkName(name string) string {
	var b strings.Builder
	b.WriteString("r_")
	for _, r := range name {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteString("u_")
			b.WriteRune(unicode.ToLower(r))
		case r == '-':
			b.WriteString("_d_")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

type gbnfParser struct {
	src  string
	pos  int
	line int
}

func (p *gbnfParser) eof() bool { return p.pos >= len(p.src) }

func (p *gbnfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: GBNF line %d: %s", ErrInvalid, p.line, fmt.Sprintf(format, args...))
}

// skipSpace skips blanks and comments, and newlines too when nl is set.
func (p *gbnfParser) skipSpace(nl bool) {
	for !p.eof() {
		switch c := p.src[p.pos]; {
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == '\n' && nl:
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *gbnfParser) ident() (string, bool) {
	start := p.pos
	for !p.eof() {
		c := p.src[p.pos]
		if c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos], p.pos > start
}

// atRuleStart reports whether a new rule (`name ::=`) starts at pos.
func (p *gbnfParser) atRuleStart() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if _, ok := p.ident(); !ok {
		return false
	}
	p.skipSpace(false)
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

// body translates a rule body, which runs over newlines until the next
// rule starts (or the input ends), into one line of Lark.
func (p *gbnfParser) body() (string, error) {
	var out []string
	depth := 0
	for {
		p.skipSpace(depth > 0)
		if p.eof() {
			break
		}
		c := p.src[p.pos]
		if c == '\n' {
			// A newline ends the body unless the next line goes on with it
			// (anything but a new rule).
			p.skipSpace(true)
			if p.eof() || p.atRuleStart() {
				break
			}
			continue
		}
		switch {
		case c == '"':
			lit, err := p.literal()
			if err != nil {
				return "", err
			}
			out = append(out, lit)
		case c == '[':
			cls, err := p.class()
			if err != nil {
				return "", err
			}
			out = append(out, cls)
		case c == '.':
			p.pos++
			out = append(out, `/(?s:.)/`)
		case c == '(':
			depth++
			p.pos++
			out = append(out, "(")
		case c == ')':
			if depth == 0 {
				return "", p.errorf("unbalanced )")
			}
			depth--
			p.pos++
			out = append(out, ")")
		case c == '|' || c == '*' || c == '+' || c == '?':
			p.pos++
			out = append(out, string(c))
		case c == '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return "", p.errorf("unterminated {")
			}
			rep := strings.ReplaceAll(p.src[p.pos:p.pos+end+1], " ", "")
			if !regexp.MustCompile(`^\{\d*(,\d*)?\}$`).MatchString(rep) || rep == "{}" || rep == "{,}" {
				return "", p.errorf("bad repetition %q", rep)
			}
			p.pos += end + 1
			out = append(out, rep)
		default:
			name, ok := p.ident()
			if !ok {
				r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
				return "", p.errorf("unexpected %q", r)
			}
			out = append(out, larkName(name))
		}
	}
	if depth != 0 {
		return "", p.errorf("unbalanced (")
	}
	// Postfix operators and repetitions attach to what precedes them.
	var b strings.Builder
	for i, t := range out {
		if i > 0 && !strings.ContainsAny(t[:1], "*+?{)") && out[i-1] != "(" {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

// escapeRune reads one escape after a backslash (GBNF's \n \r \t \\ \"
// \] \[ \- \^ \xHH \uHHHH \UHHHHHHHH).
func (p *gbnfParser) escapeRune() (rune, error) {
	if p.eof() {
		return 0, p.errorf("escape at the end")
	}
	c := p.src[p.pos]
	p.pos++
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.src) {
			return 0, p.errorf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return 0, p.errorf("bad \\%c escape", c)
		}
		p.pos += n
		return rune(v), nil
	}
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case '\\', '"', '[', ']', '-', '^', '/':
		return rune(c), nil
	}
	return 0, p.errorf("unknown escape \\%c", c)
}

// literal reads "…" and returns it as a Lark string, or as a /regex/ when
// it holds control characters a Lark string cannot spell.
func (p *gbnfParser) literal() (string, error) {
	p.pos++ // "
	var runes []rune
	for {
		if p.eof() || p.src[p.pos] == '\n' {
			return "", p.errorf("unterminated string")
		}
		c := p.src[p.pos]
		if c == '"' {
			p.pos++
			break
		}
		if c == '\\' {
			p.pos++
			r, err := p.escapeRune()
			if err != nil {
				return "", err
			}
			runes = append(runes, r)
			continue
		}
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		runes = append(runes, r)
	}
	if len(runes) == 0 {
		return `""`, nil
	}
	plain := true
	for _, r := range runes {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			plain = false
		}
	}
	var b strings.Builder
	if plain {
		b.WriteByte('"')
		for _, r := range runes {
			switch r {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String(), nil
	}
	b.WriteByte('/')
	for _, r := range runes {
		b.WriteString(regexRune(r, false))
	}
	b.WriteByte('/')
	return b.String(), nil
}

// class reads [...] or [^...] and returns it as a /regex/ terminal.
func (p *gbnfParser) class() (string, error) {
	p.pos++ // [
	var b strings.Builder
	b.WriteString("/[")
	if !p.eof() && p.src[p.pos] == '^' {
		b.WriteByte('^')
		p.pos++
	}
	n := 0
	for {
		if p.eof() || p.src[p.pos] == '\n' {
			return "", p.errorf("unterminated character class")
		}
		c := p.src[p.pos]
		if c == ']' {
			p.pos++
			break
		}
		var r rune
		if c == '\\' {
			p.pos++
			var err error
			if r, err = p.escapeRune(); err != nil {
				return "", err
			}
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += size
		}
		// A - between two characters is a range.
		if n > 0 && r == '-' && c == '-' && !p.eof() && p.src[p.pos] != ']' {
			b.WriteByte('-')
			n++
			continue
		}
		b.WriteString(regexRune(r, true))
		n++
	}
	if n == 0 {
		return "", p.errorf("empty character class")
	}
	b.WriteString("]/")
	return b.String(), nil
}

// regexRune spells r in a Rust regex (inside a class when inClass), safe
// inside Lark's /…/.
func regexRune(r rune, inClass bool) string {
	switch {
	case r == '/' || r < 0x20 || r == 0x7f || !unicode.IsPrint(r):
		return fmt.Sprintf(`\x{%X}`, r)
	case inClass && strings.ContainsRune(`\]-^[&~`, r):
		return `\` + string(r)
	case !inClass && strings.ContainsRune(`\.+*?()|[]{}^$#&-~`, r):
		return `\` + string(r)
	}
	return string(r)
}
