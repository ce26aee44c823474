package wire_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tandem-llm/tandem/wire"
)

// FuzzDecode feeds arbitrary [type][payload] messages to Decode (and the
// payload to Unmarshal for the non-message values). Decoding must not
// panic, must fail only with ErrMalformed, and whatever decodes must
// re-encode and decode again to the same value and the same bytes.
func FuzzDecode(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden files: %v", err)
	}
	for _, p := range paths {
		frames, err := readGolden(p)
		if err != nil {
			f.Fatal(err)
		}
		switch len(frames) {
		case 2:
			f.Add(frames[0][0], frames[1])
		case 1:
			f.Add(byte(0xff), frames[0])
		}
	}
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		checkMessage(t, [][]byte{{typ}, payload})
		for _, newV := range []func() any{
			func() any { return new(wire.LoadReport) },
			func() any { return new(wire.SessionInfo) },
			func() any { return new([]wire.SessionInfo) },
			func() any { return new(wire.SchedulerStats) },
			func() any { return new(wire.SamplingParams) },
			func() any { return new(any) },
		} {
			checkValue(t, payload, newV)
		}
	})
}

var equateNaNs = cmpopts.EquateNaNs()

func checkMessage(t *testing.T, frames [][]byte) {
	typ, v, err := wire.Decode(frames)
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("Decode error %v does not wrap ErrMalformed", err)
		}
		return
	}
	enc1, err := wire.Encode(typ, v)
	if err != nil {
		t.Fatalf("re-Encode of a decoded %s: %v", typ, err)
	}
	typ2, v2, err := wire.Decode(enc1)
	if err != nil {
		t.Fatalf("Decode of re-encoded %s (% x): %v", typ, enc1[1], err)
	}
	if typ2 != typ {
		t.Fatalf("type %s became %s", typ, typ2)
	}
	if diff := cmp.Diff(v, v2, equateNaNs); diff != "" {
		t.Fatalf("decode → encode → decode changed the value (-first +second):\n%s", diff)
	}
	enc2, err := wire.Encode(typ2, v2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc1[1], enc2[1]) {
		t.Fatalf("encoding is not stable:\n% x\n% x", enc1[1], enc2[1])
	}
}

func checkValue(t *testing.T, b []byte, newV func() any) {
	v := newV()
	if err := wire.Unmarshal(b, v); err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("Unmarshal(%T) error %v does not wrap ErrMalformed", v, err)
		}
		return
	}
	enc1, err := wire.Marshal(v)
	if err != nil {
		t.Fatalf("re-Marshal of a decoded %T: %v", v, err)
	}
	v2 := newV()
	if err := wire.Unmarshal(enc1, v2); err != nil {
		t.Fatalf("Unmarshal of re-encoded %T (% x): %v", v, enc1, err)
	}
	if diff := cmp.Diff(v, v2, equateNaNs); diff != "" {
		t.Fatalf("%T: decode → encode → decode changed the value (-first +second):\n%s", v, diff)
	}
	enc2, err := wire.Marshal(v2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc1, enc2) {
		t.Fatalf("%T: encoding is not stable:\n% x\n% x", v, enc1, enc2)
	}
}
