package wire

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// maxDepth caps the nesting of free-form values (Utility.Args,
// SamplingParams.ExtraArgs, skipped unknown fields), when encoding and
// decoding, so hostile or cyclic input cannot exhaust the stack.
const maxDepth = 32

// value is implemented by every struct this package encodes. Marshal,
// Unmarshal, Encode and Decode dispatch on it; the exported
// EncodeMsgpack/DecodeMsgpack methods wrap it for vmihailenco/msgpack users.
type value interface {
	encode(e *enc)
	decode(d *dec) error
}

// enc writes msgpack with a sticky error: after the first failure every
// write is a no-op and err says why. Ints are always written in their
// smallest form (msgpack.Encoder.EncodeInt/EncodeUint are compact whatever
// the encoder's flags say), floats as float64, strings as str.
type enc struct {
	e     *msgpack.Encoder
	err   error
	depth int // nesting of the free-form value being written
}

func (e *enc) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *enc) check(err error) {
	if err != nil {
		e.fail(err)
	}
}

func (e *enc) null() {
	if e.err == nil {
		e.check(e.e.EncodeNil())
	}
}

func (e *enc) int(n int64) {
	if e.err == nil {
		e.check(e.e.EncodeInt(n))
	}
}

func (e *enc) uint(n uint64) {
	if e.err == nil {
		e.check(e.e.EncodeUint(n))
	}
}

func (e *enc) float(f float64) {
	if e.err == nil {
		e.check(e.e.EncodeFloat64(f))
	}
}

func (e *enc) bool(b bool) {
	if e.err == nil {
		e.check(e.e.EncodeBool(b))
	}
}

func (e *enc) str(s string) {
	if e.err == nil {
		e.check(e.e.EncodeString(s))
	}
}

// optStr writes "" as nil: the wire form of fields documented `str | nil`
// where "" means none.
func (e *enc) optStr(s string) {
	if s == "" {
		e.null()
		return
	}
	e.str(s)
}

// optID writes a positive id, or nil for 0.
func (e *enc) optID(id int) {
	if id == 0 {
		e.null()
		return
	}
	e.int(int64(id))
}

func (e *enc) optInt(p *int) {
	if p == nil {
		e.null()
		return
	}
	e.int(int64(*p))
}

func (e *enc) arrayLen(n int) {
	if e.err == nil {
		e.check(e.e.EncodeArrayLen(n))
	}
}

func (e *enc) mapLen(n int) {
	if e.err == nil {
		e.check(e.e.EncodeMapLen(n))
	}
}

func (e *enc) int32s(s []int32) {
	e.arrayLen(len(s))
	for _, v := range s {
		e.int(int64(v))
	}
}

func (e *enc) strs(s []string) {
	e.arrayLen(len(s))
	for _, v := range s {
		e.str(v)
	}
}

// optStrs writes a nil slice as nil (fields documented `[str] | nil`).
func (e *enc) optStrs(s []string) {
	if s == nil {
		e.null()
		return
	}
	e.strs(s)
}

// raw embeds one already-encoded value verbatim after checking that it is
// exactly one well-formed msgpack value; empty means nil.
func (e *enc) raw(r Raw) {
	if len(r) == 0 {
		e.null()
		return
	}
	if e.err != nil {
		return
	}
	if err := checkRaw(r); err != nil {
		e.fail(fmt.Errorf("raw value: %w", err))
		return
	}
	_, err := e.e.Writer().Write(r)
	e.check(err)
}

