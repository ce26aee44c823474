package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// allKinds is one metadata pair of every value type, arrays of every
// element type, an empty array and arrays of arrays.
var allKinds = []struct {
	key string
	v   any
}{
	{"u8", uint8(200)},
	{"i8", int8(-100)},
	{"u16", uint16(60000)},
	{"i16", int16(-30000)},
	{"u32", uint32(4000000000)},
	{"i32", int32(-2000000000)},
	{"f32", float32(1.5e-5)},
	{"bool.true", true},
	{"bool.false", false},
	{"str", "héllo\x00world"},
	{"str.empty", ""},
	{"u64", uint64(math.MaxUint64)},
	{"i64", int64(math.MinInt64)},
	{"f64", math.Pi},
	{"a.u8", []uint8{0, 1, 255}},
	{"a.i8", []int8{-128, 0, 127}},
	{"a.u16", []uint16{0, 65535}},
	{"a.i16", []int16{-32768, 32767}},
	{"a.u32", []uint32{0, 1, math.MaxUint32}},
	{"a.i32", []int32{-1, 0, 1, math.MaxInt32}},
	{"a.f32", []float32{-1.25, 0, 3e38}},
	{"a.bool", []bool{true, false, true}},
	{"a.str", []string{"a", "", "ĉ"}},
	{"a.u64", []uint64{math.MaxUint64}},
	{"a.i64", []int64{math.MinInt64, 7}},
	{"a.f64", []float64{math.Inf(1), -0.5}},
	{"a.empty", []int32{}},
	{"a.nested", []any{[]int32{1, 2}, []string{"x"}, []any{[]uint8{9}}, []float32{}}},
	{"a.nested.empty", []any{}},
}

// f32Bytes is v as little-endian float32 bytes.
func f32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

type tensor struct {
	name  string
	typ   uint32
	shape []uint64
	data  []byte
}

var tinyTensors = []tensor{
	{"norm.weight", 0, []uint64{3}, f32Bytes(1, 2, 3)},
	{"mat.weight", 0, []uint64{2, 3}, f32Bytes(1, 2, 3, 4, 5, 6)},
	{"half.weight", 1, []uint64{5}, []byte{0, 0x3c, 0, 0x40, 0, 0x42, 0, 0x44, 0, 0x45}},
	{"q8.weight", 8, []uint64{32, 1}, bytes.Repeat([]byte{7}, 34)},
	{"empty", 0, []uint64{0}, nil},
}

