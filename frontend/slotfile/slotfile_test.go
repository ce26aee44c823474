package slotfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"
)

var layout = map[string]any{"device": "cpu", "bytes_per_block": int64(8), "num_layers": int64(2)}

func write(t *testing.T, tokens []int32, kv *KV, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := Write(&buf, tokens, kv, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("Write says %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func read(b []byte) (*File, []byte, error) {
	f, err := Read(bytes.NewReader(b), int64(len(b)), 1000)
	if err != nil || f.Data == nil {
		return f, nil, err
	}
	data, err := io.ReadAll(f.Data)
	return f, data, err
}

func TestRoundTrip(t *testing.T) {
	tokens := []int32{1, 2, 3, 40000, 5}
	data := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 3)
	b := write(t, tokens, &KV{Layout: layout, CacheSalt: "s"}, data)
	// llama.cpp's header, as its test_slot_save reads it.
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	if u32(0) != 0x67677371 || u32(4) != 3 || u32(8) != uint32(len(tokens)+4) || int32(u32(12)) != -1 || u32(20) != uint32(len(tokens)) || u32(24) != 1 {
		t.Errorf("header words % x", b[:28])
	}
	f, got, err := read(b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Tokens, tokens) || f.KV == nil || f.KV.CacheSalt != "s" || f.KV.NumBlocks != 3 || !bytes.Equal(got, data) {
		t.Errorf("read back %+v %+v data %v", f, f.KV, got)
	}
}

// TestLegacyAndForeign: a plain token list (older llama-servers) and a
// file whose KV state is llama.cpp's (no section of ours) restore their
// tokens only.
func TestLegacyAndForeign(t *testing.T) {
	tokens := []int32{9, 8, 7}
	legacy := binary.LittleEndian.AppendUint32(nil, 0x67677371)
	legacy = binary.LittleEndian.AppendUint32(legacy, 3)
	legacy = binary.LittleEndian.AppendUint32(legacy, 3)
	for _, tk := range tokens {
		legacy = binary.LittleEndian.AppendUint32(legacy, uint32(tk))
	}
	foreign := append(write(t, tokens, nil, nil), 5, 0, 0, 0, 'l', 'l', 'a', 'm', 'a', 1, 2, 3, 4, 5, 6, 7, 8, 9)
	for name, b := range map[string][]byte{"legacy": legacy, "foreign": foreign, "tokens only": write(t, tokens, nil, nil)} {
		f, _, err := read(b)
		if err != nil || !slices.Equal(f.Tokens, tokens) || f.KV != nil {
			t.Errorf("%s: %+v, %v", name, f, err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	good := write(t, []int32{1, 2}, &KV{Layout: layout}, make([]byte, 8))
	media := write(t, []int32{1, 2}, nil, nil)
	binary.LittleEndian.PutUint32(media[len(media)-4:], 1)
	tests := map[string]struct {
		b    []byte
		want error
	}{
		"empty":           {nil, ErrFormat},
		"bad magic":       {append([]byte{1, 2, 3, 4}, good[4:]...), ErrFormat},
		"truncated data":  {good[:len(good)-1], ErrFormat},
		"extra data":      {append(slices.Clone(good), 0), ErrFormat},
		"truncated words": {good[:20], ErrFormat},
		"media":           {media, ErrMedia},
	}
	for name, tt := range tests {
		if _, _, err := read(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", name, err, tt.want)
		}
	}
	if _, err := Write(io.Discard, nil, &KV{Layout: layout}, bytes.NewReader(make([]byte, 12))); err == nil {
		t.Error("Write of 12 bytes of 8-byte blocks succeeded")
	}
	long := write(t, make([]int32, 20), nil, nil)
	if _, err := Read(bytes.NewReader(long), int64(len(long)), 10); !errors.Is(err, ErrFormat) {
		t.Errorf("20 tokens past a 10-token context: %v", err)
	}
}

func TestValidFilename(t *testing.T) {
	for name, want := range map[string]bool{
		"slot1.bin": true, "état ü.bin": true, "a.b.c": true,
		"": false, ".": false, "..": false, "a/b": false, `a\b`: false, "../x": false, "a..b": false,
		" x": false, "x ": false, "x.": false, "a:b": false, "a*b": false, "a?b": false, "a|b": false,
		"a\x00b": false, "a\nb": false, "\xff": false, string(make([]byte, 256)): false,
	} {
		if got := ValidFilename(name); got != want {
			t.Errorf("ValidFilename(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(write(&testing.T{}, []int32{1, 2, 3}, &KV{Layout: layout}, make([]byte, 8)))
	f.Add(write(&testing.T{}, nil, nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		f, data, err := read(b)
		if err != nil {
			return
		}
		if len(f.Tokens) > 1005 {
			t.Fatalf("%d tokens past the bound", len(f.Tokens))
		}
		if f.KV != nil && len(data) != f.KV.NumBlocks*f.KV.BytesPerBlock() {
			t.Fatalf("KV data %d bytes for %d blocks", len(data), f.KV.NumBlocks)
		}
	})
}
