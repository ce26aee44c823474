package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ErrPack reports a tensor that cannot be packed.
var ErrPack = errors.New("kernels: cannot pack tensor")

// GroupRows is the number of weight rows packed together: one 512-bit
// vector holds 4 bytes of each of 16 rows, so a kernel computes 16 outputs
// in the lanes of one register and never reduces horizontally.
const GroupRows = 16

// family is a packed layout, shared by the types that decode to it.
type family uint8

const (
	// famF32: F32, F16, BF16 as float32, f [groups][In][16]; F16 and
	// BF16 stay 16-bit (w16) where the level's kernels read that.
	famF32 family = iota
	// famNib: 4-bit unsigned q with per-32 scale D and offset M,
	// value = D·q + M: Q4_0 (M = -8D, not stored: see scales.noM),
	// Q4_1, Q4_K (per sub-block).
	famNib
	// famByte: 8-bit signed q with a scale D per sub-block of 16 or 32
	// and, for Q5_K and Q5_1, an offset M per 32: Q8_0, Q5_0 (q−16, so
	// no offset), Q6_K, Q5_K, Q5_1.
	famByte
	// famQ6: Q6_K as small as the file (0.82 bytes a weight, not 1.25),
	// where the level's kernels read it (VNNI and above): per block the
	// low 4 bits of q+32 in famNib's layout, then their high 2 bits (two
	// 64-byte vectors, see q6Unpack), and scales.k; value = D·q with D =
	// d·scale per 16 elements.
	famQ6
	// famLUT: IQ4_NL, IQ4_XS, MXFP4 and Q3_K as 4-bit indices into their
	// table (lutTables[Type]) in famNib's layout, one scale per 32 (Q3_K:
	// per 16) (lut.go); expanded to famByte per group for the kernels.
	famLUT
)

// Per 32-element block of a 16-row group, packed quants are chunks of 64
// bytes: 4 bytes of each row in row order.
const (
	nibBlockBytes  = 256 // 4 chunks; byte i of a row's 16: low nibble element i, high nibble element 16+i
	byteBlockBytes = 512 // 8 chunks; chunk c holds elements 4c..4c+3
	q6BlockBytes   = 384 // famNib's 256 (low 4 bits of q+32), then 2 × 64 bytes of high 2 bits
)

// Matrix is a weight matrix W [Out][In] repacked for the kernels. It owns
// its memory (the source tensor, possibly mmapped, is not read again).
type Matrix struct {
	In, Out int         // logical shape
	Type    model.DType // source type
	fam     family
	nb      int       // In/32 blocks per row (quantized families)
	nsub    int       // famByte: scale sub-blocks per 32-block, 1 or 2
	hasMin  bool      // famByte: M follows D (Q5_K, Q5_1)
	qs      []byte    // [groups][nb][nibBlockBytes or byteBlockBytes]
	sc      scales    // [groups][nb][scPerBlock]: D[nsub][16] then M[nsub][16] (no M for Q4_0)
	f       []float32 // famF32: [groups][In][16]
	w16     []uint16  // famF32 from F16 or BF16 files, kept 16-bit: [groups][In][16]
	bf16    bool      // w16 holds bfloat16 (else float16)
	// mins: Q2_K's offsets, one per 16 elements (finer than the byte
	// kernels' M per 32): [groups][In/16][16], added by addMins.
	mins []float32
	// kint: Q4_K's compact scales (scales.k's layout) where sc holds
	// float32 D and M instead (below the VNNI level), for the super form
	// (on CPUs where precise tokens take it: superCPU).
	kint []byte
}

// NumGroups is ceil(Out/GroupRows); the last group is zero-padded.
func (m *Matrix) NumGroups() int { return (m.Out + GroupRows - 1) / GroupRows }

// Quantized reports whether the matrix needs quantized activations.
func (m *Matrix) Quantized() bool { return m.fam != famF32 }

// Bytes is the packed size, for memory accounting.
func (m *Matrix) Bytes() int64 {
	return int64(len(m.qs)) + 4*int64(len(m.sc.f)+len(m.f)+len(m.mins)) + 2*int64(len(m.sc.h)+len(m.w16)) + int64(len(m.sc.k)+len(m.sc.e)+len(m.kint))
}

// scPerBlock is the number of scale floats per (group, block).
func (m *Matrix) scPerBlock() int {
	switch m.fam {
	case famNib:
		if m.sc.k != nil {
			return kBlockBytes
		}
		return m.sc.nibStride()
	case famByte:
		n := m.nsub * GroupRows
		if m.hasMin {
			n *= 2
		}
		return n
	case famQ6:
		return q6ScaleBytes
	case famLUT:
		return m.lutSub() * GroupRows
	}
	return 0
}