// build writes the given metadata and tensors to memory.
func build(t testing.TB, kvs []struct {
	key string
	v   any
}, tensors []tensor) []byte {
	t.Helper()
	w := gguf.NewWriter()
	for _, kv := range kvs {
		if err := w.AddKV(kv.key, kv.v); err != nil {
			t.Fatal(err)
		}
	}
	for _, ts := range tensors {
		if err := w.AddTensor(ts.name, ts.typ, ts.shape, ts.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.gguf")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoundTrip(t *testing.T) {
	data := build(t, allKinds, tinyTensors)
	f, err := gguf.Open(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var wantKeys []string
	for _, kv := range allKinds {
		wantKeys = append(wantKeys, kv.key)
		got, ok := f.KV(kv.key)
		if !ok {
			t.Errorf("KV(%q) missing", kv.key)
			continue
		}
		if diff := cmp.Diff(kv.v, got); diff != "" {
			t.Errorf("KV(%q) (-want +got):\n%s", kv.key, diff)
		}
	}
	if diff := cmp.Diff(wantKeys, f.Keys()); diff != "" {
		t.Errorf("Keys (-want +got):\n%s", diff)
	}
	if f.Version != 3 || f.NumTensors != uint64(len(tinyTensors)) {
		t.Errorf("Version %d NumTensors %d", f.Version, f.NumTensors)
	}

	infos := f.Tensors()
	if len(infos) != len(tinyTensors) {
		t.Fatalf("%d tensors, want %d", len(infos), len(tinyTensors))
	}
	for i, want := range tinyTensors {
		ti := infos[i]
		if ti.Name != want.name || ti.Type != want.typ || !cmp.Equal(ti.Shape, want.shape) {
			t.Errorf("tensor %d = %+v, want %s %d %v", i, ti, want.name, want.typ, want.shape)
		}
		if ti.Offset%f.Alignment() != 0 || (f.DataOffset())%f.Alignment() != 0 {
			t.Errorf("tensor %q offset %d / data offset %d not aligned", ti.Name, ti.Offset, f.DataOffset())
		}
		got, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.data) {
			t.Errorf("tensor %q data = %v, want %v", ti.Name, got, want.data)
		}
		if byName, ok := f.Tensor(want.name); !ok || !cmp.Equal(byName, ti) {
			t.Errorf("Tensor(%q) = %+v, %v", want.name, byName, ok)
		}
	}
	if _, ok := f.Tensor("nope"); ok {
		t.Error("Tensor(nope) found")
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData(infos[0]); !errors.Is(err, gguf.ErrClosed) {
		t.Errorf("TensorData after Close: %v, want ErrClosed", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestParseMetadata(t *testing.T) {
	data := build(t, allKinds, tinyTensors)
	md, err := gguf.ParseMetadata(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := md.String("str"); got != "héllo\x00world" {
		t.Errorf("str = %q", got)
	}
	if md.NumTensors != uint64(len(tinyTensors)) || len(md.Keys()) != len(allKinds) {
		t.Errorf("NumTensors %d, %d keys", md.NumTensors, len(md.Keys()))
	}
	// Only the metadata is needed: a file cut right after it still parses.
	kvOnly := build(t, allKinds, nil)
	cut := data[:len(kvOnly)-(len(kvOnly)%32)]
	if _, err := gguf.ParseMetadata(bytes.NewReader(cut), int64(len(cut))); err != nil {
		t.Errorf("ParseMetadata of a file cut after the metadata: %v", err)
	}
}

func TestTypedGetters(t *testing.T) {
	md := parseKVs(t, []struct {
		key string
		v   any
	}{
		{"u8", uint8(7)}, {"i16", int16(-3)}, {"u64.big", uint64(math.MaxUint64)},
		{"f32", float32(0.5)}, {"s", "x"}, {"b", true},
		{"a.u32", []uint32{1, 2}}, {"a.u32.big", []uint32{math.MaxUint32}},
		{"a.i32", []int32{-1}}, {"a.f64", []float64{0.25}}, {"a.s", []string{"p"}},
		{"a.nested", []any{[]int8{1}}},
	})
	type result struct {
		V  any
		OK bool
	}
	r := func(v any, ok bool) result { return result{v, ok} }
	tests := []struct {
		name string
		got  result
		want result
	}{
		{"Uint u8", r(md.Uint("u8")), r(uint64(7), true)},
		{"Uint negative", r(md.Uint("i16")), r(uint64(0), false)},
		{"Uint string", r(md.Uint("s")), r(uint64(0), false)},
		{"Uint missing", r(md.Uint("zz")), r(uint64(0), false)},
		{"Int i16", r(md.Int("i16")), r(int64(-3), true)},
		{"Int u8", r(md.Int("u8")), r(int64(7), true)},
		{"Int too big", r(md.Int("u64.big")), r(int64(-1), false)},
		{"Float f32", r(md.Float("f32")), r(0.5, true)},
		{"Float int", r(md.Float("i16")), r(-3.0, true)},
		{"Float string", r(md.Float("s")), r(0.0, false)},
		{"String", r(md.String("s")), r("x", true)},
		{"String not", r(md.String("u8")), r("", false)},
		{"Bool", r(md.Bool("b")), r(true, true)},
		{"Strings", r(md.Strings("a.s")), r([]string{"p"}, true)},
		{"Strings not", r(md.Strings("a.i32")), r([]string(nil), false)},
		{"Int32s exact", r(md.Int32s("a.i32")), r([]int32{-1}, true)},
		{"Int32s from u32", r(md.Int32s("a.u32")), r([]int32{1, 2}, true)},
		{"Int32s out of range", r(md.Int32s("a.u32.big")), r([]int32(nil), false)},
		{"Float32s from f64", r(md.Float32s("a.f64")), r([]float32{0.25}, true)},
		{"Float32s not", r(md.Float32s("a.s")), r([]float32(nil), false)},
		{"Array typed", r(md.Array("a.u32")), r([]uint32{1, 2}, true)},
		{"Array nested", r(md.Array("a.nested")), r([]any{[]int8{1}}, true)},
		{"Array scalar", r(md.Array("u8")), r(nil, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A failed lookup's value is unspecified beyond its zero-ness.
			if !tt.want.OK {
				if tt.got.OK {
					t.Errorf("got ok with %v", tt.got.V)
				}
				return
			}
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func parseKVs(t *testing.T, kvs []struct {
	key string
	v   any
}) *gguf.Metadata {
	t.Helper()
	data := build(t, kvs, nil)
	md, err := gguf.ParseMetadata(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func TestWriterRefuses(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *gguf.Writer) error
	}{
		{"plain int", func(w *gguf.Writer) error { return w.AddKV("k", 3) }},
		{"nil", func(w *gguf.Writer) error { return w.AddKV("k", nil) }},
		{"map", func(w *gguf.Writer) error { return w.AddKV("k", map[string]int{}) }},
		{"nested scalar", func(w *gguf.Writer) error { return w.AddKV("k", []any{uint8(1)}) }},
		{"too deep", func(w *gguf.Writer) error {
			var v any = []uint8{}
			for range 8 {
				v = []any{v}
			}
			return w.AddKV("k", v)
		}},
		{"duplicate key", func(w *gguf.Writer) error {
			_ = w.AddKV("k", true)
			return w.AddKV("k", false)
		}},
		{"alignment not power of two", func(w *gguf.Writer) error { return w.AddKV(gguf.KeyAlignment, uint32(48)) }},
		{"alignment wrong type", func(w *gguf.Writer) error { return w.AddKV(gguf.KeyAlignment, uint64(64)) }},
		{"alignment after tensor", func(w *gguf.Writer) error {
			_ = w.AddTensor("t", 0, []uint64{1}, f32Bytes(1))
			return w.AddKV(gguf.KeyAlignment, uint32(64))
		}},
		{"short data", func(w *gguf.Writer) error { return w.AddTensor("t", 0, []uint64{2}, f32Bytes(1)) }},
		{"unknown type", func(w *gguf.Writer) error { return w.AddTensor("t", 4, []uint64{1}, nil) }},
		{"partial block", func(w *gguf.Writer) error { return w.AddTensor("t", 8, []uint64{16}, make([]byte, 17)) }},
		{"five dims", func(w *gguf.Writer) error { return w.AddTensor("t", 0, []uint64{1, 1, 1, 1, 1}, f32Bytes(1)) }},
		{"duplicate tensor", func(w *gguf.Writer) error {
			_ = w.AddTensor("t", 0, []uint64{1}, f32Bytes(1))
			return w.AddTensor("t", 0, []uint64{1}, f32Bytes(1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(gguf.NewWriter()); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestCustomAlignment(t *testing.T) {
	kvs := []struct {
		key string
		v   any
	}{{gguf.KeyAlignment, uint32(64)}, {"x", "y"}}
	data := build(t, kvs, tinyTensors)
	f, err := gguf.ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment() != 64 || f.DataOffset()%64 != 0 || len(data)%64 != 0 {
		t.Errorf("alignment %d, data offset %d, size %d", f.Alignment(), f.DataOffset(), len(data))
	}
	for _, ti := range f.Tensors() {
		if ti.Offset%64 != 0 {
			t.Errorf("tensor %q at %d", ti.Name, ti.Offset)
		}
	}
}
