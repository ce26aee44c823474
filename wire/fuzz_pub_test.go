package wire_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// FuzzDecodePub feeds arbitrary PUB messages (topic, sequence frame, payload) to
// ParsePub and the payload to the decoders of what engines publish: KV-event batches
// (vLLM's two layouts), session reports and load reports. Nothing may panic; errors wrap
// ErrMalformed; whatever decodes re-encodes stably (checkValue).
func FuzzDecodePub(f *testing.F) {
	seeds := []any{
		&wire.KVEventBatch{Timestamp: 1.5, DPRank: 1, Events: []wire.KVEvent{
			&wire.BlockStored{BlockHashes: []uint64{7, 1 << 63}, TokenIDs: []int32{1, 2, 3, 4}, BlockSize: 2},
			&wire.BlockStored{BlockHashes: []uint64{9}, ParentHash: 7, HasParent: true, TokenIDs: []int32{5, 6}, BlockSize: 2, Medium: "GPU"},
			&wire.BlockRemoved{BlockHashes: []uint64{7}},
			&wire.AllBlocksCleared{},
		}},
		&wire.KVEventBatch{Timestamp: 2, Layout: wire.KVLayoutArray, Events: []wire.KVEvent{
			&wire.BlockStored{BlockHashes: []uint64{3}, TokenIDs: []int32{1, 2}, BlockSize: 2, Medium: "GPU", SessionID: "s"},
			&wire.BlockRemoved{BlockHashes: []uint64{3}, Medium: "GPU"},
		}},
		&wire.KVEventBatch{},
		&wire.SessionReport{EngineIndex: 1, Timestamp: 2.5, Full: true, Added: []string{"a", ""}, Removed: []string{"b"}},
		&wire.LoadReport{},
	}
	for i, v := range seeds {
		b, err := wire.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte("kv@pod-0@model"), binary.BigEndian.AppendUint64(nil, uint64(i)), b)
	}
	f.Add([]byte(wire.TopicSessions), []byte{1, 2, 3}, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}) // short seq, huge array
	f.Add([]byte(""), make([]byte, 8), []byte{0x93, 0xcb})                                   // truncated float
	f.Fuzz(func(t *testing.T, topic, seq, payload []byte) {
		_, _, p, err := wire.ParsePub([][]byte{topic, seq, payload})
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("ParsePub error %v does not wrap ErrMalformed", err)
			}
			if len(seq) == 8 {
				t.Fatalf("ParsePub refused a well-framed message: %v", err)
			}
			p = payload
		}
		for _, newV := range []func() any{
			func() any { return new(wire.KVEventBatch) },
			func() any { return new(wire.SessionReport) },
			func() any { return new(wire.LoadReport) },
		} {
			checkValue(t, p, newV)
		}
	})
}
