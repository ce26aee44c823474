package model

import "fmt"

// DType is a tensor element type. Values are ggml's type ids, so a GGUF
// tensor-info type field converts directly.
type DType uint32

// The supported types (ggml ids).
const (
	F32  DType = 0
	F16  DType = 1
	Q4_0 DType = 2
	Q4_1 DType = 3
	Q5_0 DType = 6
	Q5_1 DType = 7
	Q8_0 DType = 8
	Q2_K DType = 10
	Q3_K DType = 11
	Q4_K DType = 12
	Q5_K DType = 13
	Q6_K DType = 14
	// IQ4_NL and IQ4_XS are 4-bit indices into ggml's non-linear table
	// of 16 int8 values (kvalues_iq4nl).
	IQ4_NL DType = 20
	IQ4_XS DType = 23
	BF16   DType = 30
	// MXFP4 is 4-bit indices into ggml's kvalues_mxfp4 (doubled E2M1)
	// with a power-of-two scale per 32: gpt-oss's expert weights.
	MXFP4 DType = 39
)

// typeInfo is a type's block layout: BlockSize elements take BlockBytes.
type typeInfo struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

var types = map[DType]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18},   // f16 d + 16 bytes of nibbles
	Q4_1: {"Q4_1", 32, 20},   // f16 d, f16 m + 16 bytes of nibbles
	Q5_0: {"Q5_0", 32, 22},   // f16 d, 4 bytes of fifth bits, 16 bytes of nibbles
	Q5_1: {"Q5_1", 32, 24},   // f16 d, f16 m, 4 bytes of fifth bits, 16 bytes of nibbles
	Q8_0: {"Q8_0", 32, 34},   // f16 d + 32 int8
	Q2_K: {"Q2_K", 256, 84},  // 16 scale|min<<4 bytes, 64 bytes of 2-bit q, f16 d, f16 dmin
	Q3_K: {"Q3_K", 256, 110}, // 32 bytes of high bits, 64 bytes of 2-bit q, 12 bytes of 6-bit scales, f16 d
	Q4_K: {"Q4_K", 256, 144}, // f16 d, f16 dmin, 12 bytes scales, 128 bytes nibbles
	Q5_K: {"Q5_K", 256, 176}, // f16 d, f16 dmin, 12 scales, 32 high bits, 128 nibbles
	Q6_K: {"Q6_K", 256, 210}, // 128 low nibbles, 64 high bits, 16 int8 scales, f16 d
	// f16 d + 16 bytes of table indices
	IQ4_NL: {"IQ4_NL", 32, 18},
	// f16 d, u16 high 2 bits and 4 bytes low 4 bits of 8 6-bit scales, 128 bytes of indices
	IQ4_XS: {"IQ4_XS", 256, 136},
	// E8M0 e (scale 2^(e−128)) + 16 bytes of table indices
	MXFP4: {"MXFP4", 32, 17},
}

// String is ggml's name of the type.
func (t DType) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("DType(%d)", uint32(t))
}

// Supported reports whether Tandem can compute with the type.
func (t DType) Supported() bool { _, ok := types[t]; return ok }

// BlockSize is the number of elements per quantization block (1 for floats).
func (t DType) BlockSize() int { return types[t].blockSize }

// RowBytes is the size in bytes of n elements (n a multiple of BlockSize).
func (t DType) RowBytes(n int) int {
	ti := types[t]
	return n / ti.blockSize * ti.blockBytes
}

// Tensor is one weight tensor in ggml's layout.
type Tensor struct {
	Name  string
	Type  DType
	Shape []int  // ggml order: Shape[0] is the contiguous (input) dim; a matrix W[out][in] has Shape [in, out]
	Data  []byte // raw little-endian bytes in Type's block layout, possibly mmapped; read-only
}

// NumElements is the product of Shape.
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rows is the number of rows (elements / Shape[0]).
func (t *Tensor) Rows() int {
	if len(t.Shape) == 0 || t.Shape[0] == 0 {
		return 0
	}
	return t.NumElements() / t.Shape[0]
}

// NewTensor quantizes values (row-major, len = product of shape) to type
// typ and returns the tensor. Tests and test-model writers use it.
func NewTensor(name string, typ DType, shape []int, values []float32) (*Tensor, error) {
	t := &Tensor{Name: name, Type: typ, Shape: append([]int(nil), shape...)}
	if n := t.NumElements(); n != len(values) {
		return nil, fmt.Errorf("%w: tensor %s of shape %v needs %d values, have %d", ErrLayout, name, shape, n, len(values))
	}
	if len(shape) > 0 && typ.Supported() && shape[0]%typ.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: tensor %s: row of %d elements is not a multiple of the %v block of %d",
			ErrLayout, name, shape[0], typ, typ.BlockSize())
	}
	data, err := Quantize(typ, values)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	t.Data = data
	return t, nil
}

// Float32s dequantizes the whole tensor into a new slice.
func (t *Tensor) Float32s() ([]float32, error) {
	out := make([]float32, t.NumElements())
	if err := Dequantize(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", t.Name, err)
	}
	return out, nil
}

// DequantizeRow writes row i (Shape[0] elements) into dst[:Shape[0]].
func (t *Tensor) DequantizeRow(i int, dst []float32) error {
	n := t.Shape[0]
	rb := t.Type.RowBytes(n)
	if i < 0 || i >= t.Rows() || len(dst) < n || (i+1)*rb > len(t.Data) {
		return fmt.Errorf("%w: tensor %s: row %d of %d into %d values", ErrLayout, t.Name, i, t.Rows(), len(dst))
	}
	return Dequantize(t.Type, t.Data[i*rb:(i+1)*rb], dst[:n])
}
