package model

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var allTypes = []DType{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4}

// TestGolden compares with blocks made by gguf-py (see
// scripts/gen-quant-golden.py): Quantize must reproduce the bytes where
// gguf-py can quantize, and Dequantize its floats bit for bit.
func TestGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/quant_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Type        string
			Input       []float64
			Bytes       string
			Dequantized []float64
		}
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	byName := map[string]DType{}
	for _, typ := range allTypes {
		byName[typ.String()] = typ
	}
	seen := map[DType]bool{}
	for _, c := range golden.Cases {
		t.Run(c.Type, func(t *testing.T) {
			typ, ok := byName[c.Type]
			if !ok {
				t.Fatalf("unknown type %q", c.Type)
			}
			seen[typ] = true
			data, err := hex.DecodeString(c.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if c.Input != nil {
				got, err := Quantize(typ, f32s(c.Input))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(data, got); diff != "" {
					t.Errorf("Quantize (-gguf-py +ours):\n%s", diff)
				}
			}
			got := make([]float32, len(c.Dequantized))
			if err := Dequantize(typ, data, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(f32s(c.Dequantized), got); diff != "" {
				t.Errorf("Dequantize (-gguf-py +ours):\n%s", diff)
			}
		})
	}
	for _, typ := range allTypes[1:] {
		if !seen[typ] {
			t.Errorf("no golden case for %v", typ)
		}
	}
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// TestHandBlocks decodes blocks built by hand from the layouts in
// ggml-common.h.
func TestHandBlocks(t *testing.T) {
	le := binary.LittleEndian
	h := func(f float32) []byte { return le.AppendUint16(nil, F32ToF16(f)) }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	nib := make([]byte, 16) // byte j: element j low nibble, element j+16 high
	nib[0], nib[1], nib[15] = 0x1f, 0x80, 0x3c
	qh := []byte{0x01, 0x00, 0x01, 0x80} // fifth bits of elements 0, 16 and 31
	i8 := make([]byte, 32)
	i8[0], i8[5], i8[31] = 0x81, 0x7f, 0xfe // -127, 127, -2

	// Q4_K / Q5_K scales: sub-block 1 has scale 3, min 2; sub-block 5
	// (packed form) scale 0b100101 = 37, min 0b010110 = 22.
	ksc := make([]byte, 12)
	ksc[1], ksc[5] = 3, 2
	ksc[9] = 0b0110_0101            // low 4 bits of scale 5 and min 5
	ksc[1] |= 0b10 << 6             // high 2 bits of scale 5 sit in byte 1
	ksc[5] |= 0b01 << 6             // high 2 bits of min 5 sit in byte 5
	q4k := make([]byte, 128)        // 32 bytes per 64 elements
	q4k[0] = 0x4a                   // element 0 (sub 0) = 10, element 32 (sub 1) = 4
	q4k[64+7] = 0xd2                // element 128+7 (sub 4) = 2, element 160+7 (sub 5) = 13
	q5h := make([]byte, 32)         // bit 2k (2k+1) of qh[l]: fifth bit of element l of sub 2k (2k+1)
	q5h[0], q5h[7] = 0b10, 0b100000 // element 32 (sub 1), element 160+7 (sub 5)
	q6l, q6h, q6s := make([]byte, 128), make([]byte, 64), make([]byte, 16)
	q6l[3] = 0x5a                       // element 3 low 4 bits 0xa, element 67 low 4 bits 5
	q6h[3] = 0b11_00_00_10              // element 3 high bits 2, element 99 high bits 3
	q6s[0], q6s[4], q6s[6] = 2, 0xfd, 1 // element 3 → scale 2, 67 → -3, 99 → 1
	q6l[35] = 0x0f                      // element 35 (group 2, scale 1... stays 0)

	tests := []struct {
		name string
		typ  DType
		data []byte
		want map[int]float32 // index → value; others must be what the formula says for zero quants
		rest float32         // value of every other element
	}{
		{"F16", F16, cat(h(1.5), h(-0.25)), map[int]float32{0: 1.5, 1: -0.25}, 0},
		{"BF16", BF16, []byte{0xc0, 0x3f, 0x80, 0xbf}, map[int]float32{0: 1.5, 1: -1}, 0},
		{"Q4_0", Q4_0, cat(h(0.5), nib), map[int]float32{0: 3.5, 16: -3.5, 1: -4, 17: 0, 15: 2, 31: -2.5}, -4},
		{"Q4_1", Q4_1, cat(h(0.5), h(-1), nib), map[int]float32{0: 6.5, 16: -0.5, 1: -1, 17: 3, 15: 5, 31: 0.5}, -1},
		{"Q5_0", Q5_0, cat(h(0.5), qh, nib), map[int]float32{0: 7.5, 16: 0.5, 1: -8, 17: -4, 15: -2, 31: 1.5}, -8},
		{"Q5_1", Q5_1, cat(h(0.5), h(-1), qh, nib), map[int]float32{0: 14.5, 16: 7.5, 1: -1, 17: 3, 15: 5, 31: 8.5}, -1},
		{"Q8_0", Q8_0, cat(h(0.25), i8), map[int]float32{0: -31.75, 5: 31.75, 31: -0.5}, 0},
		{"Q4_K", Q4_K, cat(h(0.5), h(0.25), ksc, q4k), map[int]float32{
			// sub 0: scale 0, min 0 → 0; sub 1: 0.5·3·4 - 0.25·2 = 5.5
			32: 5.5, 33: -0.5, 63: -0.5,
			// sub 4: scale 0; sub 5: 0.5·37·13 - 0.25·22 = 235
			160 + 7: 235, 160: -5.5,
		}, 0},
		{"Q5_K", Q5_K, cat(h(0.5), h(0.25), ksc, q5h, q4k), map[int]float32{
			32: 0.5*3*(4+16) - 0.5, 33: -0.5, 63: -0.5,
			160 + 7: 0.5*37*(13+16) - 5.5, 160: -5.5,
		}, 0},
		{"Q6_K", Q6_K, cat(q6l, q6h, q6s, h(0.5)), map[int]float32{
			3:  0.5 * 2 * float32(0x2a-32),
			67: 0.5 * -3 * float32(0x05-32), 64: 0.5 * -3 * -32,
			99: 0.5 * 1 * float32(0x30-32), 96: 0.5 * 1 * -32,
			0: 0.5 * 2 * -32,
		}, 0},
		// Scales 2^(e−128) as ggml's GGML_E8M0_TO_FP32_HALF: float32
		// subnormals for e = 0, 1; 2^127 for e = 255, so ±4 and ±12 of it
		// overflow. Indices 0xf, 0xc, 1, 3 are −12, −4, 1, 3.
		{"MXFP4", MXFP4, cat([]byte{0}, nib, []byte{1}, nib, []byte{128}, nib, []byte{255}, nib), map[int]float32{
			0: -0x1.8p-125, 15: -0x1p-126, 16: 0x1p-128, 31: 0x1.8p-127,
			32: -0x1.8p-124, 47: -0x1p-125, 48: 0x1p-127, 63: 0x1.8p-126,
			64: -12, 79: -4, 80: 1, 95: 3,
			96: float32(math.Inf(-1)), 111: float32(math.Inf(-1)), 112: 0x1p127, 127: float32(math.Inf(1)),
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.data) / (tt.typ.RowBytes(tt.typ.BlockSize())) * tt.typ.BlockSize()
			got := make([]float32, n)
			if err := Dequantize(tt.typ, tt.data, got); err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.want {
				if got[i] != want {
					t.Errorf("element %d = %v, want %v", i, got[i], want)
				}
			}
			if tt.typ == Q4_K || tt.typ == Q5_K || tt.typ == Q6_K {
				return // the untouched elements vary by sub-block
			}
			for i, v := range got {
				if _, ok := tt.want[i]; !ok && v != tt.rest {
					t.Errorf("element %d = %v, want %v", i, v, tt.rest)
				}
			}
		})
	}
}

// TestRoundTrip bounds the quantization error of random normal data, per
// type, as a fraction of the data's RMS (ggml's reference quantizers reach
// about these levels; the bounds have ~1.5× headroom).
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		typ    DType
		maxRel float64 // max RMS error / RMS
	}{
		{F32, 0}, {F16, 4e-4}, {BF16, 3e-3}, {Q8_0, 0.01}, {Q6_K, 0.02},
		{Q5_K, 0.045}, {Q5_1, 0.055}, {Q5_0, 0.06}, {Q4_K, 0.09}, {Q4_1, 0.11}, {Q4_0, 0.12}, {MXFP4, 0.17},
		{IQ4_NL, 0.12}, {IQ4_XS, 0.12}, {Q3_K, 0.24}, {Q2_K, 0.45}, // simple quantizers (quantlow.go)
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	x[77] = 6 // an outlier
	for _, tt := range tests {
		t.Run(tt.typ.String(), func(t *testing.T) {
			q, err := Quantize(tt.typ, x)
			if err != nil {
				t.Fatal(err)
			}
			if len(q) != tt.typ.RowBytes(len(x)) {
				t.Fatalf("%d bytes, want %d", len(q), tt.typ.RowBytes(len(x)))
			}
			y := make([]float32, len(x))
			if err := Dequantize(tt.typ, q, y); err != nil {
				t.Fatal(err)
			}
			var se, ss float64
			for i := range x {
				se += (float64(y[i]) - float64(x[i])) * (float64(y[i]) - float64(x[i]))
				ss += float64(x[i]) * float64(x[i])
			}
			rel := math.Sqrt(se / ss)
			if rel > tt.maxRel {
				t.Errorf("RMS error %.4g of RMS, want ≤ %.4g", rel, tt.maxRel)
			}
			t.Logf("%v: RMS error %.4g", tt.typ, rel)
			// Zeros stay zero in every format.
			z, _ := Quantize(tt.typ, make([]float32, 256))
			zy := make([]float32, 256)
			if err := Dequantize(tt.typ, z, zy); err != nil {
				t.Fatal(err)
			}
			for i, v := range zy {
				if v != 0 {
					t.Fatalf("zeros dequantize to %v at %d", v, i)
				}
			}
		})
	}
}

