package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// sizedReader is what a bytes-backed msgpack.Decoder reads from
// (*bytes.Reader): it knows how many bytes remain and can seek.
type sizedReader interface {
	io.ReadSeeker
	Len() int
}

// dec reads msgpack through vmihailenco's primitives, adding what hostile
// input needs: every declared array, map, str, bin or ext length is
// compared with the bytes that remain before anything is allocated (each
// array element needs at least 1 byte, each map entry 2), and free-form
// values nest at most maxDepth deep.
//
// r is the decoder's *bytes.Reader. It is nil when the msgpack.Decoder
// reads from a stream (only possible through DecodeMsgpack): lengths then
// cannot be checked up front, so slices are preallocated to at most
// streamCapHint elements and bytes are read as they arrive.
type dec struct {
	d     *msgpack.Decoder
	r     sizedReader
	br    *bytes.Reader // r when it is one: ints are read from it directly, the hot path
	depth int           // nesting of the free-form value being read
}

// streamCapHint caps preallocation (elements) when the remaining length is
// unknown.
const streamCapHint = 1024

func newDec(md *msgpack.Decoder) *dec {
	d := &dec{d: md}
	if r, ok := md.Buffered().(sizedReader); ok {
		d.r = r
		d.br, _ = r.(*bytes.Reader)
	}
	return d
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *dec) peek() (byte, error) {
	c, err := d.d.PeekCode()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	return c, nil
}

// next consumes one single-byte value (nil, bool, fixint).
func (d *dec) next() error {
	return unexpectedEOF(d.d.Skip())
}

// takeNil consumes the next value if it is nil.
func (d *dec) takeNil() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	if c != msgpcode.Nil {
		return false, nil
	}
	return true, d.next()
}

// checkLen rejects n items of at least minBytes each when fewer bytes
// remain.
func (d *dec) checkLen(n, minBytes int, what string) error {
	if n < 0 {
		return fmt.Errorf("negative %s length %d", what, n)
	}
	if d.r != nil && n > d.r.Len()/minBytes {
		return fmt.Errorf("%s of length %d declared with only %d bytes left", what, n, d.r.Len())
	}
	return nil
}

func (d *dec) capHint(n int) int {
	if d.r == nil {
		return min(n, streamCapHint)
	}
	return n
}

// arrayLen reads an array header; nil reads as an empty array.
func (d *dec) arrayLen() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Nil {
		return 0, d.next()
	}
	if !isArray(c) {
		return 0, fmt.Errorf("want array, got %s", describe(c))
	}
	n, err := d.d.DecodeArrayLen()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	return n, d.checkLen(n, 1, "array")
}

// mapLen reads a map header; nil reads as an empty map.
func (d *dec) mapLen() (int, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if c == msgpcode.Nil {
		return 0, d.next()
	}
	if !isMap(c) {
		return 0, fmt.Errorf("want map, got %s", describe(c))
	}
	n, err := d.d.DecodeMapLen()
	if err != nil {
		return 0, unexpectedEOF(err)
	}
	return n, d.checkLen(n, 2, "map")
}

// int64 reads any msgpack int; nil reads as 0.
func (d *dec) int64() (int64, error) {
	if d.br != nil {
		if n, ok := d.fastInt(); ok {
			return n, nil
		}
	}
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Nil:
		return 0, d.next()
	case c == msgpcode.Uint64:
		u, err := d.d.DecodeUint64()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("int %d overflows int64", u)
		}
		return int64(u), nil
	case isInt(c):
		n, err := d.d.DecodeInt64()
		return n, unexpectedEOF(err)
	}
	return 0, fmt.Errorf("want int, got %s", describe(c))
}

// fastInt reads an int of up to 32 bits straight from the bytes.Reader
// (token ids are most of an ADD's bytes). Anything else, including a
// truncated int, is left unread for the general path (ok false).
func (d *dec) fastInt() (n int64, ok bool) {
	c, err := d.br.ReadByte()
	if err != nil {
		return 0, false
	}
	if c <= 0x7f || c >= 0xe0 {
		return int64(int8(c)), true
	}
	var size int // bytes after the code
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		size = 1
	case msgpcode.Uint16, msgpcode.Int16:
		size = 2
	case msgpcode.Uint32, msgpcode.Int32:
		size = 4
	}
	if size == 0 || d.br.Len() < size {
		_ = d.br.UnreadByte()
		return 0, false
	}
	var u uint32
	for range size {
		b, _ := d.br.ReadByte()
		u = u<<8 | uint32(b)
	}
	switch c {
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32:
		return int64(u), true
	case msgpcode.Int8:
		return int64(int8(u)), true
	case msgpcode.Int16:
		return int64(int16(u)), true
	}
	return int64(int32(u)), true
}

