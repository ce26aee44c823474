package wire_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

func hexBytes(t testing.TB, s string) []byte {
	t.Helper()
	b, err := parseGolden("frame 0\n" + s)
	if err != nil {
		t.Fatal(err)
	}
	return b[0]
}

// nested returns n one-element arrays wrapped around nil.
func nested(n int) []byte {
	return append(bytes.Repeat([]byte{0x91}, n), 0xc0)
}

// bytesAllocated returns the bytes fn allocates per call, averaged over
// runs.
func bytesAllocated(runs int, fn func()) uint64 {
	fn() // warm pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// hostileCases are tiny payloads declaring huge lengths, or nesting too
// deep, in every place a length or a free-form value is read.
func hostileCases(t testing.TB) []struct {
	name string
	typ  wire.MsgType
	b    []byte
} {
	return []struct {
		name string
		typ  wire.MsgType
		b    []byte
	}{
		{"top-level array32 of 2^32-1", wire.MsgAdd, hexBytes(t, "dd ff ff ff ff 00 00 00 00 00")},
		{"prompt array32", wire.MsgAdd, hexBytes(t, "99 a1 72 dd ff ff ff ff 01 02")},
		{"request_id str32", wire.MsgAdd, hexBytes(t, "99 db ff ff ff ff 61 62")},
		{"sampling params map32", wire.MsgAdd, hexBytes(t, "93 a0 90 df ff ff ff ff")},
		{"logit_bias map32", wire.MsgAdd, append(append(hexBytes(t, "93 a0 90 81 aa"), "logit_bias"...), hexBytes(t, "df ff ff ff ff 01")...)},
		{"stop_token_ids array16", wire.MsgAdd, append(append(hexBytes(t, "93 a0 90 81 ae"), "stop_token_ids"...), hexBytes(t, "dc ff ff 01")...)},
		{"abort array32", wire.MsgAbort, hexBytes(t, "dd ff ff ff ff a0")},
		{"utility arg bin32", wire.MsgUtility, hexBytes(t, "93 01 a1 6d 91 c6 ff ff ff ff 00")},
		{"utility arg array32", wire.MsgUtility, hexBytes(t, "93 01 a1 6d 91 dd 7f ff ff ff 00")},
		{"utility arg map32", wire.MsgUtility, hexBytes(t, "93 01 a1 6d 91 df 7f ff ff ff 00")},
		{"utility args nested 100k deep", wire.MsgUtility, append(hexBytes(t, "93 01 a1 6d 91"), nested(100_000)...)},
		{"outputs array32", wire.MsgOutputs, hexBytes(t, "92 00 dd ff ff ff ff")},
		{"logprobs rows array32", wire.MsgOutputs, hexBytes(t, "92 00 91 93 a1 61 90 91 dd ff ff ff ff")},
		{"utility result raw array32", wire.MsgUtilityResult, hexBytes(t, "93 01 c0 dd ff ff ff ff")},
		{"utility result raw nested 100k deep", wire.MsgUtilityResult, append(hexBytes(t, "93 01 c0"), nested(100_000)...)},
		{"skipped trailing ext32", wire.MsgEngineDead, hexBytes(t, "92 a0 c9 ff ff ff ff 03")},
		{"skipped trailing str32", wire.MsgEngineDead, hexBytes(t, "92 a0 db ff ff ff ff")},
		{"skipped trailing nested 100k deep", wire.MsgEngineDead, append(hexBytes(t, "92 a0"), nested(100_000)...)},
		{"unknown sampling key with huge value", wire.MsgAdd, hexBytes(t, "93 a0 90 81 a1 78 dd ff ff ff ff")},
	}
}

// TestHostileLengths checks that a tiny message declaring a huge length
// fails with ErrMalformed before anything of that size is allocated, and
// that deep nesting fails instead of exhausting the stack.
func TestHostileLengths(t *testing.T) {
	const maxAlloc = 1 << 20 // bytes per decode
	for _, tt := range hostileCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			frames := [][]byte{{byte(tt.typ)}, tt.b}
			_, _, err := wire.Decode(frames)
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("Decode error = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), "declared with only") && !strings.Contains(err.Error(), "nested deeper") {
				t.Errorf("Decode error = %q, want a length or depth complaint", err)
			}
			if n := bytesAllocated(5, func() { _, _, _ = wire.Decode(frames) }); n > maxAlloc {
				t.Errorf("Decode allocated %d bytes, want at most %d", n, maxAlloc)
			}
		})
	}
}

// TestHostileStream checks the DecodeMsgpack path over a plain stream,
// where remaining bytes are unknown: huge claims must still fail without
// huge allocations.
func TestHostileStream(t *testing.T) {
	const maxAlloc = 1 << 20 // bytes per decode
	for _, tt := range hostileCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			decode := func() error {
				v, _ := map[wire.MsgType]func() any{
					wire.MsgAdd:           func() any { return new(wire.EngineCoreRequest) },
					wire.MsgAbort:         func() any { return new(wire.Abort) },
					wire.MsgUtility:       func() any { return new(wire.Utility) },
					wire.MsgOutputs:       func() any { return new(wire.EngineCoreOutputs) },
					wire.MsgUtilityResult: func() any { return new(wire.UtilityResult) },
					wire.MsgEngineDead:    func() any { return new(wire.EngineDead) },
				}[tt.typ]
				return msgpack.NewDecoder(oneByteReader{bytes.NewReader(tt.b)}).Decode(v())
			}
			if err := decode(); err == nil {
				t.Fatal("decode succeeded, want an error")
			}
			if n := bytesAllocated(3, func() { _ = decode() }); n > maxAlloc {
				t.Errorf("decode allocated %d bytes, want at most %d", n, maxAlloc)
			}
		})
	}
}
