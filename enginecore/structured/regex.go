package structured

import "strings"

// asciiClass is what \d, \D, \w and \W match in a request's regex: ASCII
// digits and word characters, as JSON Schema's pattern (ECMA-262), XGrammar
// (vLLM's default structured-output backend) and Outlines read them, not
// Rust's Unicode classes, under which `\d{4}` lets a model write "٢٠٢٦"
// or "🯸🯸🯸🯸". The in form is spliced into an enclosing class.
var asciiClass = [128]struct{ out, in string }{
	'd': {`[0-9]`, `0-9`},
	'D': {`[^0-9]`, `[^0-9]`},
	'w': {`[0-9A-Za-z_]`, `0-9A-Za-z_`},
	'W': {`[^0-9A-Za-z_]`, `[^0-9A-Za-z_]`},
}

// asciiClasses returns rx (Rust regex syntax) with \d, \D, \w and \W
// spelled as their ASCII classes (asciiClass), outside and inside
// character classes; \s stays Unicode whitespace, as ECMA-262's. Escaped
// backslashes, POSIX classes ([:alpha:]) and everything else are kept as
// written, so a regex that did not compile still does not.
func asciiClasses(rx string) string {
	var b strings.Builder
	b.Grow(len(rx) + 16)
	depth := 0 // character-class nesting (Rust nests [a[b]])
	for i := 0; i < len(rx); i++ {
		c := rx[i]
		switch {
		case c == '\\' && i+1 < len(rx):
			i++
			e := rx[i]
			cls := asciiClass[e&0x7f]
			switch {
			case e >= 0x80 || cls.out == "":
				b.WriteByte('\\')
				b.WriteByte(e)
			case depth > 0:
				b.WriteString(cls.in)
			default:
				b.WriteString(cls.out)
			}
		case c == '[':
			if depth > 0 && strings.HasPrefix(rx[i:], "[:") {
				if end := strings.Index(rx[i:], ":]"); end > 0 {
					b.WriteString(rx[i : i+end+2])
					i += end + 1
					continue
				}
			}
			depth++
			b.WriteByte(c)
			// A class's leading ^ negates it, and a ] right after the
			// opening (or the ^) is a literal member, not its end.
			if i+1 < len(rx) && rx[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(rx) && rx[i+1] == ']' {
				i++
				b.WriteByte(']')
			}
		case c == ']' && depth > 0:
			depth--
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
