package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ErrEncoded reports bytes that are not an encoded Matrix of this build's
// layout (a cache written by another version, a truncated file).
var ErrEncoded = errors.New("kernels: not an encoded matrix")

// Layout names the packed layout; an encoded matrix carries it, and a
// change to Pack's layout or the encoding must change it so old caches are
// refused rather than misread.
const Layout = "tandem-pack-v5"

// An encoded Matrix is a 64-byte header, then its sections, each starting
// at a multiple of EncodeAlign from the header (so views into a
// page-aligned mapping are aligned for every element type):
//
//	header: magic "TPKM" (4), layout id (4: FNV-1a of Layout), In, Out
//	        (u32), Type (u32), fam, nsub, hasMin, scale kind (u8: 0 none,
//	        1 f16, 2 f32, 3 bytes: compact Q4_K, 4 E8M0 bytes: compact
//	        MXFP4), nb (u32), noM (u8: Q4_0's offsets implicit),
//	        float weights (u8: 0 float32, 1 float16, 2 bfloat16),
//	        2 zero bytes, then the section
//	        lengths in elements: scales (u64 at 32), qs (u64 at 40, bytes),
//	        f (u64 at 48, float32), kint (u64 at 56, bytes)
//	qs      [len] byte
//	scales  [len] uint16, float32 or byte
//	f       [len] float32, or uint16 (16-bit float weights); for a
//	        quantized matrix Q2_K's offsets (mins), float32
//	kint    [len] byte (Q4_K with float32 scales: the compact ones too)
//
// in the machine's byte order (the cache is per machine).
const (
	EncodeAlign = 64
	headerBytes = 64
)

const encodeMagic = "TPKM"

func layoutID() uint32 {
	var h uint32 = 2166136261 // FNV-1a of Layout
	for i := range len(Layout) {
		h ^= uint32(Layout[i])
		h *= 16777619
	}
	return h
}

func alignUp(n int64) int64 { return (n + EncodeAlign - 1) &^ (EncodeAlign - 1) }

// EncodedBound is an upper bound on EncodedSize of Pack(t), from t's type
// and shape alone (scales may compress to float16 once packed, which only
// shrinks the matrix), so a file can be laid out before packing.
func EncodedBound(t *model.Tensor) (int64, error) {
	if len(t.Shape) == 0 || t.Shape[0] <= 0 || !t.Type.Supported() {
		return 0, fmt.Errorf("%w: %s has shape %v, type %v", ErrPack, t.Name, t.Shape, t.Type)
	}
	in, out := int64(t.Shape[0]), int64(t.Rows())
	groups := (out + GroupRows - 1) / GroupRows
	dec, quantized := decoders[t.Type]
	if !quantized {
		return headerBytes + alignUp(4*groups*in*GroupRows), nil
	}
	m := Matrix{fam: dec.fam, nsub: dec.nsub, hasMin: dec.hasMin && dec.fam == famByte}
	nb := in / 32
	bb := int64(nibBlockBytes)
	if m.fam == famByte {
		bb = byteBlockBytes
	}
	n := headerBytes + alignUp(groups*nb*bb) + alignUp(4*groups*nb*int64(m.scPerBlock()))
	if t.Type == model.Q4_K {
		n += alignUp(groups * nb * kBlockBytes)
	}
	if t.Type == model.Q2_K {
		n += alignUp(4 * groups * in / minsPer * GroupRows)
	}
	return n, nil // famLUT, when Pack chooses it, is smaller than the byte layout counted here
}

// EncodedSize is the number of bytes Encode writes.
func (m *Matrix) EncodedSize() int64 {
	return headerBytes + alignUp(int64(len(m.qs))) + alignUp(2*int64(len(m.sc.h))+4*int64(len(m.sc.f))+int64(len(m.sc.k)+len(m.sc.e))) + alignUp(4*int64(len(m.f)+len(m.mins))+2*int64(len(m.w16))) + alignUp(int64(len(m.kint)))
}

