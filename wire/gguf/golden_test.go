package gguf_test

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/gguf"
)

var update = flag.Bool("update", false, "rewrite testdata/*.gguf")

// goldenKVs and goldenTensors make testdata/tiny.gguf: a 1-layer model's
// worth of metadata and tensors.
var goldenKVs = []struct {
	key string
	v   any
}{
	{"general.architecture", "llama"},
	{"general.alignment", uint32(32)},
	{"llama.block_count", uint32(1)},
	{"llama.rope.freq_base", float32(10000)},
	{"tokenizer.ggml.tokens", []string{"<s>", "a"}},
	{"tokenizer.ggml.token_type", []int32{3, 1}},
}

var goldenTensors = []tensor{
	{"output_norm.weight", 0, []uint64{2}, f32Bytes(1, -1)},
	{"token_embd.weight", 1, []uint64{2, 2}, []byte{0, 0x3c, 0, 0xbc, 0, 0, 0, 0x40}},
}

func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "tiny.gguf")
	got := build(t, goldenKVs, goldenTensors)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Writer output differs from %s:\ngot  %s\nwant %s", path, hex.EncodeToString(got), hex.EncodeToString(want))
	}

	// The first bytes, by hand: magic, version 3, 2 tensors, 6 pairs, the
	// first key (20 bytes) and its string type (8).
	prefix := "47475546" + "03000000" + "0200000000000000" + "0600000000000000" +
		"1400000000000000" + hex.EncodeToString([]byte("general.architecture")) + "08000000" +
		"0500000000000000" + hex.EncodeToString([]byte("llama"))
	if h := hex.EncodeToString(want); len(h) < len(prefix) || h[:len(prefix)] != prefix {
		t.Errorf("prefix\ngot  %s\nwant %s", h[:min(len(h), len(prefix))], prefix)
	}

	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _ := f.Uint("llama.block_count"); n != 1 {
		t.Errorf("block_count %d", n)
	}
	wantInfos := []gguf.TensorInfo{
		{Name: "output_norm.weight", Type: 0, Shape: []uint64{2}, Offset: 0, Size: 8},
		{Name: "token_embd.weight", Type: 1, Shape: []uint64{2, 2}, Offset: 32, Size: 8},
	}
	if diff := cmp.Diff(wantInfos, f.Tensors()); diff != "" {
		t.Errorf("Tensors (-want +got):\n%s", diff)
	}
	if f.DataOffset()+64 != uint64(len(want)) {
		t.Errorf("data offset %d, file %d bytes", f.DataOffset(), len(want))
	}
}