// blockBytes is the packed quant bytes of one block of a group.
func (m *Matrix) blockBytes() int {
	switch m.fam {
	case famByte:
		return byteBlockBytes
	case famQ6:
		return q6BlockBytes
	}
	return nibBlockBytes
}

// Pack repacks t (GGUF Shape [In, Out], any supported type) for the
// kernels.
func Pack(t *model.Tensor) (*Matrix, error) {
	if len(t.Shape) == 0 || t.Shape[0] <= 0 {
		return nil, fmt.Errorf("%w: %s has shape %v", ErrPack, t.Name, t.Shape)
	}
	in, out := t.Shape[0], t.Rows()
	m := &Matrix{In: in, Out: out, Type: t.Type}
	if !t.Type.Supported() {
		return nil, fmt.Errorf("%w: %s has type %v", ErrPack, t.Name, t.Type)
	}
	rb := t.Type.RowBytes(in)
	if in%t.Type.BlockSize() != 0 || len(t.Data) != rb*out {
		return nil, fmt.Errorf("%w: %s: %d bytes of %v for shape %v", ErrPack, t.Name, len(t.Data), t.Type, t.Shape)
	}
	groups := m.NumGroups()
	dec, quantized := decoders[t.Type]
	if !quantized && (t.Type == model.F16 || t.Type == model.BF16) && halfWeights() {
		// Kept 16-bit: half the memory and the memory traffic of float32.
		m.fam, m.bf16 = famF32, t.Type == model.BF16
		m.w16 = make([]uint16, groups*in*GroupRows)
		for r := range out {
			g, lane := r/GroupRows, r%GroupRows
			w := m.w16[g*in*GroupRows:]
			for i := range in {
				w[i*GroupRows+lane] = binary.LittleEndian.Uint16(t.Data[2*(r*in+i):])
			}
		}
		return m, nil
	}
	if !quantized {
		m.fam = famF32
		m.f = make([]float32, groups*in*GroupRows)
		row := make([]float32, in)
		for r := range out {
			if err := model.Dequantize(t.Type, t.Data[r*rb:(r+1)*rb], row); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrPack, t.Name, err)
			}
			g, lane := r/GroupRows, r%GroupRows
			f := m.f[g*in*GroupRows:]
			for i, v := range row {
				f[i*GroupRows+lane] = v
			}
		}
		return m, nil
	}
	if lutTables[t.Type] != nil && lutPacking() {
		m.packLUTFile(t)
		return m, nil
	}
	m.fam, m.nb, m.nsub, m.hasMin = dec.fam, in/32, dec.nsub, dec.hasMin && dec.fam == famByte
	bb := nibBlockBytes
	if m.fam == famByte {
		bb = byteBlockBytes
	}
	spb := m.scPerBlock()
	m.qs = make([]byte, groups*m.nb*bb)
	// K-quants that keep the file's scales (below) need no float32 ones:
	// at 1B shape those would be ~200 MB of garbage per load.
	compactK := (t.Type == model.Q4_K || t.Type == model.Q6_K) && compactQ4K()
	discard := make([]float32, spb)
	if !compactK {
		m.sc.f = make([]float32, groups*m.nb*spb)
	}
	q := make([]int8, in)
	d, mn := make([]float32, in/dec.sub), make([]float32, in/dec.sub)
	for r := range out {
		dec.decode(t.Data[r*rb:(r+1)*rb], q, d, mn)
		g, lane := r/GroupRows, r%GroupRows
		for j := range m.nb {
			blk := m.qs[(g*m.nb+j)*bb:][:bb]
			sc := discard
			if !compactK {
				sc = m.sc.f[(g*m.nb+j)*spb:][:spb]
			}
			x := q[32*j : 32*j+32]
			switch m.fam {
			case famNib:
				for i := range 16 {
					blk[(i/4)*64+lane*4+i%4] = byte(x[i]) | byte(x[i+16])<<4
				}
				sc[lane], sc[GroupRows+lane] = d[j], mn[j]
			case famByte:
				for e, v := range x {
					blk[(e/4)*64+lane*4+e%4] = byte(v)
				}
				for s := range m.nsub {
					sc[s*GroupRows+lane] = d[j*m.nsub+s]
					if m.hasMin {
						sc[(m.nsub+s)*GroupRows+lane] = mn[j*m.nsub+s]
					}
				}
			}
		}
	}
	if !compactK && (m.fam == famNib || m.nsub == 1 && !m.hasMin) {
		m.sc.compress() // Q6_K, Q5_K and Q5_1 keep float32: their kernels read that
	}
	if t.Type == model.Q4_0 && m.sc.h != nil {
		m.sc.dropM()
	}
	if t.Type == model.Q4_K {
		if compactQ4K() {
			m.sc = scales{k: packQ4KScales(t.Data, in, out)}
		} else if superCPU {
			m.kint = packQ4KScales(t.Data, in, out)
		}
	}
	if t.Type == model.Q2_K {
		m.mins = q2KMins(t.Data, in, out)
	}
	if t.Type == model.Q6_K && compactQ4K() {
		m.fam, m.nsub, m.qs = famQ6, 0, q6Compact(m.qs)
		m.sc = scales{k: packQ6KScales(t.Data, in, out)}
	}
	return m, nil
}

