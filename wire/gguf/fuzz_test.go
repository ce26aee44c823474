package gguf_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tandem-llm/tandem/wire/gguf"
)

// seeds are valid files of every shape the tests build.
func seeds(f *testing.F) [][]byte {
	golden, err := os.ReadFile(filepath.Join("testdata", "tiny.gguf"))
	if err != nil {
		f.Fatal(err)
	}
	return [][]byte{
		golden,
		build(f, allKinds, tinyTensors),
		build(f, allKinds, nil),
		build(f, nil, tinyTensors),
		nested(8).Bytes(),
	}
}

// allocLimit is what parsing n bytes may allocate: a constant factor for
// boxed values, map entries and slice headers, plus fixed buffers.
func allocLimit(n int) uint64 { return 64*uint64(n) + 1<<20 }

// FuzzOpen parses arbitrary bytes as a whole file and reads every tensor
// and value: no panic, only ErrFormat failures, bounded allocation.
func FuzzOpen(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		file, err := gguf.ParseBytes(data)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocLimit(len(data)) {
			t.Fatalf("parsing %d bytes allocated %d", len(data), got)
		}
		if err != nil {
			if !errors.Is(err, gguf.ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		defer file.Close()
		for _, k := range file.Keys() {
			if _, ok := file.KV(k); !ok {
				t.Fatalf("key %q listed but missing", k)
			}
			file.Uint(k)
			file.Float(k)
			file.Int32s(k)
			file.Float32s(k)
		}
		for _, ti := range file.Tensors() {
			b, err := file.TensorData(ti)
			if err != nil {
				t.Fatalf("tensor %q accepted by Open but not by TensorData: %v", ti.Name, err)
			}
			if uint64(len(b)) != ti.Size {
				t.Fatalf("tensor %q: %d bytes, size %d", ti.Name, len(b), ti.Size)
			}
		}
	})
}

// FuzzParse reads arbitrary bytes with ParseMetadata; what parses must
// survive a write/read round trip unchanged.
func FuzzParse(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		md, err := gguf.ParseMetadata(bytes.NewReader(data), int64(len(data)))
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > allocLimit(len(data)) {
			t.Fatalf("parsing %d bytes allocated %d", len(data), got)
		}
		if err != nil {
			if !errors.Is(err, gguf.ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		w := gguf.NewWriter()
		for _, k := range md.Keys() {
			v, _ := md.KV(k)
			if k == gguf.KeyAlignment {
				continue // may be invalid: only Open checks it
			}
			if err := w.AddKV(k, v); err != nil {
				t.Fatalf("value of %q read but not writable: %v", k, err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := gguf.ParseMetadata(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("rewritten metadata does not parse: %v", err)
		}
		for _, k := range again.Keys() {
			v1, _ := md.KV(k)
			v2, _ := again.KV(k)
			if !equalValues(v1, v2) {
				t.Fatalf("%q: %#v became %#v", k, v1, v2)
			}
		}
	})
}

// equalValues compares values bit for bit (NaNs included) by re-encoding.
func equalValues(a, b any) bool {
	enc := func(v any) []byte {
		w := gguf.NewWriter()
		if err := w.AddKV("k", v); err != nil {
			return nil
		}
		var buf bytes.Buffer
		_, _ = w.WriteTo(&buf)
		return buf.Bytes()
	}
	return bytes.Equal(enc(a), enc(b))
}
