package tokenizer_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// ggufMeta is a minimal GGUF (v2/v3) metadata reader for the tests: it reads
// the key-value section and stops before the tensor infos. It implements
// tokenizer.Metadata with the value types a GGUF reader would give:
// scalars as their Go type, arrays as typed slices ([]string, []int32, …).
type ggufMeta map[string]any

func (m ggufMeta) KV(key string) (any, bool) {
	v, ok := m[key]
	return v, ok
}

func readGGUFMeta(path string) (ggufMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &ggufReader{r: bufio.NewReaderSize(f, 1<<20)}
	if magic := r.u32(); magic != 0x46554747 { // "GGUF"
		return nil, fmt.Errorf("%s: not a GGUF file", path)
	}
	if v := r.u32(); v < 2 || v > 3 {
		return nil, fmt.Errorf("%s: GGUF version %d", path, v)
	}
	r.u64() // tensor count
	n := r.u64()
	m := make(ggufMeta, n)
	for range n {
		key := r.str()
		m[key] = r.value(r.u32())
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", path, r.err)
		}
	}
	return m, nil
}

type ggufReader struct {
	r   *bufio.Reader
	err error
	buf [8]byte
}

func (g *ggufReader) read(n int) []byte {
	if g.err != nil {
		return g.buf[:n]
	}
	_, g.err = io.ReadFull(g.r, g.buf[:n])
	return g.buf[:n]
}

func (g *ggufReader) u32() uint32 { return binary.LittleEndian.Uint32(g.read(4)) }
func (g *ggufReader) u64() uint64 { return binary.LittleEndian.Uint64(g.read(8)) }

func (g *ggufReader) str() string {
	n := g.u64()
	if g.err != nil || n > 1<<30 {
		g.err = fmt.Errorf("bad string length %d", n)
		return ""
	}
	b := make([]byte, n)
	_, g.err = io.ReadFull(g.r, b)
	return string(b)
}

// GGUF value types.
const (
	gUint8 = iota
	gInt8
	gUint16
	gInt16
	gUint32
	gInt32
	gFloat32
	gBool
	gString
	gArray
	gUint64
	gInt64
	gFloat64
)

func (g *ggufReader) value(typ uint32) any {
	switch typ {
	case gUint8:
		return g.read(1)[0]
	case gInt8:
		return int8(g.read(1)[0])
	case gUint16:
		return binary.LittleEndian.Uint16(g.read(2))
	case gInt16:
		return int16(binary.LittleEndian.Uint16(g.read(2)))
	case gUint32:
		return g.u32()
	case gInt32:
		return int32(g.u32())
	case gFloat32:
		return math.Float32frombits(g.u32())
	case gBool:
		return g.read(1)[0] != 0
	case gString:
		return g.str()
	case gUint64:
		return g.u64()
	case gInt64:
		return int64(g.u64())
	case gFloat64:
		return math.Float64frombits(g.u64())
	case gArray:
		et, n := g.u32(), g.u64()
		if n > 1<<26 {
			g.err = fmt.Errorf("bad array length %d", n)
			return nil
		}
		switch et {
		case gString:
			s := make([]string, n)
			for i := range s {
				s[i] = g.str()
			}
			return s
		case gInt32:
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(g.u32())
			}
			return s
		case gFloat32:
			s := make([]float32, n)
			for i := range s {
				s[i] = math.Float32frombits(g.u32())
			}
			return s
		default:
			s := make([]any, n)
			for i := range s {
				s[i] = g.value(et)
			}
			return s
		}
	}
	g.err = fmt.Errorf("unknown GGUF value type %d", typ)
	return nil
}
