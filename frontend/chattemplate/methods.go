package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// The Python str methods that chat templates call, with CPython's semantics
// (gonja's defaults differ: split() splits on " " only, lstrip() without
// arguments strips spaces only, upper() is not the full Unicode mapping).
var strMethodOverrides = map[string]exec.Method[string]{
	"strip":      stripMethod(true, true),
	"lstrip":     stripMethod(true, false),
	"rstrip":     stripMethod(false, true),
	"split":      splitMethod(false),
	"rsplit":     splitMethod(true),
	"startswith": affixMethod(strings.HasPrefix),
	"endswith":   affixMethod(strings.HasSuffix),
	"replace":    replaceMethod,
	"upper":      noArgs(func(s string) string { return cases.Upper(language.Und).String(s) }),
	"lower":      noArgs(func(s string) string { return cases.Lower(language.Und).String(s) }),
	"title":      noArgs(pyTitle),
	"capitalize": noArgs(pyCapitalize),
}

// strMethodNames are gonja's str methods kept as they are.
var strMethodNames = []string{
	"capwords", "casefold", "center", "count", "encode", "expandtabs", "find",
	"format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
	"islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join",
	"ljust", "partition", "removeprefix", "removesuffix", "rfind", "rjust",
	"rpartition", "splitlines", "swapcase", "zfill",
}

// Dict methods keep insertion order (gonja's sort the keys) and, as in
// transformers' ImmutableSandboxedEnvironment, none of them mutates.
var dictMethods = map[string]exec.Method[map[string]any]{
	"items":  dictView(func(k, v *exec.Value) any { return []any{k, v} }),
	"keys":   dictView(func(k, _ *exec.Value) any { return k }),
	"values": dictView(func(_, v *exec.Value) any { return v }),
	"get":    dictGet,
}

func buildMethods() exec.Methods {
	str := map[string]exec.Method[string]{}
	for _, name := range strMethodNames {
		if m, ok := builtins.Methods.Str.Get(name); ok {
			str[name] = m
		}
	}
	for name, m := range strMethodOverrides {
		str[name] = m
	}
	return exec.Methods{
		Bool:  exec.NewMethodSet(map[string]exec.Method[bool]{}),
		Int:   exec.NewMethodSet(map[string]exec.Method[int]{}),
		Float: exec.NewMethodSet(map[string]exec.Method[float64]{}),
		Str:   exec.NewMethodSet(str),
		Dict:  exec.NewMethodSet(dictMethods),
		List:  exec.NewMethodSet(map[string]exec.Method[[]any]{}),
	}
}

// isPySpace reports whether Python's str.isspace holds for r.
func isPySpace(r rune) bool {
	switch {
	case r >= '\t' && r <= '\r', r >= 0x1c && r <= 0x1f, r == ' ', r == 0x85, r == 0xa0:
		return true
	case r < 0x1680:
		return false
	}
	return unicode.Is(unicode.Zs, r) || r == 0x2028 || r == 0x2029
}

func noArgs(f func(string) string) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args)+len(args.KwArgs) > 0 {
			return nil, errors.New("takes no arguments")
		}
		return f(self), nil
	}
}

// optArg returns the positional argument i (or the keyword argument name),
// with ok false when it is absent or None.
func optArg(args *exec.VarArgs, i int, name string) (*exec.Value, bool) {
	if i < len(args.Args) {
		return args.Args[i], !args.Args[i].IsNil()
	}
	if v, ok := args.KwArgs[name]; ok {
		return v, !v.IsNil()
	}
	return nil, false
}

func stripMethod(left, right bool) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		cut := isPySpace
		if v, ok := optArg(args, 0, "chars"); ok {
			if !v.IsString() {
				return nil, errors.New("strip arg must be None or str")
			}
			chars := v.String()
			cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
		}
		if left {
			self = strings.TrimLeftFunc(self, cut)
		}
		if right {
			self = strings.TrimRightFunc(self, cut)
		}
		return self, nil
	}
}

func splitMethod(fromRight bool) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		maxsplit := -1
		if v, ok := optArg(args, 1, "maxsplit"); ok {
			if !v.IsInteger() {
				return nil, errors.New("maxsplit must be an integer")
			}
			maxsplit = v.Integer()
		}
		var parts []string
		if v, ok := optArg(args, 0, "sep"); ok {
			if !v.IsString() {
				return nil, errors.New("sep must be None or str")
			}
			sep := v.String()
			if sep == "" {
				return nil, errors.New("empty separator")
			}
			parts = splitSep(self, sep, maxsplit, fromRight)
		} else {
			parts = splitSpace(self, maxsplit, fromRight)
		}
		out := make(list, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}
}

func splitSep(s, sep string, maxsplit int, fromRight bool) []string {
	if maxsplit < 0 || !fromRight {
		n := -1
		if maxsplit >= 0 {
			n = maxsplit + 1
		}
		return strings.SplitN(s, sep, n)
	}
	var rev []string
	for range maxsplit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
	}
	out := []string{s}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

