package toolparse

// status is what one byte did to a value being read.
type status uint8

const (
	more       status = iota // the value goes on
	done                     // the value ended with this byte
	doneBefore               // the value (a number) ended before this byte, which is not part of it
	bad                      // the byte cannot continue the value
)

// maxDepth bounds the nesting of a value, as encoding/json does (deeper
// is bad).
const maxDepth = 1000

type valueState uint8

const (
	vBegin    valueState = iota // a value is next
	vObjFirst                   // after '{': a key or '}'
	vObjKey                     // after ',' in an object: a key
	vColon                      // after a key
	vArrFirst                   // after '[': a value or ']'
	vAfter                      // after a value in a container: ',' or its close
	vString
	vEscape
	vHex
	vNeg     // after '-'
	vZero    // a number's leading 0
	vInt     // integer digits
	vDot     // after '.'
	vFrac    // fraction digits
	vExp     // after 'e'
	vExpSign // after the exponent's sign
	vExpInt  // exponent digits
	vLiteral // inside true, false or null
	vEnded
)

// value reads one JSON value a byte at a time, checking its syntax as
// json.Valid does. The bytes it keeps are the value's compact form (as
// json.Compact writes it): whitespace outside strings is not kept.
type value struct {
	stack []byte // the open containers, '{' or '['
	st    valueState
	key   bool   // the string being read is an object key
	hex   int    // \u digits still to come
	lit   string // the literal's bytes still to come
}

// step reads b: the status, and whether b belongs to the compact value.
func (v *value) step(b byte) (st status, keep bool) {
	switch v.st {
	case vBegin, vArrFirst:
		if isSpace(b) {
			return more, false
		}
		if v.st == vArrFirst && b == ']' {
			return v.close(b)
		}
		return v.begin(b)
	case vObjFirst, vObjKey:
		switch {
		case isSpace(b):
			return more, false
		case b == '"':
			v.st, v.key = vString, true
			return more, true
		case b == '}' && v.st == vObjFirst:
			return v.close(b)
		}
		return bad, false
	case vColon:
		switch {
		case isSpace(b):
			return more, false
		case b == ':':
			v.st = vBegin
			return more, true
		}
		return bad, false
	case vAfter:
		top := v.stack[len(v.stack)-1]
		switch {
		case isSpace(b):
			return more, false
		case b == ',' && top == '{':
			v.st = vObjKey
			return more, true
		case b == ',':
			v.st = vBegin
			return more, true
		case b == '}' || b == ']':
			return v.close(b)
		}
		return bad, false
	case vString:
		switch {
		case b == '"':
			if v.key {
				v.st, v.key = vColon, false
				return more, true
			}
			return v.end(), true
		case b == '\\':
			v.st = vEscape
		case b < 0x20:
			return bad, false
		}
		return more, true
	case vEscape:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			v.st = vString
		case 'u':
			v.st, v.hex = vHex, 4
		default:
			return bad, false
		}
		return more, true
	case vHex:
		if !isHex(b) {
			return bad, false
		}
		if v.hex--; v.hex == 0 {
			v.st = vString
		}
		return more, true
	case vNeg:
		switch {
		case b == '0':
			v.st = vZero
		case isDigit(b):
			v.st = vInt
		default:
			return bad, false
		}
		return more, true
	case vZero, vInt:
		switch {
		case isDigit(b) && v.st == vInt:
		case b == '.':
			v.st = vDot
		case b == 'e' || b == 'E':
			v.st = vExp
		default:
			return v.endNumber(b)
		}
		return more, true
	case vDot:
		if !isDigit(b) {
			return bad, false
		}
		v.st = vFrac
		return more, true
	case vFrac:
		switch {
		case isDigit(b):
		case b == 'e' || b == 'E':
			v.st = vExp
		default:
			return v.endNumber(b)
		}
		return more, true
	case vExp:
		switch {
		case b == '+' || b == '-':
			v.st = vExpSign
		case isDigit(b):
			v.st = vExpInt
		default:
			return bad, false
		}
		return more, true
	case vExpSign:
		if !isDigit(b) {
			return bad, false
		}
		v.st = vExpInt
		return more, true
	case vExpInt:
		if isDigit(b) {
			return more, true
		}
		return v.endNumber(b)
	case vLiteral:
		if b != v.lit[0] {
			return bad, false
		}
		if v.lit = v.lit[1:]; v.lit == "" {
			return v.end(), true
		}
		return more, true
	}
	return bad, false
}

// begin starts the value whose first byte is b.
func (v *value) begin(b byte) (status, bool) {
	switch {
	case b == '{' || b == '[':
		if len(v.stack) >= maxDepth {
			return bad, false
		}
		v.stack = append(v.stack, b)
		v.st = vObjFirst
		if b == '[' {
			v.st = vArrFirst
		}
	case b == '"':
		v.st = vString
	case b == '-':
		v.st = vNeg
	case b == '0':
		v.st = vZero
	case isDigit(b):
		v.st = vInt
	case b == 't':
		v.st, v.lit = vLiteral, "rue"
	case b == 'f':
		v.st, v.lit = vLiteral, "alse"
	case b == 'n':
		v.st, v.lit = vLiteral, "ull"
	default:
		return bad, false
	}
	return more, true
}

// close closes the innermost container with b.
func (v *value) close(b byte) (status, bool) {
	if top := v.stack[len(v.stack)-1]; top == '{' && b != '}' || top == '[' && b != ']' {
		return bad, false
	}
	v.stack = v.stack[:len(v.stack)-1]
	return v.end(), true
}

// end ends a value: the whole one, or one inside a container.
func (v *value) end() status {
	if len(v.stack) == 0 {
		v.st = vEnded
		return done
	}
	v.st = vAfter
	return more
}

// endNumber ends a number at b, which then goes to what holds the number.
func (v *value) endNumber(b byte) (status, bool) {
	if v.end() == done {
		return doneBefore, false
	}
	return v.step(b)
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func isHex(b byte) bool { return isDigit(b) || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' }
