package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// raw builds GGUF bytes by hand, valid or not.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { _ = binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { _ = binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) pad(n int) *raw    { r.Write(make([]byte, n)); return r }

// head starts a v3 file with the given counts.
func head(numTensors, numKVs uint64) *raw {
	r := &raw{}
	return r.u32(gguf.Magic).u32(3).u64(numTensors).u64(numKVs)
}

// tensorInfo appends one tensor info.
func (r *raw) tensorInfo(name string, typ uint32, off uint64, shape ...uint64) *raw {
	r.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		r.u64(d)
	}
	return r.u32(typ).u64(off)
}

// toData pads to the 32-byte alignment.
func (r *raw) toData() *raw { return r.pad((32 - r.Len()%32) % 32) }

func nested(depth int) *raw {
	r := head(0, 1).str("k").u32(uint32(gguf.TypeArray))
	for range depth - 1 {
		r.u32(uint32(gguf.TypeArray)).u64(1)
	}
	return r.u32(uint32(gguf.TypeUint8)).u64(0)
}

func TestHostile(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"empty", nil, "truncated"},
		{"bad magic", (&raw{}).u32(0x46554746).u32(3).u64(0).u64(0).Bytes(), "bad magic"},
		{"version 1", (&raw{}).u32(gguf.Magic).u32(1).u64(0).u64(0).Bytes(), "version 1"},
		{"version 4", (&raw{}).u32(gguf.Magic).u32(4).u64(0).u64(0).Bytes(), "version 4"},
		{"big endian", (&raw{}).u32(gguf.Magic).u32(0x03000000).u64(0).u64(0).Bytes(), "big-endian"},
		{"huge tensor count", head(math.MaxUint64, 0).Bytes(), "tensor count"},
		{"huge kv count", head(0, 1<<40).Bytes(), "metadata count"},
		{"huge key length", head(0, 1).u64(math.MaxUint64).pad(16).Bytes(), "string length"},
		{"truncated key", head(0, 1).u64(10).pad(8).Bytes(), "string length"},
		{"unknown value type", head(0, 1).str("k").u32(13).pad(8).Bytes(), "unknown value type 13"},
		{"unknown element type", head(0, 1).str("k").u32(9).u32(99).u64(0).Bytes(), "unknown array element type 99"},
		{"huge array", head(0, 1).str("k").u32(9).u32(uint32(gguf.TypeUint32)).u64(1 << 62).pad(64).Bytes(), "array count"},
		{"huge string array", head(0, 1).str("k").u32(9).u32(uint32(gguf.TypeString)).u64(1 << 30).pad(64).Bytes(), "array count"},
		{"huge string in array", head(0, 1).str("k").u32(9).u32(uint32(gguf.TypeString)).u64(1).u64(1 << 40).pad(8).Bytes(), "string length"},
		{"nesting", nested(9).Bytes(), "nested deeper"},
		{"missing value", head(0, 1).str("k").u32(uint32(gguf.TypeUint64)).pad(4).Bytes(), "truncated"},
		{"bool 2", append(head(0, 1).str("k").u32(uint32(gguf.TypeBool)).Bytes(), 2), "bool byte 2"},
		{"duplicate key", head(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).Bytes(), "duplicate metadata key"},
		{"alignment type", head(0, 1).str("general.alignment").u32(uint32(gguf.TypeUint64)).u64(32).Bytes(), "want uint32"},
		{"alignment zero", head(0, 1).str("general.alignment").u32(4).u32(0).Bytes(), "power of two"},
		{"alignment odd", head(0, 1).str("general.alignment").u32(4).u32(24).Bytes(), "power of two"},
		{"five dims", head(1, 0).tensorInfo("t", 0, 0, 1, 1, 1, 1, 1).toData().pad(4).Bytes(), "5 dimensions"},
		{"unknown ggml type", head(1, 0).tensorInfo("t", 4, 0, 1).toData().pad(32).Bytes(), "unknown ggml type 4"},
		{"partial block", head(1, 0).tensorInfo("t", 2, 0, 16).toData().pad(32).Bytes(), "block size"},
		{"shape overflow", head(1, 0).tensorInfo("t", 0, 0, 1<<32, 1<<32).toData().Bytes(), "overflows"},
		{"dim too large", head(1, 0).tensorInfo("t", 0, 0, 1<<63).toData().Bytes(), "too large"},
		{"misaligned offset", head(1, 0).tensorInfo("t", 0, 4, 1).toData().pad(64).Bytes(), "not a multiple"},
		{"past end", head(1, 0).tensorInfo("t", 0, 0, 9).toData().pad(32).Bytes(), "past the end"},
		{"offset past end", head(1, 0).tensorInfo("t", 0, 1<<20, 1).toData().pad(32).Bytes(), "past the end"},
		{"offset wraps", head(1, 0).tensorInfo("t", 0, math.MaxUint64-31, 8).toData().pad(32).Bytes(), "past the end"},
		{"overlap", head(2, 0).tensorInfo("a", 0, 0, 16).tensorInfo("b", 0, 32, 8).toData().pad(96).Bytes(), "overlaps"},
		{"duplicate tensor", head(2, 0).tensorInfo("a", 0, 0, 1).tensorInfo("a", 0, 32, 1).toData().pad(64).Bytes(), "duplicate tensor"},
		{"truncated tensor info", head(1, 0).str("t").u32(2).u64(4).Bytes(), "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gguf.ParseBytes(tt.data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, gguf.ErrFormat) {
				t.Errorf("error %v does not wrap ErrFormat", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

// TestNestingLimit: 8 levels parse, 9 do not (see TestHostile).
func TestNestingLimit(t *testing.T) {
	if _, err := gguf.ParseBytes(nested(8).Bytes()); err != nil {
		t.Fatal(err)
	}
}

// TestTruncations cuts a valid file at every byte: each prefix that ends
// inside the header, metadata, tensor infos or a tensor must be refused.
func TestTruncations(t *testing.T) {
	data := build(t, allKinds, tinyTensors)
	full, err := gguf.ParseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	last := full.Tensors()[len(tinyTensors)-2] // the last non-empty tensor
	need := int(full.DataOffset() + last.Offset + last.Size)
	for n := range need {
		if _, err := gguf.ParseBytes(data[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes accepted", n, len(data))
		} else if !errors.Is(err, gguf.ErrFormat) {
			t.Fatalf("prefix %d: %v does not wrap ErrFormat", n, err)
		}
	}
}

// TestBoundedAllocation: huge declared counts cost nothing before the
// parser sees that the bytes are missing.
func TestBoundedAllocation(t *testing.T) {
	inputs := [][]byte{
		head(0, 1).str("k").u32(9).u32(uint32(gguf.TypeUint64)).u64(1 << 27).pad(1 << 10).Bytes(),
		head(0, 1).str("k").u32(9).u32(uint32(gguf.TypeString)).u64(1 << 27).pad(1 << 10).Bytes(),
		head(1<<27, 0).pad(1 << 10).Bytes(),
		head(0, 1<<27).pad(1 << 10).Bytes(),
		head(0, 1).str("k").u32(uint32(gguf.TypeString)).u64(1 << 30).pad(1 << 10).Bytes(),
	}
	for i, in := range inputs {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := gguf.ParseBytes(in); err == nil {
			t.Fatalf("input %d accepted", i)
		}
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
			t.Errorf("input %d (%d bytes): allocated %d bytes", i, len(in), got)
		}
	}
}