// splitSpace is str.split() without a separator: runs of whitespace
// separate, and no empty strings come back.
func splitSpace(s string, maxsplit int, fromRight bool) []string {
	if fromRight {
		// Split the reversed words and reverse back: rsplit's maxsplit
		// counts from the right.
		runes := []rune(s)
		for i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {
			runes[i], runes[j] = runes[j], runes[i]
		}
		parts := splitSpace(string(runes), maxsplit, false)
		for i := range parts {
			r := []rune(parts[i])
			for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
				r[a], r[b] = r[b], r[a]
			}
			parts[i] = string(r)
		}
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		return parts
	}
	var out []string
	for {
		s = strings.TrimLeftFunc(s, isPySpace)
		if s == "" {
			return out
		}
		if maxsplit >= 0 && len(out) == maxsplit {
			return append(out, s)
		}
		end := strings.IndexFunc(s, isPySpace)
		if end < 0 {
			return append(out, s)
		}
		out = append(out, s[:end])
		s = s[end:]
	}
}

// affixMethod is startswith/endswith(prefix or tuple of prefixes[, start[, end]]).
func affixMethod(has func(s, affix string) bool) exec.Method[string] {
	return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) == 0 {
			return nil, errors.New("takes at least 1 argument")
		}
		if len(args.Args) > 1 {
			runes := []rune(self)
			start, end := 0, len(runes)
			if args.Args[1].IsInteger() {
				start = clampIndex(args.Args[1].Integer(), len(runes))
			}
			if len(args.Args) > 2 && args.Args[2].IsInteger() {
				end = clampIndex(args.Args[2].Integer(), len(runes))
			}
			if start > end {
				return false, nil
			}
			self = string(runes[start:end])
		}
		arg := args.Args[0]
		if arg.IsString() {
			return has(self, arg.String()), nil
		}
		if !arg.IsList() {
			return nil, fmt.Errorf("first arg must be str or a tuple of str, not %s", arg.String())
		}
		for i := range arg.Len() {
			item := arg.Index(i)
			if !item.IsString() {
				return nil, errors.New("tuple for startswith/endswith must only contain str")
			}
			if has(self, item.String()) {
				return true, nil
			}
		}
		return false, nil
	}
}

func clampIndex(i, n int) int {
	if i < 0 {
		i += n
	}
	return max(0, min(i, n))
}

func replaceMethod(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
	if len(args.Args) < 2 || !args.Args[0].IsString() || !args.Args[1].IsString() {
		return nil, errors.New("replace() takes two str arguments")
	}
	count := -1
	if v, ok := optArg(args, 2, "count"); ok {
		if !v.IsInteger() {
			return nil, errors.New("replace() count must be an integer")
		}
		count = v.Integer()
	}
	return strings.Replace(self, args.Args[0].String(), args.Args[1].String(), count), nil
}

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
}

// pyTitle is Python's str.title: the first cased letter after an uncased
// character is title-cased, the other cased letters lower-cased.
func pyTitle(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	prevCased := false
	for _, r := range s {
		switch {
		case !isCased(r):
			b.WriteRune(r)
			prevCased = false
		case prevCased:
			b.WriteString(cases.Lower(language.Und).String(string(r)))
		default:
			b.WriteString(cases.Title(language.Und).String(string(r)))
			prevCased = true
		}
	}
	return b.String()
}

// pyCapitalize is Python's str.capitalize: the first character title-cased,
// the rest lower-cased.
func pyCapitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return cases.Title(language.Und).String(string(r)) + cases.Lower(language.Und).String(s[size:])
}

func dictView(item func(k, v *exec.Value) any) exec.Method[map[string]any] {
	return func(self map[string]any, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args)+len(args.KwArgs) > 0 {
			return nil, errors.New("takes no arguments")
		}
		pairs, err := dictPairs(selfValue)
		if err != nil {
			return nil, err
		}
		out := make(list, 0, len(pairs))
		d, ordered := asDict(selfValue)
		for i, p := range pairs {
			k := exec.AsValue(p.key)
			if ordered {
				k = d.Pairs[i].Key // keep non-string keys as they are
			}
			out = append(out, item(k, p.value))
		}
		return out, nil
	}
}

// dictGet is dict.get(key[, default]). Methods return plain values: a
// returned *exec.Value would read as an error (it has an Error method).
func dictGet(self map[string]any, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
	if len(args.Args) < 1 || len(args.Args) > 2 {
		return nil, errors.New("get() takes 1 or 2 arguments")
	}
	if d, ok := asDict(selfValue); ok {
		for _, p := range d.Pairs {
			if p.Key.EqualValueTo(args.Args[0]) {
				return p.Value.Interface(), nil
			}
		}
	} else if v, ok := self[args.Args[0].String()]; ok {
		return v, nil
	}
	if len(args.Args) == 2 {
		return args.Args[1].Interface(), nil
	}
	return nil, nil
}
