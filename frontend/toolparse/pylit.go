package toolparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

var (
	// errIncomplete: the text so far is the beginning of a call list.
	errIncomplete = errors.New("toolparse: incomplete")
	// errSyntax: no more text can make it one.
	errSyntax = errors.New("toolparse: not a pythonic call list")
)

// parseCalls reads a pythonic call list from the start of src: its calls
// with their arguments as JSON, and the length of the list's text.
func parseCalls(src []byte) ([]Call, int, error) {
	p := &pyParser{src: src}
	calls, err := p.list()
	return calls, p.i, err
}

// pyParser is a recursive-descent reader of the Python a call list is
// written in: calls with keyword arguments, and literal values.
type pyParser struct {
	src   []byte
	i     int
	depth int
}

// peek returns the next byte after whitespace; at the end, errIncomplete.
func (p *pyParser) peek() (byte, error) {
	for p.i < len(p.src) && isSpace(p.src[p.i]) {
		p.i++
	}
	if p.i == len(p.src) {
		return 0, errIncomplete
	}
	return p.src[p.i], nil
}

// expect reads b after whitespace.
func (p *pyParser) expect(b byte) error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c != b {
		return errSyntax
	}
	p.i++
	return nil
}

// items reads ", "-separated items up to close (a trailing comma allowed),
// the opening bracket already read.
func (p *pyParser) items(close byte, item func() error) error {
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return err
		}
		if c == close {
			p.i++
			return nil
		}
		if !first {
			if err := p.expect(','); err != nil {
				return err
			}
			if c, err = p.peek(); err != nil {
				return err
			}
			if c == close {
				p.i++
				return nil
			}
		}
		if err := item(); err != nil {
			return err
		}
	}
}

func (p *pyParser) list() ([]Call, error) {
	var calls []Call
	if err := p.expect('['); err != nil {
		return nil, err
	}
	err := p.items(']', func() error {
		c, err := p.call()
		calls = append(calls, c)
		return err
	})
	if err == nil && len(calls) == 0 {
		err = errSyntax // [] calls nothing
	}
	return calls, err
}

func (p *pyParser) call() (Call, error) {
	name, err := p.ident()
	if err != nil {
		return Call{}, err
	}
	if err := p.expect('('); err != nil {
		return Call{}, err
	}
	var args bytes.Buffer
	args.WriteByte('{')
	seen := map[string]bool{}
	err = p.items(')', func() error {
		key, err := p.ident()
		if err != nil {
			return err
		}
		if seen[key] {
			return errSyntax // Python: keyword argument repeated
		}
		seen[key] = true
		if err := p.expect('='); err != nil {
			return err
		}
		if len(seen) > 1 {
			args.WriteByte(',')
		}
		writeString(&args, key)
		args.WriteByte(':')
		return p.value(&args)
	})
	args.WriteByte('}')
	return Call{Name: name, Arguments: args.String()}, err
}

// ident reads an identifier after whitespace; one that reaches the end
// may go on.
func (p *pyParser) ident() (string, error) {
	c, err := p.peek()
	if err != nil {
		return "", err
	}
	if !isIdentStart(c) {
		return "", errSyntax
	}
	start := p.i
	for p.i < len(p.src) && (isIdentStart(p.src[p.i]) || isDigit(p.src[p.i])) {
		p.i++
	}
	if p.i == len(p.src) {
		return "", errIncomplete
	}
	return string(p.src[start:p.i]), nil
}

func isIdentStart(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '_' }

// value reads a literal and writes it as JSON.
func (p *pyParser) value(out *bytes.Buffer) error {
	if p.depth++; p.depth > maxDepth {
		return errSyntax
	}
	defer func() { p.depth-- }()
	c, err := p.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '\'' || c == '"':
		return p.str(out, false)
	case c == '-' || c == '+' || c == '.' || isDigit(c):
		return p.number(out)
	case c == '[':
		p.i++
		out.WriteByte('[')
		n := 0
		err := p.items(']', func() error {
			if n++; n > 1 {
				out.WriteByte(',')
			}
			return p.value(out)
		})
		out.WriteByte(']')
		return err
	case c == '{':
		p.i++
		out.WriteByte('{')
		n := 0
		err := p.items('}', func() error {
			if n++; n > 1 {
				out.WriteByte(',')
			}
			if c, err := p.peek(); err != nil || c != '\'' && c != '"' && !isIdentStart(c) {
				if err == nil {
					err = errSyntax // keys are strings
				}
				return err
			}
			if err := p.value(out); err != nil {
				return err
			}
			if out.Bytes()[out.Len()-1] != '"' {
				return errSyntax
			}
			if err := p.expect(':'); err != nil {
				return err
			}
			out.WriteByte(':')
			return p.value(out)
		})
		out.WriteByte('}')
		return err
	case isIdentStart(c):
		word, err := p.ident()
		if err != nil {
			return err
		}
		switch word {
		case "True":
			out.WriteString("true")
		case "False":
			out.WriteString("false")
		case "None":
			out.WriteString("null")
		case "r", "R", "u", "U": // a string prefix
			if p.src[p.i] != '\'' && p.src[p.i] != '"' {
				return errSyntax
			}
			return p.str(out, word == "r" || word == "R")
		default:
			return errSyntax // names, calls, f-strings: not literals
		}
		return nil
	}
	return errSyntax
}