func (d *dec) int() (int, error) {
	n, err := d.int64()
	if err != nil {
		return 0, err
	}
	if int64(int(n)) != n {
		return 0, fmt.Errorf("int %d overflows int", n)
	}
	return int(n), nil
}

func (d *dec) int32() (int32, error) {
	n, err := d.int64()
	if err != nil {
		return 0, err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, fmt.Errorf("int %d overflows int32", n)
	}
	return int32(n), nil
}

// uint64 reads a non-negative int; nil reads as 0.
func (d *dec) uint64() (uint64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Nil:
		return 0, d.next()
	case c == msgpcode.Uint64:
		u, err := d.d.DecodeUint64()
		return u, unexpectedEOF(err)
	case isInt(c):
		n, err := d.d.DecodeInt64()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if n < 0 {
			return 0, fmt.Errorf("want unsigned int, got %d", n)
		}
		return uint64(n), nil
	}
	return 0, fmt.Errorf("want unsigned int, got %s", describe(c))
}

// optInt reads `int | nil`.
func (d *dec) optInt() (*int, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return nil, err
	}
	n, err := d.int()
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// float64 reads float64, float32 or an int; nil reads as 0.
func (d *dec) float64() (float64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Nil:
		return 0, d.next()
	case c == msgpcode.Double:
		f, err := d.d.DecodeFloat64()
		return f, unexpectedEOF(err)
	case c == msgpcode.Float:
		f, err := d.d.DecodeFloat32()
		return float64(f), unexpectedEOF(err)
	case c == msgpcode.Uint64:
		u, err := d.d.DecodeUint64()
		return float64(u), unexpectedEOF(err)
	case isInt(c):
		n, err := d.d.DecodeInt64()
		return float64(n), unexpectedEOF(err)
	}
	return 0, fmt.Errorf("want float, got %s", describe(c))
}

// bool reads a bool; nil reads as false.
func (d *dec) bool() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, err
	}
	switch c {
	case msgpcode.Nil, msgpcode.False:
		return false, d.next()
	case msgpcode.True:
		return true, d.next()
	}
	return false, fmt.Errorf("want bool, got %s", describe(c))
}

// str reads a str; nil reads as "".
func (d *dec) str() (string, error) {
	c, err := d.peek()
	if err != nil {
		return "", err
	}
	if c == msgpcode.Nil {
		return "", d.next()
	}
	if !msgpcode.IsString(c) {
		return "", fmt.Errorf("want str, got %s", describe(c))
	}
	if d.r == nil {
		b, err := d.streamBytes()
		return string(b), err
	}
	// Read the header to check the length, then step back so the decoder
	// reads the whole string into its reused scratch buffer: one
	// allocation, for the string itself.
	start, err := d.r.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", err
	}
	n, err := d.d.DecodeBytesLen()
	if err != nil {
		return "", unexpectedEOF(err)
	}
	if err := d.checkLen(n, 1, "str"); err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	if _, err := d.r.Seek(start, io.SeekStart); err != nil {
		return "", err
	}
	s, err := d.d.DecodeString()
	return s, unexpectedEOF(err)
}

// bin reads a bin (the header not yet consumed).
func (d *dec) bin() ([]byte, error) {
	if d.r == nil {
		return d.streamBytes()
	}
	n, err := d.d.DecodeBytesLen()
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if err := d.checkLen(n, 1, "bin"); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	_, err = io.ReadFull(d.r, b)
	return b, unexpectedEOF(err)
}

// streamBytes reads a str or bin body from a stream, allocating as bytes
// arrive rather than as the header claims.
func (d *dec) streamBytes() ([]byte, error) {
	n, err := d.d.DecodeBytesLen()
	if err != nil {
		return nil, unexpectedEOF(err)
	}
	if err := d.checkLen(n, 1, "str"); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_, err = io.CopyN(&b, d.d.Buffered(), int64(n))
	return b.Bytes(), unexpectedEOF(err)
}