// Encode writes m in the encoded layout; DecodeMatrix reads it back
// without copying.
func (m *Matrix) Encode(w io.Writer) error {
	var h [headerBytes]byte
	copy(h[:4], encodeMagic)
	ne := binary.NativeEndian
	ne.PutUint32(h[4:], layoutID())
	ne.PutUint32(h[8:], uint32(m.In))
	ne.PutUint32(h[12:], uint32(m.Out))
	ne.PutUint32(h[16:], uint32(m.Type))
	h[20], h[21] = byte(m.fam), byte(m.nsub)
	if m.hasMin {
		h[22] = 1
	}
	var sc []byte
	switch {
	case m.sc.h != nil:
		h[23], sc = 1, bytesOf(m.sc.h)
		ne.PutUint64(h[32:], uint64(len(m.sc.h)))
	case m.sc.f != nil:
		h[23], sc = 2, bytesOf(m.sc.f)
		ne.PutUint64(h[32:], uint64(len(m.sc.f)))
	case m.sc.k != nil:
		h[23], sc = 3, m.sc.k
		ne.PutUint64(h[32:], uint64(len(m.sc.k)))
	case m.sc.e != nil:
		h[23], sc = 4, m.sc.e
		ne.PutUint64(h[32:], uint64(len(m.sc.e)))
	}
	ne.PutUint32(h[24:], uint32(m.nb))
	if m.sc.noM {
		h[28] = 1
	}
	ne.PutUint64(h[40:], uint64(len(m.qs)))
	ne.PutUint64(h[48:], uint64(len(m.f)+len(m.w16)+len(m.mins)))
	ne.PutUint64(h[56:], uint64(len(m.kint)))
	switch {
	case m.w16 != nil && m.bf16:
		h[29] = 2
	case m.w16 != nil:
		h[29] = 1
	}
	var pad [EncodeAlign]byte
	put := func(b []byte) error {
		if _, err := w.Write(b); err != nil {
			return err
		}
		_, err := w.Write(pad[:alignUp(int64(len(b)))-int64(len(b))])
		return err
	}
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("kernels: encode: %w", err)
	}
	f := bytesOf(m.f)
	switch {
	case m.w16 != nil:
		f = bytesOf(m.w16)
	case m.mins != nil:
		f = bytesOf(m.mins)
	}
	for _, b := range [][]byte{m.qs, sc, f, m.kint} {
		if err := put(b); err != nil {
			return fmt.Errorf("kernels: encode: %w", err)
		}
	}
	return nil
}

// DecodeMatrix returns the matrix encoded at the start of b and its
// encoded size. The matrix's data are views into b, not copies: b must
// stay mapped and unmodified while the matrix is used, and its start must
// be aligned to EncodeAlign.
func DecodeMatrix(b []byte) (*Matrix, int64, error) {
	if len(b) < headerBytes || string(b[:4]) != encodeMagic {
		return nil, 0, fmt.Errorf("%w: bad magic", ErrEncoded)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%EncodeAlign != 0 {
		return nil, 0, fmt.Errorf("%w: unaligned buffer", ErrEncoded)
	}
	ne := binary.NativeEndian
	if ne.Uint32(b[4:]) != layoutID() {
		return nil, 0, fmt.Errorf("%w: layout is not %s", ErrEncoded, Layout)
	}
	m := &Matrix{
		In: int(ne.Uint32(b[8:])), Out: int(ne.Uint32(b[12:])), Type: model.DType(ne.Uint32(b[16:])),
		fam: family(b[20]), nsub: int(b[21]), hasMin: b[22] == 1, nb: int(ne.Uint32(b[24:])),
	}
	nqs, nsc, nf, nk := ne.Uint64(b[40:]), ne.Uint64(b[32:]), ne.Uint64(b[48:]), ne.Uint64(b[56:])
	scKind := b[23]
	m.sc.noM = b[28] == 1
	scSize := map[byte]uint64{0: 0, 1: 2, 2: 4, 3: 1, 4: 1}[scKind]
	kOK := m.fam == famNib && m.Type == model.Q4_K || m.fam == famQ6 && m.Type == model.Q6_K
	if b[29] > 2 || b[29] != 0 && m.fam != famF32 || scKind > 4 || scKind == 3 && (!kOK || m.In%256 != 0) || scKind == 4 && (m.fam != famLUT || m.Type != model.MXFP4) || (m.fam == famQ6) != (scKind == 3 && m.Type == model.Q6_K) || m.fam > famLUT || m.fam == famLUT && (lutTables[m.Type] == nil || scKind == 0 || scKind == 3) || b[28] > 1 || m.sc.noM && (m.fam != famNib || scKind != 1) || nqs > uint64(len(b)) || nsc > uint64(len(b)) || nf > uint64(len(b)) || nk > uint64(len(b)) {
		return nil, 0, fmt.Errorf("%w: bad header", ErrEncoded)
	}
	off := int64(headerBytes)
	take := func(n int64) ([]byte, bool) {
		if off+alignUp(n) > int64(len(b)) {
			return nil, false
		}
		s := b[off : off+n : off+n]
		off += alignUp(n)
		return s, true
	}
	qs, ok1 := take(int64(nqs))
	sc, ok2 := take(int64(nsc * scSize))
	wKind := b[29] // float weights: 0 float32, 1 float16, 2 bfloat16
	fSize := int64(4)
	if wKind != 0 {
		fSize = 2
	}
	f, ok3 := take(fSize * int64(nf))
	kint, ok4 := take(int64(nk))
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return nil, 0, fmt.Errorf("%w: truncated", ErrEncoded)
	}
	if nqs > 0 {
		m.qs = qs
	}
	if nk > 0 {
		m.kint = kint
	}
	switch scKind {
	case 1:
		m.sc.h = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(sc))), nsc)
	case 2:
		m.sc.f = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(sc))), nsc)
	case 3:
		m.sc.k = sc
	case 4:
		m.sc.e = sc
	}
	switch {
	case nf > 0 && wKind != 0:
		m.w16, m.bf16 = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), nf), wKind == 2
	case nf > 0 && m.fam != famF32:
		m.mins = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(f))), nf)
	case nf > 0:
		m.f = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(f))), nf)
	}
	if err := m.check(); err != nil {
		return nil, 0, err
	}
	return m, off, nil
}

