package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// maxHeader is the largest JSON header accepted (the reference
// implementation's limit).
const maxHeader = 100_000_000

// metadataKey is the header entry that is not a tensor.
const metadataKey = "__metadata__"

// ErrFormat reports a malformed safetensors file or index.
var ErrFormat = errors.New("safetensors: malformed file")

// ErrClosed reports use of a File or Set after Close.
var ErrClosed = errors.New("safetensors: closed")

// ErrDType reports a tensor whose dtype has no model.DType.
var ErrDType = errors.New("safetensors: unsupported dtype")

// dtypeSizes are the byte widths of the dtypes whose sizes are checked.
var dtypeSizes = map[string]uint64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1,
	"U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
	"F8_E4M3": 1, "F8_E5M2": 1,
}

// dtypes maps the dtypes Tandem computes with to model DTypes.
var dtypes = map[string]model.DType{"F32": model.F32, "F16": model.F16, "BF16": model.BF16}

// TensorInfo is one header entry.
type TensorInfo struct {
	Name  string
	DType string   // "F32", "BF16", ...
	Shape []uint64 // row-major: Shape[0] is the outermost dimension
	Begin uint64   // byte offset of the data, relative to the data section
	End   uint64   // one past the last byte
}

// File is one open safetensors file. Its methods are safe for concurrent
// use; tensor data is valid until Close.
type File struct {
	Metadata map[string]string // "__metadata__", nil when absent or not a string map

	infos   []TensorInfo   // sorted by name
	byName  map[string]int // name → index in infos
	dataOff uint64         // start of the data section in the file

	mu     sync.RWMutex // guards the fields below
	data   []byte       // the whole file, mapped read-only; nil after Close
	unmap  func([]byte) error
	closed bool
}

// Open maps the file at path read-only and parses its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close() // the mapping outlives the descriptor
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.Size() < 8 {
		return nil, fmt.Errorf("%w: %s: %d bytes, too short", ErrFormat, path, st.Size())
	}
	data, unmap, err := mapFile(fd, st.Size())
	if err != nil {
		return nil, fmt.Errorf("safetensors: map %s: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		_ = unmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.unmap = unmap
	return f, nil
}

// Parse reads a whole safetensors image held in data, which the File
// keeps (Close does not free it).
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, too short", ErrFormat, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > maxHeader || n > uint64(len(data)-8) {
		return nil, fmt.Errorf("%w: header length %d exceeds the file (%d bytes) or the %d-byte limit", ErrFormat, n, len(data), maxHeader)
	}
	header := data[8 : 8+n]
	if !bytes.HasPrefix(bytes.TrimLeft(header, " \t\r\n"), []byte("{")) {
		return nil, fmt.Errorf("%w: header is not a JSON object", ErrFormat)
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(header, &entries); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	f := &File{byName: make(map[string]int, len(entries)), dataOff: 8 + n, data: data}
	dataLen := uint64(len(data)) - f.dataOff
	for name, msg := range entries {
		if name == metadataKey {
			_ = json.Unmarshal(msg, &f.Metadata) // free-form; unused
			continue
		}
		ti, err := parseEntry(name, msg, dataLen)
		if err != nil {
			return nil, err
		}
		f.infos = append(f.infos, ti)
	}
	slices.SortFunc(f.infos, func(a, b TensorInfo) int { return strings.Compare(a.Name, b.Name) })
	for i, ti := range f.infos {
		f.byName[ti.Name] = i
	}
	if err := checkOverlap(f.infos); err != nil {
		return nil, err
	}
	return f, nil
}

func parseEntry(name string, msg json.RawMessage, dataLen uint64) (TensorInfo, error) {
	var e struct {
		DType       string   `json:"dtype"`
		Shape       []uint64 `json:"shape"`
		DataOffsets []uint64 `json:"data_offsets"`
	}
	if err := json.Unmarshal(msg, &e); err != nil {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
	}
	if e.DType == "" || len(e.DataOffsets) != 2 {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: needs a dtype and two data_offsets", ErrFormat, name)
	}
	ti := TensorInfo{Name: name, DType: e.DType, Shape: e.Shape, Begin: e.DataOffsets[0], End: e.DataOffsets[1]}
	if ti.Begin > ti.End || ti.End > dataLen {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: data_offsets [%d, %d] outside the %d data bytes", ErrFormat, name, ti.Begin, ti.End, dataLen)
	}
	if width, ok := dtypeSizes[e.DType]; ok {
		n, ok := numElements(e.Shape)
		if !ok || n > math.MaxUint64/width || n*width != ti.End-ti.Begin {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q: %s %v does not fill its %d bytes", ErrFormat, name, e.DType, e.Shape, ti.End-ti.Begin)
		}
	}
	return ti, nil
}

// numElements is the product of shape; ok is false on overflow.
func numElements(shape []uint64) (uint64, bool) {
	n := uint64(1)
	for _, d := range shape {
		if d != 0 && n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func checkOverlap(infos []TensorInfo) error {
	byBegin := slices.Clone(infos)
	slices.SortFunc(byBegin, func(a, b TensorInfo) int {
		switch {
		case a.Begin < b.Begin:
			return -1
		case a.Begin > b.Begin:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := 1; i < len(byBegin); i++ {
		if prev := byBegin[i-1]; byBegin[i].Begin < prev.End {
			return fmt.Errorf("%w: tensor %q overlaps tensor %q", ErrFormat, byBegin[i].Name, prev.Name)
		}
	}
	return nil
}

// Infos lists the tensors, sorted by name.
func (f *File) Infos() []TensorInfo { return slices.Clone(f.infos) }

// Info is the header entry of the tensor called name.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.infos[i], true
}

// Tensor is the tensor called name in ggml form: DType from the dtype,
// Shape reversed to ggml order, Data a read-only slice of the mapping
// valid until Close. Dtypes other than F32, F16 and BF16 wrap ErrDType.
func (f *File) Tensor(name string) (*model.Tensor, error) {
	ti, ok := f.Info(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	dt, ok := dtypes[ti.DType]
	if !ok {
		return nil, fmt.Errorf("%w: tensor %q is %s (supported: BF16, F16, F32)", ErrDType, name, ti.DType)
	}
	shape := make([]int, len(ti.Shape))
	for i, d := range ti.Shape {
		shape[len(shape)-1-i] = int(d) // fits: the bytes exist
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	begin, end := f.dataOff+ti.Begin, f.dataOff+ti.End
	return &model.Tensor{Name: name, Type: dt, Shape: shape, Data: f.data[begin:end:end]}, nil
}

// Close unmaps the file; closing twice is a no-op.
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
		return fmt.Errorf("safetensors: unmap: %w", err)
	}
	return nil
}
