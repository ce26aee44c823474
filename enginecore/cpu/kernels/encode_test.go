package kernels

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// aligned copies b into a buffer starting at a multiple of EncodeAlign,
// as a page-aligned mapping would.
func aligned(b []byte) []byte {
	buf := make([]byte, len(b)+EncodeAlign)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & (EncodeAlign - 1))
	out := buf[off : off+len(b)]
	copy(out, b)
	return out
}

// TestEncodeRoundTrip packs every type at odd shapes, encodes it and
// decodes it again: the decoded matrix has the same sections, bit for
// bit, multiplies to the same bits, and fits the bound computed from the
// tensor alone.
func TestEncodeRoundTrip(t *testing.T) {
	for _, typ := range allTypes {
		for _, out := range []int{1, 16, 37} {
			in := 2 * max(minIn(typ), 32)
			w := randTensor(t, typ, out, in, uint64(out)+3)
			m, err := Pack(w)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := m.Encode(&buf); err != nil {
				t.Fatal(err)
			}
			if int64(buf.Len()) != m.EncodedSize() {
				t.Fatalf("%v out=%d: wrote %d bytes, EncodedSize %d", typ, out, buf.Len(), m.EncodedSize())
			}
			bound, err := EncodedBound(w)
			if err != nil || bound < m.EncodedSize() {
				t.Fatalf("%v out=%d: bound %d (%v) below size %d", typ, out, bound, err, m.EncodedSize())
			}
			enc := aligned(append(buf.Bytes(), 0xAA, 0xBB)) // trailing bytes are not the matrix's
			d, n, err := DecodeMatrix(enc)
			if err != nil {
				t.Fatalf("%v out=%d: %v", typ, out, err)
			}
			if n != m.EncodedSize() {
				t.Errorf("%v out=%d: decoded %d bytes, want %d", typ, out, n, m.EncodedSize())
			}
			if d.In != m.In || d.Out != m.Out || d.Type != m.Type || d.fam != m.fam || d.nb != m.nb || d.nsub != m.nsub || d.hasMin != m.hasMin ||
				!slices.Equal(d.qs, m.qs) || !slices.Equal(d.sc.f, m.sc.f) || !slices.Equal(d.sc.h, m.sc.h) || !slices.Equal(d.f, m.f) || !slices.Equal(d.mins, m.mins) {
				t.Fatalf("%v out=%d: decoded matrix differs from the packed one", typ, out)
			}
			if diff := cmp.Diff(m.Dequantize(), d.Dequantize()); diff != "" {
				t.Fatalf("%v out=%d: dequantizes differently:\n%s", typ, out, diff)
			}
			x := randX(3*in, 5)
			var a Activations
			a.Reset(x, 3, in)
			if m.Quantized() {
				a.Quantize(0, 3)
			}
			got, want := make([]float32, 3*out), make([]float32, 3*out)
			m.MulGroups(want, &a, 0, m.NumGroups())
			d.MulGroups(got, &a, 0, d.NumGroups())
			if !slices.Equal(got, want) {
				t.Fatalf("%v out=%d: decoded matrix multiplies differently", typ, out)
			}
		}
	}
}

// TestDecodeRefuses checks that damaged encodings are refused with
// ErrEncoded, never decoded into a matrix a kernel could overrun.
func TestDecodeRefuses(t *testing.T) {
	w := randTensor(t, allTypes[3], 20, 64, 1)
	m, err := Pack(w)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for name, edit := range map[string]func([]byte) []byte{
		"empty":     func(b []byte) []byte { return nil },
		"magic":     func(b []byte) []byte { b[0] = 'X'; return b },
		"layout":    func(b []byte) []byte { b[4]++; return b },
		"truncated": func(b []byte) []byte { return b[:len(b)-EncodeAlign] },
		"out":       func(b []byte) []byte { b[12] += GroupRows; return b },
		"scale len": func(b []byte) []byte { b[32]--; return b },
		"family":    func(b []byte) []byte { b[20] = 9; return b },
		"scale kind": func(b []byte) []byte {
			b[23] = 7
			return b
		},
	} {
		b := edit(slices.Clone(good))
		if _, _, err := DecodeMatrix(aligned(b)); !errors.Is(err, ErrEncoded) {
			t.Errorf("%s: err %v, want ErrEncoded", name, err)
		}
	}
	if _, _, err := DecodeMatrix(aligned(append([]byte{0}, good...))[1:]); !errors.Is(err, ErrEncoded) {
		t.Errorf("unaligned: err %v, want ErrEncoded", err)
	}
}

// FuzzDecodeMatrix: any bytes either fail with ErrEncoded or decode to a
// matrix whose sections fit its shape (Dequantize reads all of them).
func FuzzDecodeMatrix(f *testing.F) {
	for i, typ := range allTypes {
		m, err := Pack(randTensor(f, typ, 17, 2*max(minIn(typ), 32), uint64(i)))
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := m.Encode(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, n, err := DecodeMatrix(aligned(b))
		if err != nil {
			if !errors.Is(err, ErrEncoded) {
				t.Fatalf("error %v is not ErrEncoded", err)
			}
			return
		}
		if n > int64(len(b)) || m.Out*m.In > 1<<24 {
			return
		}
		_ = m.Dequantize()
	})
}
