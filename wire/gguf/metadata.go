package gguf

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// Metadata is a GGUF file's header and key-value section.
//
// Values keep their GGUF types: uint8, int8, uint16, int16, uint32, int32,
// float32, bool, string, uint64, int64, float64; an array is a typed slice
// ([]uint8 ... []float64, []bool, []string), and an array of arrays is a
// []any of such slices. Returned slices are shared: callers must not
// modify them. Metadata is immutable and safe for concurrent use.
type Metadata struct {
	Version    uint32 // 2 or 3
	NumTensors uint64 // tensor infos announced by the header

	keys   []string       // in file order
	values map[string]any // key → value
}

// ParseMetadata reads the header and key-value section of the size bytes
// of r, without the tensor infos or data: what a tokenizer needs.
func ParseMetadata(r io.ReaderAt, size int64) (*Metadata, error) {
	m, _, err := newDecoder(r, size).metadata()
	return m, err
}

// Keys lists the metadata keys in file order.
func (m *Metadata) Keys() []string { return slices.Clone(m.keys) }

// KV is the value of key, of one of the types listed on Metadata.
func (m *Metadata) KV(key string) (any, bool) {
	v, ok := m.values[key]
	return v, ok
}

// String is key's value if it is a string.
func (m *Metadata) String(key string) (string, bool) {
	v, ok := m.values[key].(string)
	return v, ok
}

// Bool is key's value if it is a bool.
func (m *Metadata) Bool(key string) (bool, bool) {
	v, ok := m.values[key].(bool)
	return v, ok
}

// Uint is key's value if it is an integer of any width that is not
// negative.
func (m *Metadata) Uint(key string) (uint64, bool) {
	switch v := m.values[key].(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8, int16, int32, int64:
		i, _ := m.Int(key)
		return uint64(i), i >= 0
	}
	return 0, false
}

// Int is key's value if it is an integer of any width that fits an int64.
func (m *Metadata) Int(key string) (int64, bool) {
	switch v := m.values[key].(type) {
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint8, uint16, uint32, uint64:
		u, _ := m.Uint(key)
		return int64(u), u <= math.MaxInt64
	}
	return 0, false
}

// Float is key's value if it is a float or an integer.
func (m *Metadata) Float(key string) (float64, bool) {
	switch v := m.values[key].(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	if i, ok := m.Int(key); ok {
		return float64(i), true
	}
	if u, ok := m.Uint(key); ok {
		return float64(u), true
	}
	return 0, false
}

// Strings is key's value if it is an array of strings.
func (m *Metadata) Strings(key string) ([]string, bool) {
	v, ok := m.values[key].([]string)
	return v, ok
}

// Int32s is key's value if it is an array of int32, or of another integer
// type whose elements all fit an int32 (then converted into a new slice).
func (m *Metadata) Int32s(key string) ([]int32, bool) {
	switch v := m.values[key].(type) {
	case []int32:
		return v, true
	case []int8:
		return convertInts[int8](v)
	case []uint8:
		return convertInts[uint8](v)
	case []int16:
		return convertInts[int16](v)
	case []uint16:
		return convertInts[uint16](v)
	case []uint32:
		return convertInts[uint32](v)
	case []int64:
		return convertInts[int64](v)
	case []uint64:
		return convertInts[uint64](v)
	}
	return nil, false
}

func convertInts[T int8 | uint8 | int16 | uint16 | uint32 | int64 | uint64](v []T) ([]int32, bool) {
	out := make([]int32, len(v))
	for i, x := range v {
		if int64(x) < math.MinInt32 || int64(x) > math.MaxInt32 || (x > 0 && uint64(x) > math.MaxInt32) {
			return nil, false
		}
		out[i] = int32(x)
	}
	return out, true
}

// Float32s is key's value if it is an array of float32 (or of float64,
// converted into a new slice).
func (m *Metadata) Float32s(key string) ([]float32, bool) {
	switch v := m.values[key].(type) {
	case []float32:
		return v, true
	case []float64:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out, true
	}
	return nil, false
}

// Array is key's value if it is an array of any element type: a typed
// slice, or []any for an array of arrays.
func (m *Metadata) Array(key string) (any, bool) {
	v := m.values[key]
	switch v.(type) {
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
		[]bool, []string, []uint64, []int64, []float64, []any:
		return v, true
	}
	return nil, false
}

// alignment is general.alignment, or DefaultAlignment when absent. It must
// be a non-zero power of two held as a uint32, as llama.cpp requires.
func (m *Metadata) alignment() (uint64, error) {
	v, ok := m.values[KeyAlignment]
	if !ok {
		return DefaultAlignment, nil
	}
	a, ok := v.(uint32)
	if !ok {
		return 0, fmt.Errorf("%w: %s is a %T, want uint32", ErrFormat, KeyAlignment, v)
	}
	if a == 0 || a&(a-1) != 0 {
		return 0, fmt.Errorf("%w: %s %d is not a power of two", ErrFormat, KeyAlignment, a)
	}
	return uint64(a), nil
}
