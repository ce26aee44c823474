package wire

import (
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Whole values of unknown shape: skipped, captured raw, or decoded as
// free-form Go values.

func (d *dec) enter() error {
	if d.depth >= maxDepth {
		return fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	d.depth++
	return nil
}

// skip consumes one value of any kind, ext included, without keeping it.
func (d *dec) skip() error {
	c, err := d.peek()
	if err != nil {
		return err
	}
	switch {
	case msgpcode.IsString(c) || msgpcode.IsBin(c):
		n, err := d.d.DecodeBytesLen()
		if err != nil {
			return unexpectedEOF(err)
		}
		if err := d.checkLen(n, 1, "str"); err != nil {
			return err
		}
		return d.discard(n)
	case msgpcode.IsExt(c):
		_, n, err := d.d.DecodeExtHeader()
		if err != nil {
			return unexpectedEOF(err)
		}
		if err := d.checkLen(n, 1, "ext"); err != nil {
			return err
		}
		return d.discard(n)
	case isArray(c), isMap(c):
		if err := d.enter(); err != nil {
			return err
		}
		var n int
		if isArray(c) {
			n, err = d.arrayLen()
		} else {
			n, err = d.mapLen()
			n *= 2
		}
		if err != nil {
			return err
		}
		for range n {
			if err := d.skip(); err != nil {
				return err
			}
		}
		d.depth--
		return nil
	case c == 0xc1:
		return fmt.Errorf("invalid msgpack code 0xc1")
	}
	// Scalars: fixed size, nothing to allocate.
	return unexpectedEOF(d.d.Skip())
}

// raw captures the bytes of the next value; msgpack nil reads as a nil Raw
// (which encodes back to nil). From a stream, where the bytes cannot be
// re-read, the value is decoded and re-encoded instead.
func (d *dec) raw() (Raw, error) {
	if isNil, err := d.takeNil(); isNil || err != nil {
		return nil, err
	}
	if d.r == nil {
		v, err := d.any()
		if err != nil {
			return nil, err
		}
		return Marshal(v)
	}
	start, err := d.r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if err := d.skip(); err != nil {
		return nil, err
	}
	end, err := d.r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	if _, err := d.r.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	b := make(Raw, end-start)
	_, err = io.ReadFull(d.r, b)
	return b, unexpectedEOF(err)
}

// any reads a free-form value: nil, bool, int (as int64, or uint64 above
// MaxInt64), float32/64 (as float64), str (string), bin ([]byte), array
// ([]any) or map with str keys (map[string]any). Ext is refused.
func (d *dec) any() (any, error) {
	c, err := d.peek()
	if err != nil {
		return nil, err
	}
	switch {
	case c == msgpcode.Nil:
		return nil, d.next()
	case c == msgpcode.True || c == msgpcode.False:
		return d.bool()
	case c == msgpcode.Uint64:
		u, err := d.d.DecodeUint64()
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case isInt(c):
		return d.int64()
	case c == msgpcode.Float || c == msgpcode.Double:
		return d.float64()
	case msgpcode.IsString(c):
		return d.str()
	case msgpcode.IsBin(c):
		return d.bin()
	case isArray(c):
		if err := d.enter(); err != nil {
			return nil, err
		}
		n, err := d.arrayLen()
		if err != nil {
			return nil, err
		}
		out := make([]any, 0, d.capHint(n))
		for i := range n {
			v, err := d.any()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out = append(out, v)
		}
		d.depth--
		return out, nil
	case isMap(c):
		if err := d.enter(); err != nil {
			return nil, err
		}
		n, err := d.mapLen()
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, min(n, streamCapHint))
		for range n {
			k, err := d.key()
			if err != nil {
				return nil, err
			}
			v, err := d.any()
			if err != nil {
				return nil, fmt.Errorf("[%q]: %w", k, err)
			}
			out[k] = v
		}
		d.depth--
		return out, nil
	}
	return nil, fmt.Errorf("unsupported %s in a free-form value", describe(c))
}

// key reads a map key, which must be a str.
func (d *dec) key() (string, error) {
	c, err := d.peek()
	if err != nil {
		return "", err
	}
	if !msgpcode.IsString(c) {
		return "", fmt.Errorf("want str map key, got %s", describe(c))
	}
	return d.str()
}
