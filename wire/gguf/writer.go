package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Writer builds a GGUF v3 file: metadata in the order added, then tensor
// infos and data in the order added, each tensor padded to the alignment.
// It holds everything in memory until WriteTo (tensor data is not copied:
// callers must not modify it before WriteTo), except the data of tensors
// added by AddTensorFunc, made one at a time while writing. Not safe for
// concurrent use.
type Writer struct {
	keys      []string
	values    map[string]any
	tensors   []TensorInfo
	data      []func() ([]byte, error) // tensor data, parallel to tensors
	names     map[string]bool
	alignment uint64 // bytes; general.alignment when added
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer {
	return &Writer{values: map[string]any{}, names: map[string]bool{}, alignment: DefaultAlignment}
}

// AddKV appends a metadata pair. v must be one of the types listed on
// Metadata (so a value read from a File can be copied as is); a plain int
// is refused because its GGUF width would be a guess. general.alignment
// must be a power-of-two uint32 and be added before any tensor.
func (w *Writer) AddKV(key string, v any) error {
	if _, dup := w.values[key]; dup {
		return fmt.Errorf("gguf: duplicate metadata key %q", key)
	}
	if _, err := typeOf(v); err != nil {
		return fmt.Errorf("gguf: metadata %q: %w", key, err)
	}
	if key == KeyAlignment {
		if len(w.tensors) > 0 {
			return fmt.Errorf("gguf: %s added after tensors", KeyAlignment)
		}
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: %s must be a power-of-two uint32, got %T %v", KeyAlignment, v, v)
		}
		w.alignment = uint64(a)
	}
	w.keys = append(w.keys, key)
	w.values[key] = v
	return nil
}

// AddTensor appends a tensor of ggml type typ and shape (ggml order) whose
// raw bytes are data; len(data) must match the type and shape.
func (w *Writer) AddTensor(name string, typ uint32, shape []uint64, data []byte) error {
	size, err := TensorSize(typ, shape)
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	if uint64(len(data)) != size {
		return fmt.Errorf("gguf: tensor %q: %d bytes of data, %s %v needs %d", name, len(data), TypeName(typ), shape, size)
	}
	return w.AddTensorFunc(name, typ, shape, func() ([]byte, error) { return data, nil })
}

// AddTensorFunc is AddTensor with the data made by data during WriteTo,
// in the order tensors were added, so that a large file never needs all
// of its tensors in memory at once. WriteTo fails if data errs or returns
// a length other than the type and shape need.
func (w *Writer) AddTensorFunc(name string, typ uint32, shape []uint64, data func() ([]byte, error)) error {
	if w.names[name] {
		return fmt.Errorf("gguf: duplicate tensor %q", name)
	}
	size, err := TensorSize(typ, shape)
	if err != nil {
		return fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	off := uint64(0)
	if n := len(w.tensors); n > 0 {
		last := w.tensors[n-1]
		off = pad(last.Offset+last.Size, w.alignment)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, TensorInfo{Name: name, Type: typ, Shape: append([]uint64(nil), shape...), Offset: off, Size: size})
	w.data = append(w.data, data)
	return nil
}

func pad(n, align uint64) uint64 { return (n + align - 1) / align * align }

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: out}
	bw := bufio.NewWriterSize(cw, 1<<20)
	e := &encoder{w: bw}
	e.u32(Magic)
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.keys)))
	for _, k := range w.keys {
		e.str(k)
		v := w.values[k]
		t, _ := typeOf(v)
		e.u32(uint32(t))
		e.value(v)
	}
	for _, ti := range w.tensors {
		e.str(ti.Name)
		e.u32(uint32(len(ti.Shape)))
		for _, d := range ti.Shape {
			e.u64(d)
		}
		e.u32(ti.Type)
		e.u64(ti.Offset)
	}
	e.zeros(pad(e.n, w.alignment) - e.n)
	dataStart := e.n
	for i, ti := range w.tensors {
		if e.err != nil {
			break
		}
		data, err := w.data[i]()
		switch {
		case err != nil:
			e.err = fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		case uint64(len(data)) != ti.Size:
			e.err = fmt.Errorf("gguf: tensor %q: %d bytes of data, %s %v needs %d", ti.Name, len(data), TypeName(ti.Type), ti.Shape, ti.Size)
		}
		e.zeros(ti.Offset - (e.n - dataStart))
		e.bytes(data)
	}
	e.zeros(pad(e.n, w.alignment) - e.n)
	if e.err == nil {
		e.err = bw.Flush()
	}
	return cw.n, e.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes GGUF primitives, keeping the first error.
