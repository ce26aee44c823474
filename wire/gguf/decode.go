package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// decoder reads GGUF primitives sequentially. Every length is checked
// against the bytes left before anything is allocated, so a hostile count
// costs at most a constant times the input size.
type decoder struct {
	r       *bufio.Reader
	pos     int64 // bytes consumed
	size    int64 // total input bytes
	scratch [256]byte
}

func newDecoder(r io.ReaderAt, size int64) *decoder {
	return &decoder{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10), size: size}
}

func (d *decoder) left() int64 { return d.size - d.pos }

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrFormat, d.pos, fmt.Sprintf(format, args...))
}

// full reads exactly len(b) bytes.
func (d *decoder) full(b []byte) error {
	if int64(len(b)) > d.left() {
		return d.errorf("truncated: need %d bytes, %d left", len(b), d.left())
	}
	n, err := io.ReadFull(d.r, b)
	d.pos += int64(n)
	if err != nil {
		return d.errorf("truncated: %v", err)
	}
	return nil
}

func (d *decoder) fixed(n int) ([]byte, error) {
	b := d.scratch[:n]
	return b, d.full(b)
}

func (d *decoder) u8() (uint8, error) {
	b, err := d.fixed(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16() (uint16, error) {
	b, err := d.fixed(2)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(b), nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.fixed(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.fixed(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a u64 element count and checks that n elements of at least
// minSize bytes each fit in what is left.
func (d *decoder) count(what string, minSize int64) (int, error) {
	n, err := d.u64()
	if err != nil {
		return 0, err
	}
	if n > uint64(d.left()/minSize) {
		return 0, d.errorf("%s count %d exceeds the %d bytes left", what, n, d.left())
	}
	return int(n), nil
}

func (d *decoder) str() (string, error) {
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > uint64(d.left()) {
		return "", d.errorf("string length %d exceeds the %d bytes left", n, d.left())
	}
	if n <= uint64(len(d.scratch)) {
		b := d.scratch[:n]
		if err := d.full(b); err != nil {
			return "", err
		}
		return string(b), nil
	}
	b := make([]byte, n)
	if err := d.full(b); err != nil {
		return "", err
	}
	return string(b), nil
}

func (d *decoder) boolean() (bool, error) {
	v, err := d.u8()
	if err != nil {
		return false, err
	}
	if v > 1 {
		return false, d.errorf("bool byte %d is neither 0 nor 1", v)
	}
	return v == 1, nil
}

// value reads one value of type t; depth counts enclosing arrays.
func (d *decoder) value(t ValueType, depth int) (any, error) {
	switch t {
	case TypeUint8:
		return d.u8()
	case TypeInt8:
		v, err := d.u8()
		return int8(v), err
	case TypeUint16:
		return d.u16()
	case TypeInt16:
		v, err := d.u16()
		return int16(v), err
	case TypeUint32:
		return d.u32()
	case TypeInt32:
		v, err := d.u32()
		return int32(v), err
	case TypeFloat32:
		v, err := d.u32()
		return math.Float32frombits(v), err
	case TypeBool:
		return d.boolean()
	case TypeString:
		return d.str()
	case TypeUint64:
		return d.u64()
	case TypeInt64:
		v, err := d.u64()
		return int64(v), err
	case TypeFloat64:
		v, err := d.u64()
		return math.Float64frombits(v), err
	case TypeArray:
		et, err := d.u32()
		if err != nil {
			return nil, err
		}
		return d.array(ValueType(et), depth+1)
	}
	return nil, d.errorf("unknown value type %d", uint32(t))
}

// array reads an array's count and elements of type et as a typed slice
// ([]uint32, []string, ...) or, for arrays of arrays, []any.
func (d *decoder) array(et ValueType, depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.errorf("arrays nested deeper than %d", maxDepth)
	}
	minSize := et.minSize()
	if minSize == 0 {
		return nil, d.errorf("unknown array element type %d", uint32(et))
	}
	n, err := d.count("array", minSize)
	if err != nil {
		return nil, err
	}
	switch et {
	case TypeUint8:
		v := make([]uint8, n)
		return v, d.full(v)
	case TypeInt8:
		return readNumbers(d, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		return readNumbers(d, n, 2, binary.LittleEndian.Uint16)
	case TypeInt16:
		return readNumbers(d, n, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		return readNumbers(d, n, 4, binary.LittleEndian.Uint32)
	case TypeInt32:
		return readNumbers(d, n, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		return readNumbers(d, n, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeUint64:
		return readNumbers(d, n, 8, binary.LittleEndian.Uint64)
	case TypeInt64:
		return readNumbers(d, n, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case TypeFloat64:
		return readNumbers(d, n, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case TypeBool:
		v := make([]bool, n)
		for i := range v {
			if v[i], err = d.boolean(); err != nil {
				return nil, err
			}
		}
		return v, nil
	case TypeString:
		v := make([]string, n)
		for i := range v {
			if v[i], err = d.str(); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	// TypeArray: each element names its own element type.
	v := make([]any, n)
	for i := range v {
		if v[i], err = d.value(TypeArray, depth); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// readNumbers reads n little-endian numbers of width bytes in chunks.
func readNumbers[T any](d *decoder, n, width int, conv func([]byte) T) ([]T, error) {
	v := make([]T, n)
	per := len(d.scratch) / width // elements per chunk
	for i := 0; i < n; i += per {
		m := min(per, n-i)
		b := d.scratch[:m*width]
		if err := d.full(b); err != nil {
			return nil, err
		}
		for j := range m {
			v[i+j] = conv(b[j*width:])
		}
	}
	return v, nil
}

// header reads the magic, version and counts.
func (d *decoder) header() (version uint32, numTensors, numKVs int, err error) {
	magic, err := d.u32()
	if err != nil {
		return 0, 0, 0, err
	}
	if magic != Magic {
		return 0, 0, 0, d.errorf("bad magic %#08x, want %#08x (\"GGUF\")", magic, Magic)
	}
	if version, err = d.u32(); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case version == 1:
		return 0, 0, 0, d.errorf("GGUF version 1 is not supported (only 2 and 3)")
	case version&0xffff == 0 && version != 0:
		return 0, 0, 0, d.errorf("version %#x: big-endian files are not supported", version)
	case version != 2 && version != 3:
		return 0, 0, 0, d.errorf("unsupported GGUF version %d (only 2 and 3)", version)
	}
	// A tensor info is at least name length, n_dims, type and offset.
	if numTensors, err = d.count("tensor", 8+4+4+8); err != nil {
		return 0, 0, 0, err
	}
	// A KV is at least key length, type and a 1-byte value.
	if numKVs, err = d.count("metadata", 8+4+1); err != nil {
		return 0, 0, 0, err
	}
	return version, numTensors, numKVs, nil
}

// metadata reads the header and numKVs key-value pairs.
func (d *decoder) metadata() (*Metadata, int, error) {
	version, numTensors, numKVs, err := d.header()
	if err != nil {
		return nil, 0, err
	}
	m := &Metadata{
		Version:    version,
		NumTensors: uint64(numTensors),
		keys:       make([]string, 0, numKVs),
		values:     make(map[string]any, numKVs),
	}
	for i := range numKVs {
		key, err := d.str()
		if err != nil {
			return nil, 0, fmt.Errorf("metadata %d key: %w", i, err)
		}
		if _, dup := m.values[key]; dup {
			return nil, 0, d.errorf("duplicate metadata key %q", key)
		}
		t, err := d.u32()
		if err != nil {
			return nil, 0, fmt.Errorf("metadata %q: %w", key, err)
		}
		v, err := d.value(ValueType(t), 0)
		if err != nil {
			return nil, 0, fmt.Errorf("metadata %q: %w", key, err)
		}
		m.keys = append(m.keys, key)
		m.values[key] = v
	}
	return m, numTensors, nil
}

// tensorInfos reads n tensor infos. Offsets must be multiples of alignment;
// sizes are computed but not yet checked against the file.
func (d *decoder) tensorInfos(n int, alignment uint64) ([]TensorInfo, error) {
	infos := make([]TensorInfo, 0, n)
	seen := make(map[string]bool, n)
	for i := range n {
		name, err := d.str()
		if err != nil {
			return nil, fmt.Errorf("tensor %d name: %w", i, err)
		}
		if seen[name] {
			return nil, d.errorf("duplicate tensor %q", name)
		}
		seen[name] = true
		nd, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		if nd > maxDims {
			return nil, d.errorf("tensor %q has %d dimensions, at most %d allowed", name, nd, maxDims)
		}
		shape := make([]uint64, nd)
		for j := range shape {
			if shape[j], err = d.u64(); err != nil {
				return nil, fmt.Errorf("tensor %q: %w", name, err)
			}
		}
		typ, err := d.u32()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		off, err := d.u64()
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		size, err := TensorSize(typ, shape)
		if err != nil {
			return nil, d.errorf("tensor %q: %v", name, err)
		}
		if off%alignment != 0 {
			return nil, d.errorf("tensor %q offset %d is not a multiple of the alignment %d", name, off, alignment)
		}
		infos = append(infos, TensorInfo{Name: name, Type: typ, Shape: shape, Offset: off, Size: size})
	}
	return infos, nil
}
