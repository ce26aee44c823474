package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// jsonOptions are the arguments of Python's json.dumps that transformers'
// tojson filter passes on.
type jsonOptions struct {
	indent      string // "" with hasIndent false: one line
	hasIndent   bool
	itemSep     string // between items: ", " or "," when indenting
	keySep      string // between a key and its value: ": "
	sortKeys    bool
	ensureASCII bool
}

func defaultJSONOptions() jsonOptions {
	return jsonOptions{itemSep: ", ", keySep: ": "}
}

// pyJSON renders v as Python's json.dumps(v, ensure_ascii=False) does (the
// tojson of transformers' chat templates): members in insertion order,
// separators ", " and ": ", no HTML escaping, floats as Python's repr.
func pyJSON(v *exec.Value, opts jsonOptions) (string, error) {
	var b strings.Builder
	if err := encodeJSON(&b, v, opts, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func encodeJSON(b *strings.Builder, v *exec.Value, opts jsonOptions, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("tojson: value nested deeper than %d levels", maxDepth)
	}
	switch {
	case v == nil || v.IsNil():
		b.WriteString("null")
	case v.IsError():
		return errors.New(v.Error())
	case v.IsBool():
		if v.Bool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInteger():
		b.WriteString(strconv.Itoa(v.Integer()))
	case v.IsFloat():
		b.WriteString(pyFloatJSON(v.Float()))
	case v.IsString():
		writeJSONString(b, v.String(), opts.ensureASCII)
	case v.IsList():
		n := v.Len()
		if n == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteString(opts.itemSep)
			}
			newline(b, opts, depth+1)
			if err := encodeJSON(b, v.Index(i), opts, depth+1); err != nil {
				return err
			}
		}
		newline(b, opts, depth)
		b.WriteByte(']')
	case v.IsDict():
		pairs, err := dictPairs(v)
		if err != nil {
			return err
		}
		if opts.sortKeys {
			sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
		}
		if len(pairs) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteString(opts.itemSep)
			}
			newline(b, opts, depth+1)
			writeJSONString(b, p.key, opts.ensureASCII)
			b.WriteString(opts.keySep)
			if err := encodeJSON(b, p.value, opts, depth+1); err != nil {
				return err
			}
		}
		newline(b, opts, depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: object of type %s is not JSON serializable", v.Val.Type())
	}
	return nil
}

func newline(b *strings.Builder, opts jsonOptions, depth int) {
	if !opts.hasIndent {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(opts.indent)
	}
}

type jsonPair struct {
	key   string
	value *exec.Value
}

// dictPairs lists the members of an ordered dict in order, or of a Go map
// (a namespace) sorted by key.
func dictPairs(v *exec.Value) ([]jsonPair, error) {
	var pairs []jsonPair
	if d, ok := asDict(v); ok {
		for _, p := range d.Pairs {
			k, err := jsonKey(p.Key)
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, jsonPair{key: k, value: p.Value})
		}
		return pairs, nil
	}
	rv := v.Val
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Map {
		return nil, fmt.Errorf("tojson: cannot encode %s", rv.Type())
	}
	for _, mk := range rv.MapKeys() {
		k, err := jsonKey(exec.ToValue(mk))
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, jsonPair{key: k, value: exec.ToValue(rv.MapIndex(mk))})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].key < pairs[j].key })
	return pairs, nil
}

// asDict returns the ordered dict that v holds, if it holds one.
func asDict(v *exec.Value) (*exec.Dict, bool) {
	if v == nil || !v.Val.IsValid() || !v.Val.CanInterface() {
		return nil, false
	}
	switch d := v.Val.Interface().(type) {
	case *exec.Dict:
		return d, d != nil
	case exec.Dict:
		return &d, true
	}
	return nil, false
}