// discard skips n body bytes whose length was already checked.
func (d *dec) discard(n int) error {
	if d.r != nil {
		_, err := d.r.Seek(int64(n), io.SeekCurrent)
		return err
	}
	_, err := io.CopyN(io.Discard, d.d.Buffered(), int64(n))
	return unexpectedEOF(err)
}

// list reads an array whose elements elem decodes: nil when empty, and an
// element's error prefixed with its index.
func list[T any](d *dec, elem func() (T, error)) ([]T, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]T, 0, d.capHint(n))
	for i := range n {
		v, err := elem()
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *dec) int32s() ([]int32, error) { return list(d, d.int32) }

// nonNilInt32s is int32s where an empty array reads as an empty, non-nil
// slice: a set but empty list differs from an absent one.
func (d *dec) nonNilInt32s() ([]int32, error) {
	s, err := d.int32s()
	if s == nil && err == nil {
		s = []int32{}
	}
	return s, err
}

func (d *dec) strs() ([]string, error) { return list(d, d.str) }

// finishReason reads nil or one of vLLM's FinishReason ints.
func (d *dec) finishReason() (FinishReason, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return FinishNone, err
	}
	n, err := d.int64()
	if err != nil {
		return FinishNone, err
	}
	if n < 0 || n > int64(FinishError-FinishStop) {
		return FinishNone, fmt.Errorf("unknown finish_reason %d", n)
	}
	return FinishStop + FinishReason(n), nil
}

// stopReason reads nil, an int (int64) or a str (string).
func (d *dec) stopReason() (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Nil:
		return nil, d.next()
	case isInt(c) || c == msgpcode.Uint64:
		return d.int64()
	case msgpcode.IsString(c):
		return d.str()
	}
	return nil, fmt.Errorf("want stop_reason int, str or nil, got %s", describe(c))
}

// logitBiasKey reads an int key, or a decimal str key (JSON-origin maps).
func (d *dec) logitBiasKey() (int32, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	if !msgpcode.IsString(c) {
		return d.int32()
	}
	s, err := d.str()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("logit_bias key %q is not an int32", s)
	}
	return int32(n), nil
}

func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// describe names a msgpack code for error messages.
func describe(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case c == msgpcode.True || c == msgpcode.False:
		return "bool"
	case isInt(c) || c == msgpcode.Uint64:
		return "int"
	case c == msgpcode.Float || c == msgpcode.Double:
		return "float"
	case msgpcode.IsString(c):
		return "str"
	case msgpcode.IsBin(c):
		return "bin"
	case isArray(c):
		return "array"
	case isMap(c):
		return "map"
	case msgpcode.IsExt(c):
		return "ext"
	}
	return fmt.Sprintf("code %#x", c)
}

// decoderState is one pooled bytes-backed decoder.
type decoderState struct {
	r bytes.Reader
	d *msgpack.Decoder
}

var decPool = sync.Pool{New: func() any {
	return &decoderState{d: msgpack.NewDecoder(nil)}
}}

// unmarshalWith runs fn on a pooled decoder over b, requires that fn
// consumes all of b, and wraps any failure with ErrMalformed.
func unmarshalWith(b []byte, fn func(d *dec) error) error {
	s := decPool.Get().(*decoderState)
	s.r.Reset(b)
	s.d.Reset(&s.r)
	d := dec{d: s.d, r: &s.r, br: &s.r}
	err := fn(&d)
	if err == nil && s.r.Len() != 0 {
		err = fmt.Errorf("%d trailing bytes after the value", s.r.Len())
	}
	s.r.Reset(nil)
	s.d.Reset(nil)
	decPool.Put(s)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// checkRaw reports whether b is exactly one well-formed msgpack value.
func checkRaw(b []byte) error {
	var r bytes.Reader
	r.Reset(b)
	d := dec{d: msgpack.NewDecoder(&r), r: &r, br: &r}
	if err := d.skip(); err != nil {
		return err
	}
	if r.Len() != 0 {
		return fmt.Errorf("%d trailing bytes after the value", r.Len())
	}
	return nil
}

// nilCode is msgpack nil.
const nilCode = 0xc0

func isStr(c byte) bool { return msgpcode.IsString(c) }
