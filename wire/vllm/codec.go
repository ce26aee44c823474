package vllm

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrMalformed wraps every decoding error.
var ErrMalformed = errors.New("vllm: malformed message")

func malformed(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrMalformed, what, err)
}

// Raw is one msgpack value kept verbatim: what vLLM sends in a field this
// package does not model (multimodal features, pooling params, LoRA,
// kv_transfer_params, ...). Empty encodes as nil. Arrays inside a Raw that
// point into aux frames are not renumbered: such a Raw is valid only with
// the frames it came with.
type Raw []byte

// IsNil reports whether r is absent or msgpack nil.
func (r Raw) IsNil() bool { return len(r) == 0 || (len(r) == 1 && r[0] == 0xc0) }

// enc writes msgpack the way msgspec does: ints in their smallest form
// (unsigned codes for non-negative values), floats as float64, str as str,
// bytes as bin. The first error sticks.
type enc struct {
	buf       bytes.Buffer
	e         *msgpack.Encoder
	err       error
	threshold int      // arrays of fewer bytes are written inline
	aux       [][]byte // frames 1..: data of the larger arrays
}

func newEnc() *enc {
	x := &enc{threshold: ZeroCopyThreshold}
	x.e = msgpack.NewEncoder(&x.buf)
	return x
}

func (e *enc) check(err error) {
	if err != nil && e.err == nil {
		e.err = err
	}
}

// frames returns [payload, aux...].
func (e *enc) frames() ([][]byte, error) {
	if e.err != nil {
		return nil, fmt.Errorf("vllm: encode: %w", e.err)
	}
	return append([][]byte{e.buf.Bytes()}, e.aux...), nil
}

func (e *enc) null()            { e.check(e.e.EncodeNil()) }
func (e *enc) int(n int64)      { e.check(e.e.EncodeInt(n)) }
func (e *enc) float(f float64)  { e.check(e.e.EncodeFloat64(f)) }
func (e *enc) bool(b bool)      { e.check(e.e.EncodeBool(b)) }
func (e *enc) str(s string)     { e.check(e.e.EncodeString(s)) }
func (e *enc) arrayLen(n int)   { e.check(e.e.EncodeArrayLen(n)) }
func (e *enc) mapLen(n int)     { e.check(e.e.EncodeMapLen(n)) }
func (e *enc) raw(r Raw)        { e.rawOr(r, nil) }
func (e *enc) key(k string)     { e.str(k) }
func (e *enc) strs(s []string)  { e.arrayLen(len(s)); forEach(s, e.str) }
func (e *enc) int32s(s []int32) { e.arrayLen(len(s)); forEach(s, func(v int32) { e.int(int64(v)) }) }
func (e *enc) int64s(s []int64) { e.arrayLen(len(s)); forEach(s, e.int) }

func forEach[T any](s []T, f func(T)) {
	for _, v := range s {
		f(v)
	}
}

// rawOr writes r, or def (msgpack bytes) when r is empty, or nil.
func (e *enc) rawOr(r Raw, def []byte) {
	switch {
	case len(r) > 0:
		e.buf.Write(r)
	case def != nil:
		e.buf.Write(def)
	default:
		e.null()
	}
}

func (e *enc) optStr(s *string) {
	if s == nil {
		e.null()
		return
	}
	e.str(*s)
}

func (e *enc) optInt(p *int64) {
	if p == nil {
		e.null()
		return
	}
	e.int(*p)
}

func (e *enc) optBool(p *bool) {
	if p == nil {
		e.null()
		return
	}
	e.bool(*p)
}

func (e *enc) optInt32s(s []int32) {
	if s == nil {
		e.null()
		return
	}
	e.int32s(s)
}

func (e *enc) optStrs(s []string) {
	if s == nil {
		e.null()
		return
	}
	e.strs(s)
}

// The node accessors below are lenient where vLLM's msgspec decoding is
// (an int where a float is declared), strict otherwise.

func (n node) isNil() bool { return n.kind == kNil }

func wantErr(want string, n node) error { return fmt.Errorf("want %s, got %s", want, n.kind) }

func (n node) asInt() (int64, error) {
	if n.kind != kInt {
		return 0, wantErr("int", n)
	}
	return n.i, nil
}

func (n node) asInt32() (int32, error) {
	v, err := n.asInt()
	if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
		err = fmt.Errorf("%d out of int32 range", v)
	}
	return int32(v), err
}

func (n node) asFloat() (float64, error) {
	switch n.kind {
	case kFloat:
		return n.f, nil
	case kInt:
		return float64(n.i), nil
	case kUint:
		return float64(n.u), nil
	}
	return 0, wantErr("float", n)
}

func (n node) asBool() (bool, error) {
	if n.kind != kBool {
		return false, wantErr("bool", n)
	}
	return n.bool, nil
}

func (n node) asStr() (string, error) {
	if n.kind != kStr {
		return "", wantErr("str", n)
	}
	return string(n.b), nil
}

func (n node) asArr() ([]node, error) {
	if n.kind != kArr {
		return nil, wantErr("array", n)
	}
	return n.kids, nil
}

func (n node) asRaw() Raw {
	if n.isNil() {
		return nil
	}
	return Raw(bytes.Clone(n.span))
}

func optOf[T any](n node, f func(node) (T, error)) (*T, error) {
	if n.isNil() {
		return nil, nil
	}
	v, err := f(n)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// listOf reads an array (nil reads as a nil slice; [] as an empty one).
func listOf[T any](n node, f func(node) (T, error)) ([]T, error) {
	if n.isNil() {
		return nil, nil
	}
	kids, err := n.asArr()
	if err != nil {
		return nil, err
	}
	out := make([]T, len(kids))
	for i, k := range kids {
		if out[i], err = f(k); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return out, nil
}

func (n node) asInt64() (int64, error) { return n.asInt() }

// fields reads an array_like struct: element i goes to set(i). Missing
// trailing elements keep their defaults; extra ones are ignored.
func (n node) fields(names []string, set func(i int, v node) error) error {
	kids, err := n.asArr()
	if err != nil {
		return err
	}
	for i, k := range kids {
		if i >= len(names) {
			break
		}
		if err := set(i, k); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}

// entries reads a map with str keys; unknown keys are the callback's to
// ignore.
func (n node) entries(set func(key string, v node) error) error {
	if n.kind != kMap {
		return wantErr("map", n)
	}
	for i := 0; i+1 < len(n.kids); i += 2 {
		k, err := n.kids[i].asStr()
		if err != nil {
			return fmt.Errorf("map key: %w", err)
		}
		if err := set(k, n.kids[i+1]); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}
