package vllm

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// ZeroCopyThreshold is VLLM_MSGPACK_ZERO_COPY_THRESHOLD's default: arrays
// of fewer bytes are written inline, larger ones as aux frames.
const ZeroCopyThreshold = 256

// extRawView is vLLM's CUSTOM_TYPE_RAW_VIEW, the msgpack ext type of
// inline array bytes.
const extRawView = 3

// maxDims bounds an array's shape.
const maxDims = 16

// NDArray is a numpy array or torch tensor as vLLM's MsgpackEncoder writes
// it: the array [dtype, shape, data], where data is ext 3 holding the bytes
// inline, or the int index of the aux frame holding them (frame 0 is the
// payload, so indexes start at 1).
//
// DType is numpy's dtype.str ("<i8", "<f4") for an np.ndarray and torch's
// name ("int64", "float32") for a torch.Tensor; the two are written by
// different rules: an ndarray inline when it has fewer than
// ZeroCopyThreshold bytes or shape (), a tensor only by size. Data holds
// the C-order bytes, little-endian as vLLM's hosts write them.
type NDArray struct {
	DType string
	Shape []int64
	Data  []byte
}

func (a *NDArray) torch() bool { return !strings.ContainsAny(a.DType[:min(1, len(a.DType))], "<>|=") }

func (e *enc) ndarray(a *NDArray) {
	e.arrayLen(3)
	e.str(a.DType)
	e.int64s(a.Shape)
	inline := len(a.Data) < e.threshold || (len(a.Shape) == 0 && !a.torch())
	if inline {
		e.check(e.e.EncodeExtHeader(extRawView, len(a.Data)))
		e.buf.Write(a.Data)
		return
	}
	e.aux = append(e.aux, a.Data)
	e.int(int64(len(e.aux)))
}

func (e *enc) optNDArray(a *NDArray) {
	if a == nil {
		e.null()
		return
	}
	e.ndarray(a)
}

// ndarrayFrom reads [dtype, shape, data]; aux holds all frames.
func ndarrayFrom(n node, aux [][]byte) (NDArray, error) {
	kids, err := n.asArr()
	if err != nil {
		return NDArray{}, err
	}
	if len(kids) != 3 {
		return NDArray{}, fmt.Errorf("ndarray of %d elements, want 3", len(kids))
	}
	var a NDArray
	if a.DType, err = kids[0].asStr(); err != nil {
		return NDArray{}, fmt.Errorf("dtype: %w", err)
	}
	if a.Shape, err = listOf(kids[1], node.asInt64); err != nil {
		return NDArray{}, fmt.Errorf("shape: %w", err)
	}
	if len(a.Shape) > maxDims {
		return NDArray{}, fmt.Errorf("shape of %d dims", len(a.Shape))
	}
	if a.Shape == nil {
		a.Shape = []int64{}
	}
	for _, d := range a.Shape {
		if d < 0 {
			return NDArray{}, fmt.Errorf("negative dim in shape %v", a.Shape)
		}
	}
	switch d := kids[2]; d.kind {
	case kExt:
		if d.ext != extRawView {
			return NDArray{}, fmt.Errorf("data: ext type %d, want %d", d.ext, extRawView)
		}
		a.Data = append([]byte{}, d.b...)
	case kInt:
		if d.i < 1 || d.i >= int64(len(aux)) {
			return NDArray{}, fmt.Errorf("data: aux frame %d of %d frames", d.i, len(aux))
		}
		a.Data = append([]byte{}, aux[d.i]...)
	default:
		return NDArray{}, fmt.Errorf("data: %w", wantErr("ext 3 or aux index", d))
	}
	return a, nil
}

func optNDArrayFrom(n node, aux [][]byte) (*NDArray, error) {
	return optOf(n, func(n node) (NDArray, error) { return ndarrayFrom(n, aux) })
}

// Len is the number of elements the shape holds.
func (a *NDArray) Len() int64 {
	p := int64(1)
	for _, d := range a.Shape {
		if d != 0 && p > math.MaxInt32/d {
			return -1
		}
		p *= d
	}
	return p
}

func (a *NDArray) itemSize() int {
	switch a.DType {
	case "<i8", "<u8", "<f8", "int64", "uint64", "float64":
		return 8
	case "<i4", "<u4", "<f4", "int32", "uint32", "float32":
		return 4
	}
	return 0
}

func (a *NDArray) checkData() error {
	size := a.itemSize()
	if size == 0 {
		return fmt.Errorf("vllm: ndarray dtype %q not supported", a.DType)
	}
	if n := a.Len(); n < 0 || int64(len(a.Data)) != n*int64(size) {
		return fmt.Errorf("vllm: ndarray %s %v holds %d bytes", a.DType, a.Shape, len(a.Data))
	}
	return nil
}

// Ints returns the elements of an int32 or int64 array.
func (a *NDArray) Ints() ([]int64, error) {
	if err := a.checkData(); err != nil {
		return nil, err
	}
	size := a.itemSize()
	out := make([]int64, len(a.Data)/size)
	for i := range out {
		switch a.DType {
		case "<i8", "int64":
			out[i] = int64(binary.LittleEndian.Uint64(a.Data[8*i:]))
		case "<i4", "int32":
			out[i] = int64(int32(binary.LittleEndian.Uint32(a.Data[4*i:])))
		default:
			return nil, fmt.Errorf("vllm: ndarray dtype %q is not an int type", a.DType)
		}
	}
	return out, nil
}

// Floats returns the elements of a float32 or float64 array.
func (a *NDArray) Floats() ([]float64, error) {
	if err := a.checkData(); err != nil {
		return nil, err
	}
	size := a.itemSize()
	out := make([]float64, len(a.Data)/size)
	for i := range out {
		switch a.DType {
		case "<f4", "float32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:])))
		case "<f8", "float64":
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(a.Data[8*i:]))
		default:
			return nil, fmt.Errorf("vllm: ndarray dtype %q is not a float type", a.DType)
		}
	}
	return out, nil
}

// Int64Array builds an array of dtype (numpy "<i8" or torch "int64") from
// C-order values.
func Int64Array(dtype string, shape []int64, vals []int64) NDArray {
	data := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
	}
	return NDArray{DType: dtype, Shape: shape, Data: data}
}

// Int32Array builds an array of dtype (numpy "<i4" or torch "int32") from
// C-order values, truncated to int32.
func Int32Array(dtype string, shape []int64, vals []int64) NDArray {
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(int32(v)))
	}
	return NDArray{DType: dtype, Shape: shape, Data: data}
}

// Float32Array builds an array of dtype (numpy "<f4" or torch "float32")
// from C-order values, rounded to float32.
func Float32Array(dtype string, shape []int64, vals []float64) NDArray {
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
	}
	return NDArray{DType: dtype, Shape: shape, Data: data}
}