// q6ScaleBytes is a compact Q6_K block's scale bytes per group: 16 rows
// × 2 int8 scales, and a super-block's float16 d amortized (32/8).
const q6ScaleBytes = 36

// q6Compact repacks Q6_K blocks from the byte layout (int8 q in
// [-32, 31]) into famQ6's: u = q+32 in [0, 63]; byte (row r, k) of chunk
// c of the famNib part holds u's low 4 bits of elements 4c+k (low
// nibble) and 16+4c+k (high nibble); byte (r, k) of high vector h (at
// 256+64h) holds at bits 2c..2c+1 the high 2 bits of element 16h+4c+k.
func q6Compact(qs []byte) []byte {
	nblk := len(qs) / byteBlockBytes
	out := make([]byte, nblk*q6BlockBytes)
	for b := range nblk {
		src, dst := qs[b*byteBlockBytes:][:byteBlockBytes], out[b*q6BlockBytes:][:q6BlockBytes]
		for e := range 32 {
			h, c, k := e/16, e%16/4, e%4
			for r := range GroupRows {
				u := byte(int8(src[(e/4)*64+r*4+k]) + 32)
				dst[c*64+r*4+k] |= (u & 15) << (4 * h)
				dst[nibBlockBytes+h*64+r*4+k] |= (u >> 4) << (2 * c)
			}
		}
	}
	return out
}

// q6Unpack expands famQ6 block blk into the byte layout (int8 q).
func q6Unpack(dst *[byteBlockBytes]byte, blk []byte) {
	blk = blk[:q6BlockBytes]
	for h := range 2 {
		for c := range 4 {
			for i := range 64 {
				u := blk[c*64+i]>>(4*h)&15 | (blk[nibBlockBytes+h*64+i]>>(2*c)&3)<<4
				dst[(4*h+c)*64+i] = byte(int8(u) - 32)
			}
		}
	}
}

// packQ6KScales lays out Q6_K rows' scales compactly: per group [nb][2][16]
// int8 scales (half h of block j, row r at 32j+16h+r), then [nb/8][16]
// float16 d (row r at 2r).
func packQ6KScales(data []byte, in, out int) []byte {
	nb, rb := in/32, model.Q6_K.RowBytes(in)
	groups := (out + GroupRows - 1) / GroupRows
	k := make([]byte, groups*nb*q6ScaleBytes)
	for r := range out {
		g, lane := r/GroupRows, r%GroupRows
		gk := k[g*nb*q6ScaleBytes : (g+1)*nb*q6ScaleBytes]
		row := data[r*rb : (r+1)*rb]
		for b := range nb / 8 {
			blk := row[210*b : 210*b+210]
			copy(gk[nb*32+b*32+2*lane:][:2], blk[208:210])
			for s := range 16 {
				j, h := 8*b+s/2, s%2
				gk[j*32+16*h+lane] = blk[192+s]
			}
		}
	}
	return k
}

// Packing names the layout choices Pack makes at this kernel level (a
// pack cache written at another level is another file): "compact" where
// the K-quants keep the file's scale bytes, "half" where F16 and BF16
// stay 16-bit, else "float32"; ",kint" where Q4_K keeps its scale bytes
// beside float32 ones for the super form (superCPU); ",lut4" where the
// table types keep their 4-bit indices (famLUT).
func Packing() string {
	if lutPacking() {
		return packing() + ",lut4"
	}
	return packing()
}

func packing() string {
	switch {
	case compactQ4K():
		return "compact,half"
	case halfWeights() && superCPU:
		return "half,kint"
	case halfWeights():
		return "half"
	case superCPU:
		return "float32,kint"
	}
	return "float32"
}

// packLevel is the lowest level whose SIMD kernels read m's layout:
// avx512 for 16-bit float weights, avx512vnni for compact K-quants,
// else go. Pack picks layouts from the level it runs at, and the pack
// cache's key names them (Packing), so a matrix meets a lower level only
// when tests lower it; MulGroups then runs the pure-Go kernels, which
// read every layout.
func (m *Matrix) packLevel() simdLevel {
	switch {
	case m.w16 != nil:
		return levelAVX512
	case m.sc.k != nil || m.fam == famQ6:
		return levelVNNI
	}
	return levelGo
}

// halfWeights reports whether Pack keeps F16 and BF16 weights 16-bit
// (Matrix.w16): where the level's kernels convert them (AVX-512 and up).
func halfWeights() bool { return level >= levelAVX512 }

