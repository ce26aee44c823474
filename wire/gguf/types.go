package gguf

import (
	"errors"
	"fmt"
	"math"
)

// Magic is "GGUF" read as a little-endian uint32.
const Magic = 0x46554747

// DefaultAlignment is the data-section alignment when general.alignment is
// absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides DefaultAlignment.
const KeyAlignment = "general.alignment"

// maxDims is ggml's GGML_MAX_DIMS.
const maxDims = 4

// maxDepth bounds nested arrays (llama.cpp itself rejects any nesting).
const maxDepth = 8

// ErrFormat reports a file that is not a well-formed GGUF v2/v3 file.
var ErrFormat = errors.New("gguf: malformed file")

// ErrClosed reports use of a File after Close.
var ErrClosed = errors.New("gguf: file closed")

// ValueType is the type tag of a metadata value.
type ValueType uint32

// The metadata value types (gguf-py GGUFValueType).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// String is the type's name, e.g. "uint32".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar type, 0 for strings, arrays and
// unknown types.
func (t ValueType) fixedSize() int64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one value of type t occupies: a string is at
// least its u64 length, an array its u32 type and u64 count. 0 means t is
// unknown.
func (t ValueType) minSize() int64 {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.fixedSize()
}

// layout is a ggml type's block: blockSize elements take blockBytes bytes.
type layout struct {
	name       string
	blockSize  uint64 // elements per block
	blockBytes uint64 // bytes per block
}

// ggmlTypes are all ggml tensor types a GGUF file may name (gguf-py
// GGML_QUANT_SIZES); ids 4, 5 and 31..33, 36..38 are retired or unused.
var ggmlTypes = map[uint32]layout{
	0:  {"F32", 1, 4},
	1:  {"F16", 1, 2},
	2:  {"Q4_0", 32, 18},
	3:  {"Q4_1", 32, 20},
	6:  {"Q5_0", 32, 22},
	7:  {"Q5_1", 32, 24},
	8:  {"Q8_0", 32, 34},
	9:  {"Q8_1", 32, 40},
	10: {"Q2_K", 256, 84},
	11: {"Q3_K", 256, 110},
	12: {"Q4_K", 256, 144},
	13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210},
	15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66},
	17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50},
	20: {"IQ4_NL", 32, 18},
	21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82},
	23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1},
	25: {"I16", 1, 2},
	26: {"I32", 1, 4},
	27: {"I64", 1, 8},
	28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56},
	30: {"BF16", 1, 2},
	34: {"TQ1_0", 256, 54},
	35: {"TQ2_0", 256, 66},
	39: {"MXFP4", 32, 17},
	40: {"NVFP4", 64, 36},
	41: {"Q1_0", 128, 18},
}

// TypeName is ggml's name of tensor type t, e.g. "Q4_K", or "type(N)" for
// an id this package does not know.
func TypeName(t uint32) string {
	if l, ok := ggmlTypes[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type(%d)", t)
}

// TensorSize is the byte size of a tensor of type t and shape (ggml order),
// checked: an unknown type, a first dimension that is not a whole number of
// blocks, or a size that overflows int64 is an error.
func TensorSize(t uint32, shape []uint64) (uint64, error) {
	l, ok := ggmlTypes[t]
	if !ok {
		return 0, fmt.Errorf("unknown ggml type %d", t)
	}
	if len(shape) > maxDims {
		return 0, fmt.Errorf("%d dimensions, at most %d allowed", len(shape), maxDims)
	}
	n := uint64(1) // elements
	for _, d := range shape {
		if d > math.MaxInt64 {
			return 0, fmt.Errorf("dimension %d too large", d)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v overflows", shape)
		}
		n *= d
	}
	if len(shape) > 0 && shape[0]%l.blockSize != 0 {
		return 0, fmt.Errorf("first dimension %d is not a multiple of %s's block size %d", shape[0], l.name, l.blockSize)
	}
	blocks := n / l.blockSize
	if blocks > math.MaxInt64/l.blockBytes {
		return 0, fmt.Errorf("shape %v overflows", shape)
	}
	return blocks * l.blockBytes, nil
}

// TensorInfo describes one tensor of a GGUF file.
type TensorInfo struct {
	Name   string
	Type   uint32   // ggml type id
	Shape  []uint64 // ggml order: Shape[0] is the contiguous dimension
	Offset uint64   // bytes from the start of the data section
	Size   uint64   // bytes, from Type and Shape
}