// check verifies that a decoded matrix's sections have the sizes its
// shape and family need, so a kernel never reads past them.
func (m *Matrix) check() error {
	if m.In <= 0 || m.Out <= 0 {
		return fmt.Errorf("%w: shape %d×%d", ErrEncoded, m.Out, m.In)
	}
	groups := m.NumGroups()
	switch m.fam {
	case famF32:
		if len(m.f)+len(m.w16) != groups*m.In*GroupRows || m.qs != nil {
			return fmt.Errorf("%w: float section of %d, want %d", ErrEncoded, len(m.f)+len(m.w16), groups*m.In*GroupRows)
		}
		return nil
	case famNib, famByte, famQ6, famLUT:
	default:
		return fmt.Errorf("%w: family %d", ErrEncoded, m.fam)
	}
	bb := m.blockBytes()
	if m.fam == famByte && m.nsub != 1 && m.nsub != 2 {
		return fmt.Errorf("%w: %d sub-blocks", ErrEncoded, m.nsub)
	}
	nsc := len(m.sc.f) + len(m.sc.h) + len(m.sc.k) + len(m.sc.e)
	if m.In%32 != 0 || m.nb != m.In/32 || len(m.qs) != groups*m.nb*bb || nsc != groups*m.nb*m.scPerBlock() || m.f != nil || m.w16 != nil {
		return fmt.Errorf("%w: sections do not match %d×%d", ErrEncoded, m.Out, m.In)
	}
	wantMins := 0
	if m.Type == model.Q2_K {
		wantMins = groups * m.In / minsPer * GroupRows
	}
	if len(m.mins) != wantMins || m.mins != nil && (m.fam != famByte || m.nsub != 1 || m.hasMin) {
		return fmt.Errorf("%w: %d offsets per 16 for %v, want %d", ErrEncoded, len(m.mins), m.Type, wantMins)
	}
	wantK := 0
	if m.superForm() && m.sc.k == nil {
		wantK = groups * m.nb * kBlockBytes
	}
	if len(m.kint) != wantK {
		return fmt.Errorf("%w: %d bytes of compact scales, want %d", ErrEncoded, len(m.kint), wantK)
	}
	return nil
}

// bytesOf views a slice of fixed-size numbers as its bytes.
func bytesOf[T uint16 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}
