package wire_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

func TestKVEventBatchRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		batch wire.KVEventBatch
	}{
		{"empty", wire.KVEventBatch{Timestamp: 1754000000.5, DPRank: 1}},
		{"all kinds", wire.KVEventBatch{Timestamp: 1754000000.5, DPRank: 3, Events: []wire.KVEvent{
			&wire.BlockStored{BlockHashes: []uint64{1, 1 << 63}, TokenIDs: []int32{1, 2, 3, 4}, BlockSize: 2},
			&wire.BlockStored{BlockHashes: []uint64{9}, ParentHash: 1 << 63, HasParent: true, TokenIDs: []int32{5, 6}, BlockSize: 2, Medium: "GPU"},
			&wire.BlockRemoved{BlockHashes: []uint64{1, 9}},
			&wire.AllBlocksCleared{},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := wire.Marshal(&tt.batch)
			if err != nil {
				t.Fatal(err)
			}
			var got wire.KVEventBatch
			if err := wire.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.batch, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKVEventBatchBytes pins the encoding to vLLM's msgspec layout: a
// tagged array per event, nil for absent parent, lora_id and medium.
func TestKVEventBatchBytes(t *testing.T) {
	batch := &wire.KVEventBatch{Timestamp: 1.5, DPRank: 1, Events: []wire.KVEvent{
		&wire.BlockStored{BlockHashes: []uint64{7}, TokenIDs: []int32{1, 2}, BlockSize: 2},
		&wire.BlockRemoved{BlockHashes: []uint64{7}},
		&wire.AllBlocksCleared{},
	}}
	b, err := wire.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	want := "93" + "cb3ff8000000000000" + "93" +
		"97" + "ab" + hex.EncodeToString([]byte("BlockStored")) + "9107" + "c0" + "920102" + "02" + "c0" + "c0" +
		"93" + "ac" + hex.EncodeToString([]byte("BlockRemoved")) + "9107" + "c0" +
		"91" + "b0" + hex.EncodeToString([]byte("AllBlocksCleared")) +
		"01"
	if got := hex.EncodeToString(b); got != want {
		t.Errorf("bytes:\n got %s\nwant %s", got, want)
	}
}

// TestKVEventBatchDecodesPeers: what vLLM (newer fields, bytes hashes) and
// Dynamo (signed hashes) send decodes; unknown tags are kept as such.
func TestKVEventBatchDecodesPeers(t *testing.T) {
	raw := []any{
		2.5,
		[]any{
			[]any{"BlockStored", []any{[]byte{0, 0, 0, 0, 0, 0, 0, 5, 0xff}, int64(-1)}, nil, []any{1, 2, 3, 4}, 2, nil, "GPU", "lora-x", "extra"},
			[]any{"BlockRemoved", []any{uint64(3)}},
			[]any{"SomethingNew", 1, 2},
			[]any{"AllBlocksCleared"},
		},
		7, "trailing",
	}
	b, err := msgpack.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got wire.KVEventBatch
	if err := wire.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := wire.KVEventBatch{Timestamp: 2.5, DPRank: 7, Events: []wire.KVEvent{
		&wire.BlockStored{BlockHashes: []uint64{5, 1<<64 - 1}, TokenIDs: []int32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU"},
		&wire.BlockRemoved{BlockHashes: []uint64{3}},
		&wire.UnknownKVEvent{Tag: "SomethingNew"},
		&wire.AllBlocksCleared{},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

func TestKVEventBatchRejectsMalformed(t *testing.T) {
	tests := []struct {
		name string
		raw  any
	}{
		{"event without tag", []any{1.0, []any{[]any{}}, 0}},
		{"hash of wrong type", []any{1.0, []any{[]any{"BlockRemoved", []any{1.5}}}, 0}},
		{"events not an array", []any{1.0, "x", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := msgpack.Marshal(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			var got wire.KVEventBatch
			if err := wire.Unmarshal(b, &got); !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("Unmarshal = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestSessionReportRoundTrip(t *testing.T) {
	tests := []wire.SessionReport{
		{EngineIndex: 1, Timestamp: 3.25, Full: true, Added: []string{"a", "b"}},
		{EngineIndex: 0, Timestamp: 4, Added: []string{"c"}, Removed: []string{"a"}},
		{},
	}
	for _, rep := range tests {
		b, err := wire.Marshal(&rep)
		if err != nil {
			t.Fatal(err)
		}
		var got wire.SessionReport
		if err := wire.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rep, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func TestPubSeq(t *testing.T) {
	var p wire.PubSeq
	steps := []struct {
		topic string
		seq   uint64
		want  wire.SeqStatus
	}{
		{"kv", 5, wire.SeqInOrder}, // first seen: anything goes
		{"kv", 6, wire.SeqInOrder},
		{"load", 0, wire.SeqInOrder}, // topics count separately
		{"kv", 9, wire.SeqGap},
		{"kv", 10, wire.SeqInOrder},
		{"kv", 0, wire.SeqRestart},
		{"kv", 1, wire.SeqInOrder},
	}
	for i, s := range steps {
		if got := p.Observe(s.topic, s.seq); got != s.want {
			t.Errorf("step %d: Observe(%q, %d) = %v, want %v", i, s.topic, s.seq, got, s.want)
		}
	}
	p.Reset()
	if got := p.Observe("kv", 0); got != wire.SeqInOrder {
		t.Errorf("after Reset: %v, want SeqInOrder", got)
	}
}