// TestSignedZeroMin: Q4_1 and Q5_1 find a block's minimum as ggml does,
// by v < min, so that of +0 and -0 the first one seen is the offset m
// (Go's min would take -0 either way). Checked against ggml-quants.c.
func TestSignedZeroMin(t *testing.T) {
	pos, neg := float32(0), float32(math.Copysign(0, -1))
	tests := []struct {
		name        string
		first, rest float32 // element 0, elements 1..31
		wantM       uint16
	}{
		{"+0 then -0", pos, neg, 0x0000},
		{"-0 then +0", neg, pos, 0x8000},
	}
	for _, typ := range []DType{Q4_1, Q5_1} {
		for _, tt := range tests {
			x := make([]float32, 32)
			for i := range x {
				x[i] = tt.rest
			}
			x[0] = tt.first
			q, err := Quantize(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			if d, m := binary.LittleEndian.Uint16(q), binary.LittleEndian.Uint16(q[2:]); d != 0 || m != tt.wantM {
				t.Errorf("%v, %s: d %#04x, m %#04x, want 0, %#04x", typ, tt.name, d, m, tt.wantM)
			}
		}
	}
}

func TestHalf(t *testing.T) {
	// Every finite binary16 survives f16 → f32 → f16, and every bfloat16
	// survives the same trip.
	for h := range 1 << 16 {
		if exp := h >> 10 & 0x1f; exp == 0x1f && h&0x3ff != 0 {
			continue // NaN
		}
		if got := F32ToF16(F16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("f16 %#04x → %v → %#04x", h, F16ToF32(uint16(h)), got)
		}
		if got := F32ToBF16(BF16ToF32(uint16(h))); got != uint16(h) && !math.IsNaN(float64(BF16ToF32(uint16(h)))) {
			t.Fatalf("bf16 %#04x → %#04x", h, got)
		}
	}
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, // rounds up to Inf
		{1 + 0x1p-11, 0x3c00},                // tie → even
		{1 + 3*0x1p-11, 0x3c02},              // tie → even (up)
		{0x1p-24, 0x0001}, {0x1p-25, 0x0000}, // smallest subnormal; tie → 0
		{1.5 * 0x1p-25, 0x0001}, {0x1p-14, 0x0400},
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.in); got != tt.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := F32ToBF16(1 + 0x1p-8); got != 0x3f80 { // tie → even
		t.Errorf("F32ToBF16(1+2⁻⁸) = %#04x, want 0x3f80", got)
	}
}

func TestLayoutErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  DType
		n    int
		src  int // bytes
		want error
	}{
		{"ok", Q4_1, 64, 40, nil},
		{"short", Q4_1, 64, 39, ErrLayout},
		{"partial block", Q8_0, 48, 51, ErrLayout},
		{"k-quant needs 256", Q4_K, 128, 72, ErrLayout},
		{"unsupported", DType(9), 32, 40, ErrUnsupportedType}, // Q8_1
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Dequantize(tt.typ, make([]byte, tt.src), make([]float32, tt.n))
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("Dequantize = %v, want %v", err, tt.want)
			}
		})
	}
}
