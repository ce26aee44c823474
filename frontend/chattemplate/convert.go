package chattemplate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// maxDepth bounds the nesting of values handed to a template (and of values
// tojson prints), so that a cyclic or absurdly deep value fails instead of
// overflowing the stack.
const maxDepth = 512

// toTemplate converts a Go value into the few types the template engine
// works with: nil, bool, int, float64, string, list and *exec.Dict (an
// ordered dict). Objects keep their member order; Go maps, which have none,
// are sorted by key so that renders are deterministic.
func toTemplate(v any) (any, error) {
	return convert(v, 0)
}

func convert(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string, bool, int, float64:
		return x, nil
	case json.Number:
		return convertNumber(x)
	case json.RawMessage:
		parsed, err := ParseJSON(x)
		if err != nil {
			return nil, err
		}
		return convert(parsed, depth)
	case Object:
		d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(x))}
		for _, m := range x {
			cv, err := convert(m.Value, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", m.Key, err)
			}
			d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(m.Key), Value: exec.AsValue(cv)})
		}
		return d, nil
	case *Object:
		if x == nil {
			return nil, nil
		}
		return convert(*x, depth)
	case tokenizer.Message:
		return convert(messageObject(x), depth)
	case []any:
		out := make(list, len(x))
		for i, e := range x {
			ce, err := convert(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = ce
		}
		return out, nil
	case map[string]any:
		return convertMap(reflect.ValueOf(x), depth)
	}
	return convertReflect(reflect.ValueOf(v), depth)
}

func messageObject(m tokenizer.Message) Object {
	return Object{{Key: "role", Value: m.Role}, {Key: "content", Value: m.Content}}
}

func convertNumber(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %q: %w", s, err)
	}
	return f, nil
}

func convertReflect(rv reflect.Value, depth int) (any, error) {
	switch rv.Kind() {
	case reflect.Invalid:
		return nil, nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return convert(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		out := make(list, rv.Len())
		for i := range out {
			ce, err := convert(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = ce
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		if rv.IsNil() {
			return nil, nil
		}
		return convertMap(rv, depth)
	}
	// Structs and the rest: their JSON form, which keeps field order.
	data, err := json.Marshal(rv.Interface())
	if err != nil {
		return nil, fmt.Errorf("cannot pass %s to a template: %w", rv.Type(), err)
	}
	parsed, err := ParseJSON(data)
	if err != nil {
		return nil, err
	}
	return convert(parsed, depth+1)
}

func convertMap(rv reflect.Value, depth int) (any, error) {
	keys := make([]string, 0, rv.Len())
	for _, k := range rv.MapKeys() {
		keys = append(keys, k.String())
	}
	sort.Strings(keys)
	d := &exec.Dict{Pairs: make([]*exec.Pair, 0, len(keys))}
	for _, k := range keys {
		cv, err := convert(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface(), depth+1)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", k, err)
		}
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(cv)})
	}
	return d, nil
}

// list is how lists reach templates: gonja's own indexing gets x[-len(x)]
// wrong (None instead of the first item), and messages[-1] on a
// one-message conversation is common.
type list []any

// GetItem implements exec.ItemGetter with Python's indexing.
func (l list) GetItem(key any) (*exec.Value, bool) {
	i, ok := key.(int)
	if !ok {
		return exec.AsValue(nil), false
	}
	if i < 0 {
		i += len(l)
	}
	if i < 0 || i >= len(l) {
		return exec.AsValue(nil), false
	}
	return exec.ToValue(l[i]), true
}
