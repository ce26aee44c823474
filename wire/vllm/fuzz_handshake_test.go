package vllm_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tandem-llm/tandem/wire/vllm"
)

// fuzzRoundTrip seeds f with the golden files named and checks that
// whatever decode accepts re-encodes, decodes to the same value and
// re-encodes to the same bytes.
func fuzzRoundTrip[T any](f *testing.F, decode func([]byte) (*T, error), encode func(*T) ([]byte, error), seeds ...string) {
	for _, name := range seeds {
		f.Add(readGolden(f, name)[0])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			return
		}
		e1, err := encode(v)
		if err != nil {
			t.Fatalf("encode of a decoded value: %v", err)
		}
		v2, err := decode(e1)
		if err != nil {
			t.Fatalf("re-decode: %v\n% x", err, e1)
		}
		if diff := cmp.Diff(v, v2, cmpopts.EquateEmpty(), cmpopts.EquateNaNs()); diff != "" {
			t.Fatalf("(-decoded +re-decoded):\n%s", diff)
		}
		e2, err := encode(v2)
		if err != nil || !bytes.Equal(e1, e2) {
			t.Fatalf("unstable encoding (%v):\n% x\n% x", err, e1, e2)
		}
	})
}

func FuzzDecodeHandshake(f *testing.F) {
	fuzzRoundTrip(f, vllm.DecodeHandshake, vllm.EncodeHandshake, "handshake_hello", "handshake_ready")
}

func FuzzDecodeHandshakeMetadata(f *testing.F) {
	fuzzRoundTrip(f, vllm.DecodeHandshakeMetadata, vllm.EncodeHandshakeMetadata, "handshake_metadata")
}

func FuzzDecodeReadyResponse(f *testing.F) {
	fuzzRoundTrip(f, vllm.DecodeReadyResponse, vllm.EncodeReadyResponse, "ready_response")
}
