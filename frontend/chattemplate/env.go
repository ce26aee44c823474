package chattemplate

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// maxRange is the most items range() makes, so that a template cannot ask
// for gigabytes.
const maxRange = 1 << 20

// engineConfig is gonja's configuration with every whitespace option off:
// preprocess has already applied transformers' trim_blocks, lstrip_blocks
// and trailing-newline rules to the source.
func engineConfig() *config.Config {
	cfg := config.New()
	cfg.KeepTrailingNewline = true
	cfg.TrimBlocks = false
	cfg.LeftStripBlocks = false
	cfg.AutoEscape = false
	cfg.StrictUndefined = false
	return cfg
}

// controlStructures are the statements a chat template may use; the ones
// that read other files (include, import, from, extends, block) are left
// out.
var allowedControlStructures = []string{
	"if", "for", "set", "macro", "call", "filter", "with", "raw", "do", "break", "continue",
}

// newEnvironment builds a fresh gonja environment per Template: gonja's
// shared defaults are never modified. now is the clock of strftime_now.
func newEnvironment(now func() time.Time) (*exec.Environment, error) {
	cs := map[string]parser.ControlStructureParser{}
	for _, name := range allowedControlStructures {
		p, ok := builtins.ControlStructures.Get(name)
		if !ok {
			return nil, fmt.Errorf("chattemplate: gonja lacks the %q statement", name)
		}
		cs[name] = p
	}

	filterFuncs := map[string]exec.FilterFunction{}
	exec.NewFilterSet(filterFuncs).Update(builtins.Filters) // copies into filterFuncs
	for name, f := range filterFuncs {
		filterFuncs[name] = relistFilter(f)
	}
	filterFuncs["tojson"] = tojsonFilter
	filterFuncs["items"] = itemsFilter
	filterFuncs["dictsort"] = dictsortFilter
	filters := exec.NewFilterSet(filterFuncs)

	tests := exec.NewTestSet(map[string]exec.TestFunction{})
	tests.Update(builtins.Tests)
	if err := tests.Replace("sequence", testSequence); err != nil {
		return nil, fmt.Errorf("chattemplate: %w", err)
	}

	globals := map[string]any{
		"range":        rangeFunction,
		"strftime_now": strftimeNow(now),
	}
	for _, name := range []string{"namespace", "dict", "cycler", "joiner"} {
		f, ok := builtins.GlobalFunctions.Get(name)
		if !ok {
			return nil, fmt.Errorf("chattemplate: gonja lacks %s()", name)
		}
		globals[name] = f
	}

	return &exec.Environment{
		Context:           exec.NewContext(globals),
		Filters:           filters,
		Tests:             tests,
		ControlStructures: exec.NewControlStructureSet(cs),
		Methods:           buildMethods(),
	}, nil
}

// relistFilter makes the lists a filter returns (selectattr, map, list,
// sort, ...) lists with Python's indexing.
func relistFilter(f exec.FilterFunction) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		out := f(e, in, params)
		if out == nil || !out.IsList() || out.IsString() {
			return out
		}
		if _, ok := out.Interface().(list); ok {
			return out
		}
		rv := out.Val
		for rv.Kind() == reflect.Pointer {
			rv = rv.Elem()
		}
		l := make(list, rv.Len())
		for i := range l {
			l[i] = rv.Index(i).Interface()
		}
		return &exec.Value{Val: reflect.ValueOf(l), Safe: out.Safe}
	}
}

// itemsFilter is dict|items, in insertion order.
func itemsFilter(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	out, err := dictView(func(k, v *exec.Value) any { return []any{k, v} })(nil, in, params)
	if err != nil {
		return exec.AsValue(fmt.Errorf("items: %w", err))
	}
	return exec.AsValue(out)
}