// weight is element i of row lane of float group g (famF32).
func (m *Matrix) weight(g, i, lane int) float32 {
	k := (g*m.In+i)*GroupRows + lane
	switch {
	case m.w16 == nil:
		return m.f[k]
	case m.bf16:
		return math.Float32frombits(uint32(m.w16[k]) << 16)
	}
	return model.F16ToF32(m.w16[k])
}

// compactQ4K reports whether Pack keeps Q4_K's scales compact (scales.k):
// where the level's kernels read them (VNNI and above). Below, the
// AVX-512 and AVX2 assembly reads float32 D and M.
func compactQ4K() bool { return level >= levelVNNI }

// packQ4KScales lays out Q4_K rows' scales compactly (see scales.k).
func packQ4KScales(data []byte, in, out int) []byte {
	nb, rb := in/32, model.Q4_K.RowBytes(in)
	groups := (out + GroupRows - 1) / GroupRows
	k := make([]byte, groups*nb*kBlockBytes)
	for r := range out {
		g, lane := r/GroupRows, r%GroupRows
		gk := k[g*nb*kBlockBytes : (g+1)*nb*kBlockBytes]
		row := data[r*rb : (r+1)*rb]
		for b := range nb / 8 {
			blk := row[144*b : 144*b+144]
			sb := gk[nb*32+b*64:]
			copy(sb[2*lane:2*lane+2], blk[0:2])       // d
			copy(sb[32+2*lane:32+2*lane+2], blk[2:4]) // dmin
			for h := range 8 {
				sc, mn := model.ScaleMinK4(h, blk[4:16])
				gk[(8*b+h)*32+lane], gk[(8*b+h)*32+16+lane] = sc, mn
			}
		}
	}
	return k
}

// dropM keeps only the D half of every 4-bit block's float16 scales
// (Q4_0, where M = -8·D exactly in float16 and float32 alike).
func (s *scales) dropM() {
	h := make([]uint16, len(s.h)/2)
	for b := range len(h) / GroupRows {
		copy(h[b*GroupRows:(b+1)*GroupRows], s.h[2*b*GroupRows:(2*b+1)*GroupRows])
	}
	s.h, s.noM = h, true
}

// Dequantize unpacks the matrix to float32 [Out][In], computing each
// element as float32(D·q) + M — the same roundings as ggml's
// dequantize_row_*, so it equals model.Dequantize of the source bit for
// bit (except Q8_0's -128, see decodeQ8_0). Tests use it.
func (m *Matrix) Dequantize() []float32 {
	out := make([]float32, m.Out*m.In)
	for r := range m.Out {
		g, lane := r/GroupRows, r%GroupRows
		y := out[r*m.In : (r+1)*m.In]
		if m.fam == famF32 {
			for i := range y {
				y[i] = m.weight(g, i, lane)
			}
			continue
		}
		spb := m.scPerBlock()
		gsc := m.sc.slice(g*m.nb*spb, (g+1)*m.nb*spb)
		for j := range m.nb {
			sc := m.sc.slice((g*m.nb+j)*spb, (g*m.nb+j+1)*spb)
			for e := range 32 {
				var q int8
				var d, mn float32
				switch m.fam {
				case famNib:
					v := m.qs[(g*m.nb+j)*nibBlockBytes+(e%16/4)*64+lane*4+e%4]
					q = int8(v >> (4 * (e / 16)) & 0xf)
					d, mn = gsc.nibDM(j, lane)
				case famLUT:
					v := m.qs[(g*m.nb+j)*nibBlockBytes+(e%16/4)*64+lane*4+e%4]
					s := e * m.lutSub() / 32 // Q3_K: the scale of e's 16
					q, d = lutTables[m.Type][v>>(4*(e/16))&0xf], sc.at(s*GroupRows+lane)
				case famQ6:
					blk := m.qs[(g*m.nb+j)*q6BlockBytes:]
					h, c, k := e/16, e%16/4, e%4
					u := blk[c*64+lane*4+k]>>(4*h)&15 | (blk[nibBlockBytes+h*64+lane*4+k]>>(2*c)&3)<<4
					q, d = int8(u)-32, gsc.q6D(j, h, lane)
				case famByte:
					q = int8(m.qs[(g*m.nb+j)*byteBlockBytes+(e/4)*64+lane*4+e%4])
					s := e * m.nsub / 32
					d = sc.at(s*GroupRows + lane)
					if m.hasMin {
						mn = sc.at((m.nsub+s)*GroupRows + lane)
					}
					if m.mins != nil {
						mn = m.mins[(g*m.In/minsPer+(32*j+e)/minsPer)*GroupRows+lane]
					}
				}
				y[32*j+e] = float32(d*float32(q)) + mn
			}
		}
	}
	return out
}