// str reads a string literal ('…', "…", ”'…”', """…""") at p.i.
func (p *pyParser) str(out *bytes.Buffer, raw bool) error {
	q := p.src[p.i]
	rest := p.src[p.i:]
	triple := len(rest) >= 3 && rest[1] == q && rest[2] == q
	if len(rest) < 3 && (len(rest) < 2 || rest[1] == q) {
		return errIncomplete // '' may be the start of '''
	}
	p.i++
	if triple {
		p.i += 2
	}
	var s strings.Builder
	for {
		if p.i >= len(p.src) {
			return errIncomplete
		}
		c := p.src[p.i]
		switch {
		case c == q && !triple:
			p.i++
			writeString(out, s.String())
			return nil
		case c == q:
			if p.i+3 > len(p.src) {
				return errIncomplete
			}
			if p.src[p.i+1] == q && p.src[p.i+2] == q {
				p.i += 3
				writeString(out, s.String())
				return nil
			}
			s.WriteByte(c)
			p.i++
		case c == '\n' && !triple:
			return errSyntax
		case c == '\\':
			if p.i+1 >= len(p.src) {
				return errIncomplete
			}
			if raw {
				s.Write(p.src[p.i : p.i+2])
				p.i += 2
				continue
			}
			if err := p.escape(&s); err != nil {
				return err
			}
		default:
			s.WriteByte(c)
			p.i++
		}
	}
}

// pyEscapes are Python's one-letter escapes; backslash-newline joins lines.
var pyEscapes = map[byte]string{'\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\n': ""}

// escape reads the escape sequence at p.i (a backslash) into s.
func (p *pyParser) escape(s *strings.Builder) error {
	c := p.src[p.i+1]
	if r, ok := pyEscapes[c]; ok {
		s.WriteString(r)
		p.i += 2
		return nil
	}
	digits, base := 0, 16
	switch {
	case c == 'x':
		digits = 2
	case c == 'u':
		digits = 4
	case c == 'U':
		digits = 8
	case '0' <= c && c <= '7':
		base = 8
	case c == 'N':
		return errSyntax // \N{name}: not supported
	default: // Python keeps unknown escapes as written
		s.WriteByte('\\')
		p.i++
		return nil
	}
	start := p.i + 2
	if base == 8 {
		start = p.i + 1
		end := start
		for end < len(p.src) && end < start+3 && '0' <= p.src[end] && p.src[end] <= '7' {
			end++
		}
		if end == len(p.src) && end < start+3 {
			return errIncomplete
		}
		n, _ := strconv.ParseUint(string(p.src[start:end]), 8, 32)
		s.WriteRune(rune(n))
		p.i = end
		return nil
	}
	if start+digits > len(p.src) {
		return errIncomplete
	}
	n, err := strconv.ParseUint(string(p.src[start:start+digits]), base, 32)
	if err != nil || n > utf8.MaxRune {
		return errSyntax
	}
	s.WriteRune(rune(n))
	p.i = start + digits
	return nil
}

// number reads a number with an optional sign and writes it as JSON.
func (p *pyParser) number(out *bytes.Buffer) error {
	neg := false
	if c := p.src[p.i]; c == '-' || c == '+' {
		neg = c == '-'
		p.i++
		if c, err := p.peek(); err != nil || !isDigit(c) && c != '.' {
			if err == nil {
				err = errSyntax
			}
			return err
		}
	}
	start := p.i
	for p.i < len(p.src) {
		c := p.src[p.i]
		if !(isDigit(c) || isIdentStart(c) || c == '.' || (c == '+' || c == '-') && (p.src[p.i-1] == 'e' || p.src[p.i-1] == 'E')) {
			break
		}
		p.i++
	}
	if p.i == len(p.src) {
		return errIncomplete
	}
	lit := strings.ReplaceAll(string(p.src[start:p.i]), "_", "")
	var num string
	switch {
	case lit == "" || lit == ".":
		return errSyntax
	case strings.Trim(lit, "0123456789") == "":
		num = strings.TrimLeft(lit, "0")
		if num == "" {
			num = "0"
		} else if num != lit {
			return errSyntax // Python: leading zeros in a decimal integer
		}
	case len(lit) > 2 && lit[0] == '0' && strings.ContainsRune("xXoObB", rune(lit[1])):
		n, err := strconv.ParseInt(lit, 0, 64)
		if err != nil {
			return errSyntax
		}
		num = strconv.FormatInt(n, 10)
	default:
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil || strings.ContainsAny(lit, "iInN") {
			return errSyntax // not a float, or inf/nan (not JSON)
		}
		if num = lit; !json.Valid([]byte(lit)) {
			num = strconv.FormatFloat(f, 'g', -1, 64)
			if !strings.ContainsAny(num, ".e") {
				num += ".0"
			}
		}
	}
	if neg {
		out.WriteByte('-')
	}
	out.WriteString(num)
	return nil
}

// writeString writes s as a JSON string, non-ASCII as is (as vLLM's
// json.dumps(…, ensure_ascii=False)).
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out.Truncate(out.Len() - 1) // Encode's newline
}