// dictsortFilter is Jinja's dictsort(case_sensitive=False, by='key',
// reverse=False) for ordered dicts too (gonja's sees only Go maps).
func dictsortFilter(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	arg := func(i int, name string, def *exec.Value) *exec.Value {
		if v, ok := optArg(params, i, name); ok {
			return v
		}
		return def
	}
	caseSensitive := arg(0, "case_sensitive", exec.AsValue(false)).IsTrue()
	by := arg(1, "by", exec.AsValue("key")).String()
	reverse := arg(2, "reverse", exec.AsValue(false)).IsTrue()
	if by != "key" && by != "value" {
		return exec.AsValue(errors.New("dictsort: by must be 'key' or 'value'"))
	}
	pairs, err := dictPairs(in)
	if err != nil {
		return exec.AsValue(fmt.Errorf("dictsort: %w", err))
	}
	sortKey := func(p jsonPair) *exec.Value {
		v := exec.AsValue(p.key)
		if by == "value" {
			v = p.value
		}
		if v.IsString() && !caseSensitive {
			v = exec.AsValue(strings.ToLower(v.String()))
		}
		return v
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		a, b := sortKey(pairs[i]), sortKey(pairs[j])
		if reverse {
			a, b = b, a
		}
		if a.IsNumber() && b.IsNumber() {
			return a.Float() < b.Float()
		}
		return a.String() < b.String()
	})
	out := make(list, len(pairs))
	for i, p := range pairs {
		out[i] = list{p.key, p.value}
	}
	return exec.AsValue(out)
}

// testSequence is Jinja's "sequence" test: anything with a length and
// items (lists, strings, dicts).
func testSequence(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
	return in.IsList() || in.IsString() || in.IsDict(), nil
}

// rangeFunction is Python's range() as a list. gonja's returns a channel fed
// by a goroutine, which leaks when the range is never iterated.
func rangeFunction(_ *exec.Evaluator, params *exec.VarArgs) (list, error) {
	start, stop, step := 0, 0, 1
	ints := make([]int, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return nil, errors.New("range() arguments must be integers")
		}
		ints[i] = a.Integer()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, errors.New("range() takes 1 to 3 arguments")
	}
	if step == 0 {
		return nil, errors.New("range() step must not be zero")
	}
	var out list
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) == maxRange {
			return nil, fmt.Errorf("range() larger than %d items", maxRange)
		}
		out = append(out, i)
	}
	return out, nil
}

func strftimeNow(now func() time.Time) func(*exec.Evaluator, *exec.VarArgs) (string, error) {
	return func(_ *exec.Evaluator, params *exec.VarArgs) (string, error) {
		if len(params.Args) != 1 || !params.Args[0].IsString() {
			return "", errors.New("strftime_now() takes one format string")
		}
		return strftime(now(), params.Args[0].String()), nil
	}
}

// raiseState records the message of raise_exception for one render: gonja
// flattens errors returned by functions to text, so the message is kept on
// the side to be returned as a *RaiseError.
type raiseState struct {
	raised  bool
	message string
}

func (s *raiseState) raise(_ *exec.Evaluator, params *exec.VarArgs) (string, error) {
	var parts []string
	for _, a := range params.Args {
		parts = append(parts, a.String())
	}
	s.raised = true
	s.message = strings.Join(parts, " ")
	return "", errors.New(s.message)
}

// sourceLoader serves the one template source and refuses every other name,
// so that a template cannot read files.
type sourceLoader struct {
	name   string
	source string
}

func (l *sourceLoader) Read(path string) (io.Reader, error) {
	if path != l.name {
		return nil, fmt.Errorf("chattemplate: templates cannot load %q", path)
	}
	return strings.NewReader(l.source), nil
}

func (l *sourceLoader) Resolve(path string) (string, error) {
	if path != l.name {
		return "", fmt.Errorf("chattemplate: templates cannot load %q", path)
	}
	return path, nil
}

func (l *sourceLoader) Inherit(string) (loaders.Loader, error) { return l, nil }