// any writes a free-form value: nil, bool, any Go int or uint kind,
// float32/64, string, []byte (bin), Raw (verbatim), []any, map[string]any,
// and, through reflection, other slices, string-keyed maps and the structs
// of this package. Map keys are sorted so the bytes are deterministic.
func (e *enc) any(v any) {
	if e.err != nil {
		return
	}
	switch v := v.(type) {
	case nil:
		e.null()
	case bool:
		e.bool(v)
	case int:
		e.int(int64(v))
	case int8:
		e.int(int64(v))
	case int16:
		e.int(int64(v))
	case int32:
		e.int(int64(v))
	case int64:
		e.int(v)
	case uint:
		e.uint(uint64(v))
	case uint8:
		e.uint(uint64(v))
	case uint16:
		e.uint(uint64(v))
	case uint32:
		e.uint(uint64(v))
	case uint64:
		e.uint(v)
	case float32:
		e.float(float64(v))
	case float64:
		e.float(v)
	case string:
		e.str(v)
	case []byte:
		e.check(e.e.EncodeBytes(v))
	case Raw:
		e.raw(v)
	case []any:
		if v == nil {
			e.null()
			return
		}
		if !e.enter() {
			return
		}
		e.arrayLen(len(v))
		for _, x := range v {
			e.any(x)
		}
		e.depth--
	case map[string]any:
		if v == nil {
			e.null()
			return
		}
		if !e.enter() {
			return
		}
		e.mapLen(len(v))
		for _, k := range sortedKeys(v) {
			e.str(k)
			e.any(v[k])
		}
		e.depth--
	case value:
		if reflect.ValueOf(v).IsNil() {
			e.null()
			return
		}
		v.encode(e)
	default:
		e.reflect(reflect.ValueOf(v))
	}
}

func (e *enc) enter() bool {
	if e.depth >= maxDepth {
		e.fail(fmt.Errorf("value nested deeper than %d", maxDepth))
		return false
	}
	e.depth++
	return true
}

// reflect handles what any's fast paths do not: pointers, slices and
// string-keyed maps of supported values, and this package's structs passed
// by value.
func (e *enc) reflect(rv reflect.Value) {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			e.null()
			return
		}
		e.any(rv.Elem().Interface())
	case reflect.Struct:
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		if v, ok := p.Interface().(value); ok {
			v.encode(e)
			return
		}
		e.fail(fmt.Errorf("cannot encode %s", rv.Type()))
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			e.null()
			return
		}
		if !e.enter() {
			return
		}
		e.arrayLen(rv.Len())
		for i := range rv.Len() {
			e.any(rv.Index(i).Interface())
		}
		e.depth--
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			e.fail(fmt.Errorf("cannot encode %s: map keys must be strings", rv.Type()))
			return
		}
		if rv.IsNil() {
			e.null()
			return
		}
		if !e.enter() {
			return
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		e.mapLen(len(keys))
		for _, k := range keys {
			e.str(k.String())
			e.any(rv.MapIndex(k).Interface())
		}
		e.depth--
	default:
		e.fail(fmt.Errorf("cannot encode %s", rv.Type()))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// logitBias writes the map with int keys in ascending order.
func (e *enc) logitBias(m map[int32]float64) {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.mapLen(len(keys))
	for _, k := range keys {
		e.int(int64(k))
		e.float(m[k])
	}
}

// stopReason writes nil, an int or a string.
func (e *enc) stopReason(v any) {
	switch v := v.(type) {
	case uint64:
		if v > math.MaxInt64 {
			e.fail(fmt.Errorf("stop_reason %d overflows int64", v))
			return
		}
		e.any(v)
	case nil, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32:
		e.any(v)
	default:
		e.fail(fmt.Errorf("stop_reason must be nil, an int or a string, not %T", v))
	}
}

// encoderState is one pooled encoder writing into its own buffer.
type encoderState struct {
	buf bytes.Buffer
	e   *msgpack.Encoder
}

var encPool = sync.Pool{New: func() any {
	s := new(encoderState)
	s.e = msgpack.NewEncoder(&s.buf)
	s.e.UseCompactInts(true)
	return s
}}

// maxPooledBuf is the largest buffer (bytes) returned to the pool; bigger
// ones, from rare huge messages, are left to the garbage collector.
const maxPooledBuf = 1 << 20

// marshalWith runs fn on a pooled encoder and returns a fresh copy of the
// bytes it wrote.
func marshalWith(fn func(e *enc)) ([]byte, error) {
	s := encPool.Get().(*encoderState)
	defer func() {
		if s.buf.Cap() <= maxPooledBuf {
			s.buf.Reset()
			encPool.Put(s)
		}
	}()
	e := enc{e: s.e}
	fn(&e)
	if e.err != nil {
		return nil, e.err
	}
	return bytes.Clone(s.buf.Bytes()), nil
}
