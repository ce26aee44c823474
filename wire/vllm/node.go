package vllm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Decoding is two steps: parse turns a frame into a tree of nodes, checking
// every declared length against the bytes that remain and the nesting
// against maxDepth before anything is allocated, and the from* functions
// map nodes onto structs. The tree keeps each value's exact bytes (span),
// so Raw fields come back verbatim.

// maxDepth caps msgpack nesting. vLLM's deepest typed path
// (outputs → output → logprobs → ndarray → shape) is 6 deep; the rest is
// headroom for the free-form fields held as Raw.
const maxDepth = 48

// maxElems caps the elements of one array or map: a frame can only declare
// what its bytes can hold anyway (each element needs at least one byte),
// and this bounds the node slice allocated for it.
const maxElems = 1 << 24

type kind uint8

const (
	kNil kind = iota
	kBool
	kInt   // i holds it
	kUint  // u holds it (only for values above math.MaxInt64)
	kFloat // f holds it (float32 on the wire is widened)
	kStr   // b holds the bytes
	kBin   // b holds the bytes
	kExt   // ext holds the type, b the data
	kArr   // kids holds the elements
	kMap   // kids holds key, value, key, value, ...
)

var kindNames = [...]string{"nil", "bool", "int", "uint", "float", "str", "bin", "ext", "array", "map"}

func (k kind) String() string { return kindNames[k] }

// node is one parsed msgpack value. b and span alias the parsed frame.
type node struct {
	kind kind
	bool bool
	i    int64
	u    uint64
	f    float64
	ext  int8
	b    []byte
	kids []node
	span []byte
}

type parser struct {
	buf []byte
	pos int
}

var errShort = errors.New("unexpected end of data")

// parse reads exactly one msgpack value filling b.
func parse(b []byte) (node, error) {
	p := &parser{buf: b}
	n, err := p.value(0)
	if err != nil {
		return node{}, err
	}
	if p.pos != len(b) {
		return node{}, fmt.Errorf("%d trailing bytes after the value", len(b)-p.pos)
	}
	return n, nil
}

func (p *parser) take(n int) ([]byte, error) {
	if n < 0 || n > len(p.buf)-p.pos {
		return nil, errShort
	}
	s := p.buf[p.pos : p.pos+n]
	p.pos += n
	return s, nil
}

func (p *parser) uintN(size int) (uint64, error) {
	s, err := p.take(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(s[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(s)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(s)), nil
	}
	return binary.BigEndian.Uint64(s), nil
}

func (p *parser) value(depth int) (node, error) {
	if depth > maxDepth {
		return node{}, fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	start := p.pos
	n, err := p.scalarOrContainer(depth)
	if err != nil {
		return node{}, err
	}
	n.span = p.buf[start:p.pos]
	return n, nil
}

func (p *parser) scalarOrContainer(depth int) (node, error) {
	c, err := p.uintN(1)
	if err != nil {
		return node{}, err
	}
	code := byte(c)
	switch {
	case msgpcode.IsFixedNum(code):
		return node{kind: kInt, i: int64(int8(code))}, nil
	case msgpcode.IsFixedMap(code):
		return p.container(kMap, int(code&0x0f), depth)
	case msgpcode.IsFixedArray(code):
		return p.container(kArr, int(code&0x0f), depth)
	case msgpcode.IsFixedString(code):
		return p.bytes(kStr, int(code&0x1f))
	}
	switch code {
	case msgpcode.Nil:
		return node{kind: kNil}, nil
	case msgpcode.False, msgpcode.True:
		return node{kind: kBool, bool: code == msgpcode.True}, nil
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Uint64:
		u, err := p.uintN(1 << (code - msgpcode.Uint8))
		if err != nil {
			return node{}, err
		}
		if u > math.MaxInt64 {
			return node{kind: kUint, u: u}, nil
		}
		return node{kind: kInt, i: int64(u)}, nil
	case msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		size := 1 << (code - msgpcode.Int8)
		u, err := p.uintN(size)
		if err != nil {
			return node{}, err
		}
		shift := 64 - 8*size
		return node{kind: kInt, i: int64(u<<shift) >> shift}, nil
	case msgpcode.Float:
		u, err := p.uintN(4)
		return node{kind: kFloat, f: float64(math.Float32frombits(uint32(u)))}, err
	case msgpcode.Double:
		u, err := p.uintN(8)
		return node{kind: kFloat, f: math.Float64frombits(u)}, err
	case msgpcode.Str8, msgpcode.Str16, msgpcode.Str32:
		return p.sized(kStr, 1<<(code-msgpcode.Str8))
	case msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
		return p.sized(kBin, 1<<(code-msgpcode.Bin8))
	case msgpcode.Array16, msgpcode.Array32:
		l, err := p.uintN(2 << (code - msgpcode.Array16))
		if err != nil {
			return node{}, err
		}
		return p.container(kArr, int(l), depth)
	case msgpcode.Map16, msgpcode.Map32:
		l, err := p.uintN(2 << (code - msgpcode.Map16))
		if err != nil {
			return node{}, err
		}
		return p.container(kMap, int(l), depth)
	case msgpcode.FixExt1, msgpcode.FixExt2, msgpcode.FixExt4, msgpcode.FixExt8, msgpcode.FixExt16:
		return p.extBody(1 << (code - msgpcode.FixExt1))
	case msgpcode.Ext8, msgpcode.Ext16, msgpcode.Ext32:
		l, err := p.uintN(1 << (code - msgpcode.Ext8))
		if err != nil {
			return node{}, err
		}
		return p.extBody(int(l))
	}
	return node{}, fmt.Errorf("invalid msgpack code 0x%02x", code)
}

func (p *parser) sized(k kind, lenSize int) (node, error) {
	l, err := p.uintN(lenSize)
	if err != nil {
		return node{}, err
	}
	return p.bytes(k, int(l))
}

func (p *parser) bytes(k kind, n int) (node, error) {
	s, err := p.take(n)
	return node{kind: k, b: s}, err
}

func (p *parser) extBody(n int) (node, error) {
	t, err := p.uintN(1)
	if err != nil {
		return node{}, err
	}
	s, err := p.take(n)
	return node{kind: kExt, ext: int8(t), b: s}, err
}

func (p *parser) container(k kind, n, depth int) (node, error) {
	items := n
	if k == kMap {
		items = 2 * n
	}
	if items > len(p.buf)-p.pos || items > maxElems {
		return node{}, fmt.Errorf("%s of length %d declared with only %d bytes left", k, n, len(p.buf)-p.pos)
	}
	kids := make([]node, items)
	for i := range kids {
		v, err := p.value(depth + 1)
		if err != nil {
			return node{}, err
		}
		kids[i] = v
	}
	return node{kind: k, kids: kids}, nil
}
