package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// Writer builds a safetensors file; tensors are laid out in the order
// added. Tensor data is not copied: callers must not modify it before
// WriteTo. Not safe for concurrent use.
type Writer struct {
	Metadata map[string]string // written as "__metadata__" when not nil

	infos []TensorInfo
	data  [][]byte // parallel to infos
	names map[string]bool
	size  uint64 // data bytes so far
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{names: map[string]bool{}} }

// Add appends a tensor of dtype ("F32", "BF16", ...) and row-major shape;
// for dtypes with a known width len(data) must match the shape.
func (w *Writer) Add(name, dtype string, shape []uint64, data []byte) error {
	if w.names[name] || name == metadataKey {
		return fmt.Errorf("safetensors: duplicate or reserved tensor name %q", name)
	}
	if width, ok := dtypeSizes[dtype]; ok {
		if n, ok := numElements(shape); !ok || n*width != uint64(len(data)) {
			return fmt.Errorf("safetensors: tensor %q: %d bytes for %s %v", name, len(data), dtype, shape)
		}
	}
	w.names[name] = true
	w.infos = append(w.infos, TensorInfo{Name: name, DType: dtype, Shape: append([]uint64{}, shape...), Begin: w.size, End: w.size + uint64(len(data))})
	w.data = append(w.data, data)
	w.size += uint64(len(data))
	return nil
}

// WriteTo writes the file: the header padded with spaces to a multiple of
// 8 bytes (so the data section is 8-byte aligned), then the data.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	header := map[string]any{}
	if w.Metadata != nil {
		header[metadataKey] = w.Metadata
	}
	for _, ti := range w.infos {
		shape := ti.Shape
		if shape == nil {
			shape = []uint64{}
		}
		header[ti.Name] = map[string]any{"dtype": ti.DType, "shape": shape, "data_offsets": []uint64{ti.Begin, ti.End}}
	}
	js, err := json.Marshal(header)
	if err != nil {
		return 0, fmt.Errorf("safetensors: %w", err)
	}
	js = append(js, bytes.Repeat([]byte(" "), (8-len(js)%8)%8)...)
	var n int64
	write := func(b []byte) error {
		m, err := out.Write(b)
		n += int64(m)
		return err
	}
	if err := write(binary.LittleEndian.AppendUint64(nil, uint64(len(js)))); err != nil {
		return n, err
	}
	if err := write(js); err != nil {
		return n, err
	}
	for _, d := range w.data {
		if err := write(d); err != nil {
			return n, err
		}
	}
	return n, nil
}