// jsonKey converts a dict key as json.dumps does: strings as they are,
// numbers, booleans and None to their JSON text.
func jsonKey(k *exec.Value) (string, error) {
	switch {
	case k.IsString():
		return k.String(), nil
	case k.IsNil():
		return "null", nil
	case k.IsBool():
		if k.Bool() {
			return "true", nil
		}
		return "false", nil
	case k.IsInteger():
		return strconv.Itoa(k.Integer()), nil
	case k.IsFloat():
		return pyFloatJSON(k.Float()), nil
	}
	return "", fmt.Errorf("tojson: keys must be str, int, float, bool or None, not %s", k.Val.Type())
}

// pyFloatJSON formats f as Python's float repr (and json.dumps) does: the
// shortest digits that round-trip, positional for exponents in [-4, 16),
// scientific otherwise, and always with a "." or an exponent.
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

func pyFloatRepr(f float64) string {
	sci := strconv.FormatFloat(f, 'e', -1, 64) // "-d.ddde±XX"
	i := strings.LastIndexByte(sci, 'e')
	exp, _ := strconv.Atoi(sci[i+1:])
	if exp < -4 || exp >= 16 {
		return sci
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s as a JSON string the way Python's json module
// does: `"`, `\` and control characters escaped (\n, \r, \t, \b, \f by
// name, the rest as \u00XX), "/" and HTML characters left alone. With
// ensureASCII every character outside ASCII is escaped as \uXXXX (surrogate
// pairs above the BMP). Invalid UTF-8 bytes become U+FFFD.
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (ensureASCII && r >= 0x7f):
			if r >= 0x10000 {
				r1, r2 := utf16Surrogates(r)
				writeU(b, r1)
				writeU(b, r2)
			} else {
				writeU(b, r)
			}
		default:
			b.WriteRune(r) // utf8.RuneError for invalid bytes: U+FFFD
		}
	}
	b.WriteByte('"')
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[r>>12&0xf])
	b.WriteByte(hexDigits[r>>8&0xf])
	b.WriteByte(hexDigits[r>>4&0xf])
	b.WriteByte(hexDigits[r&0xf])
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// tojsonFilter is the template's tojson: json.dumps with transformers'
// defaults, accepting indent, separators, sort_keys and ensure_ascii.
func tojsonFilter(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	opts, err := parseJSONOptions(params)
	if err != nil {
		return exec.AsValue(err)
	}
	out, err := pyJSON(in, opts)
	if err != nil {
		return exec.AsValue(err)
	}
	return exec.AsSafeValue(out)
}

func parseJSONOptions(params *exec.VarArgs) (jsonOptions, error) {
	opts := defaultJSONOptions()
	if len(params.Args) > 1 {
		return opts, errors.New("tojson: takes at most one positional argument (indent)")
	}
	indent, hasIndent := params.KwArgs["indent"]
	if len(params.Args) == 1 {
		indent, hasIndent = params.Args[0], true
	}
	if hasIndent {
		switch {
		case indent.IsNil():
		case indent.IsInteger():
			opts.hasIndent = true
			opts.indent = strings.Repeat(" ", max(indent.Integer(), 0))
			opts.itemSep = ","
		case indent.IsString():
			opts.hasIndent = true
			opts.indent = indent.String()
			opts.itemSep = ","
		default:
			return opts, fmt.Errorf("tojson: indent must be an int or a string, not %s", indent.String())
		}
	}
	for name, arg := range params.KwArgs {
		switch name {
		case "indent":
		case "separators":
			if arg.IsNil() {
				continue
			}
			if !arg.IsList() || arg.Len() != 2 || !arg.Index(0).IsString() || !arg.Index(1).IsString() {
				return opts, errors.New("tojson: separators must be a pair of strings")
			}
			opts.itemSep, opts.keySep = arg.Index(0).String(), arg.Index(1).String()
		case "sort_keys":
			opts.sortKeys = arg.IsTrue()
		case "ensure_ascii":
			opts.ensureASCII = arg.IsTrue()
		default:
			return opts, fmt.Errorf("tojson: unexpected keyword argument %q", name)
		}
	}
	return opts, nil
}