type encoder struct {
	w   *bufio.Writer
	n   uint64 // bytes written
	buf [8]byte
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) zeros(n uint64) {
	var z [64]byte
	for n > 0 {
		m := min(n, uint64(len(z)))
		e.bytes(z[:m])
		n -= m
	}
}

func (e *encoder) u8(v uint8) { e.bytes([]byte{v}) }
func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.buf[:], v)
	e.bytes(e.buf[:2])
}
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:], v)
	e.bytes(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	e.bytes(e.buf[:8])
}
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += uint64(len(s))
	}
}

func (e *encoder) boolean(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// value writes v's payload (not its type tag); v passed typeOf.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case uint8:
		e.u8(v)
	case int8:
		e.u8(uint8(v))
	case uint16:
		e.u16(v)
	case int16:
		e.u16(uint16(v))
	case uint32:
		e.u32(v)
	case int32:
		e.u32(uint32(v))
	case float32:
		e.u32(math.Float32bits(v))
	case bool:
		e.boolean(v)
	case string:
		e.str(v)
	case uint64:
		e.u64(v)
	case int64:
		e.u64(uint64(v))
	case float64:
		e.u64(math.Float64bits(v))
	case []uint8:
		e.arrayHeader(TypeUint8, len(v))
		e.bytes(v)
	case []int8:
		writeSlice(e, TypeInt8, v)
	case []uint16:
		writeSlice(e, TypeUint16, v)
	case []int16:
		writeSlice(e, TypeInt16, v)
	case []uint32:
		writeSlice(e, TypeUint32, v)
	case []int32:
		writeSlice(e, TypeInt32, v)
	case []float32:
		writeSlice(e, TypeFloat32, v)
	case []bool:
		writeSlice(e, TypeBool, v)
	case []string:
		writeSlice(e, TypeString, v)
	case []uint64:
		writeSlice(e, TypeUint64, v)
	case []int64:
		writeSlice(e, TypeInt64, v)
	case []float64:
		writeSlice(e, TypeFloat64, v)
	case []any:
		writeSlice(e, TypeArray, v)
	}
}

func (e *encoder) arrayHeader(et ValueType, n int) {
	e.u32(uint32(et))
	e.u64(uint64(n))
}

func writeSlice[T any](e *encoder, et ValueType, v []T) {
	e.arrayHeader(et, len(v))
	for _, x := range v {
		e.value(x) // an array element carries its own element type
	}
}

var errNotArray = errors.New("element of an array of arrays is not an array")

// typeOf is the GGUF type of a Go value, checking nested arrays fully.
func typeOf(v any) (ValueType, error) {
	return typeAt(v, 1)
}

// typeAt is typeOf for a value that would be an array at nesting level
// level (1 for a top-level array), as the decoder counts.
func typeAt(v any, level int) (ValueType, error) {
	switch v.(type) {
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
		[]bool, []string, []uint64, []int64, []float64, []any:
		if level > maxDepth {
			return 0, fmt.Errorf("arrays nested deeper than %d", maxDepth)
		}
	}
	switch v := v.(type) {
	case uint8:
		return TypeUint8, nil
	case int8:
		return TypeInt8, nil
	case uint16:
		return TypeUint16, nil
	case int16:
		return TypeInt16, nil
	case uint32:
		return TypeUint32, nil
	case int32:
		return TypeInt32, nil
	case float32:
		return TypeFloat32, nil
	case bool:
		return TypeBool, nil
	case string:
		return TypeString, nil
	case uint64:
		return TypeUint64, nil
	case int64:
		return TypeInt64, nil
	case float64:
		return TypeFloat64, nil
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
		[]bool, []string, []uint64, []int64, []float64:
		return TypeArray, nil
	case []any:
		for _, x := range v {
			t, err := typeAt(x, level+1)
			if err != nil {
				return 0, err
			}
			if t != TypeArray {
				return 0, fmt.Errorf("%w: %T", errNotArray, x)
			}
		}
		return TypeArray, nil
	}
	return 0, fmt.Errorf("unsupported Go type %T", v)
}
