package gguf

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sync"
)

// File is an open GGUF file: its metadata, tensor infos and the mapped
// bytes the tensor data is sliced from. Its methods are safe for
// concurrent use; slices from TensorData are valid until Close.
type File struct {
	Metadata

	tensors    []TensorInfo   // in file order
	byName     map[string]int // name → index in tensors
	alignment  uint64         // bytes, a power of two
	dataOffset uint64         // bytes from the file start to the data section

	mu     sync.RWMutex // guards the fields below
	data   []byte       // the whole file, mapped read-only; nil after Close
	unmap  func([]byte) error
	closed bool
}

// Open maps the file at path read-only and parses it. Every tensor must lie
// inside the file, aligned, without overlapping another.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrFormat, path)
	}
	data, unmap, err := mapFile(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gguf: map %s: %w", path, err)
	}
	f, err := parse(data)
	if err != nil {
		_ = unmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// parse reads a whole GGUF image held in data, which f keeps.
func parse(data []byte) (*File, error) {
	d := newDecoder(bytes.NewReader(data), int64(len(data)))
	m, numTensors, err := d.metadata()
	if err != nil {
		return nil, err
	}
	align, err := m.alignment()
	if err != nil {
		return nil, err
	}
	infos, err := d.tensorInfos(numTensors, align)
	if err != nil {
		return nil, err
	}
	f := &File{
		Metadata:   *m,
		tensors:    infos,
		byName:     make(map[string]int, len(infos)),
		alignment:  align,
		dataOffset: (uint64(d.pos) + align - 1) / align * align,
		data:       data,
	}
	for i, ti := range infos {
		f.byName[ti.Name] = i
	}
	if err := f.checkLayout(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkLayout verifies that every tensor lies inside the file and that no
// two overlap.
func (f *File) checkLayout() error {
	dataLen := uint64(0) // bytes in the data section
	if n := uint64(len(f.data)); n > f.dataOffset {
		dataLen = n - f.dataOffset
	}
	byOffset := slices.Clone(f.tensors)
	slices.SortFunc(byOffset, func(a, b TensorInfo) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	end := uint64(0) // end of the previous tensor in the data section
	for i, ti := range byOffset {
		if ti.Offset > dataLen || ti.Size > dataLen-ti.Offset {
			return fmt.Errorf("%w: tensor %q (%d bytes at data offset %d) extends past the end of the file (%d data bytes)",
				ErrFormat, ti.Name, ti.Size, ti.Offset, dataLen)
		}
		if i > 0 && ti.Offset < end {
			return fmt.Errorf("%w: tensor %q at data offset %d overlaps tensor %q ending at %d",
				ErrFormat, ti.Name, ti.Offset, byOffset[i-1].Name, end)
		}
		end = max(end, ti.Offset+ti.Size)
	}
	return nil
}

// Tensors lists the tensor infos in file order.
func (f *File) Tensors() []TensorInfo { return slices.Clone(f.tensors) }

// Tensor is the info of the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i], true
}

// Alignment is the data section's alignment in bytes.
func (f *File) Alignment() uint64 { return f.alignment }

// DataOffset is the data section's start, in bytes from the file start.
func (f *File) DataOffset() uint64 { return f.dataOffset }

// TensorData is ti's bytes: a read-only slice of the mapped file, valid
// until Close. ti's Type, Shape and Offset are checked again, so a caller
// may pass a TensorInfo it built itself.
func (f *File) TensorData(ti TensorInfo) ([]byte, error) {
	size, err := TensorSize(ti.Type, ti.Shape)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, ti.Name, err)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	n := uint64(len(f.data))
	start := f.dataOffset + ti.Offset
	if start < f.dataOffset || start > n || size > n-start {
		return nil, fmt.Errorf("%w: tensor %q (%d bytes at data offset %d) lies outside the file", ErrFormat, ti.Name, size, ti.Offset)
	}
	return f.data[start : start+size : start+size], nil
}

// Close unmaps the file. Slices from TensorData must not be used after it.
// Closing twice is a no-op.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	data := f.data
	f.data = nil
	if f.unmap == nil {
		return nil
	}
	if err := f.unmap(data); err != nil {
		return fmt.Errorf("gguf: unmap: %w", err)
	}
	return nil
}
