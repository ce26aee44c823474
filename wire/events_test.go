package wire_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

func TestKVEventBatchRoundTrip(t *testing.T) {
	events := []wire.KVEvent{
		&wire.BlockStored{BlockHashes: []uint64{1, 1 << 63}, TokenIDs: []int32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU"},
		&wire.BlockStored{BlockHashes: []uint64{9}, ParentHash: 1 << 63, HasParent: true, TokenIDs: []int32{5, 6}, BlockSize: 2, Medium: "GPU", LoraName: "l"},
		&wire.BlockRemoved{BlockHashes: []uint64{1, 9}, Medium: "GPU"},
		&wire.AllBlocksCleared{},
	}
	withSession := &wire.BlockStored{BlockHashes: []uint64{4}, TokenIDs: []int32{7, 8}, BlockSize: 2, SessionID: "conv-1"}
	tests := []struct {
		name  string
		batch wire.KVEventBatch
	}{
		{"empty", wire.KVEventBatch{Timestamp: 1754000000.5, DPRank: 1}},
		{"map", wire.KVEventBatch{Timestamp: 1754000000.5, DPRank: 3, Events: append(slices.Clone(events), withSession)}},
		{"array", wire.KVEventBatch{Timestamp: 1754000000.5, DPRank: 3, Events: events, Layout: wire.KVLayoutArray}},
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

// TestKVEventBatchBytes pins both layouts: vLLM 0.33.0's tagged maps
// (fields without a default always written, session_id only when set) and
// the array layout of vLLM 0.17-0.19 (9-element BlockStored).
func TestKVEventBatchBytes(t *testing.T) {
	str := func(s string) string { return fmt.Sprintf("%02x", 0xa0+len(s)) + hex.EncodeToString([]byte(s)) }
	events := []wire.KVEvent{
		&wire.BlockStored{BlockHashes: []uint64{7}, TokenIDs: []int32{1, 2}, BlockSize: 2, Medium: "GPU", SessionID: "s"},
		&wire.BlockRemoved{BlockHashes: []uint64{7}, Medium: "GPU"},
		&wire.AllBlocksCleared{},
	}
	tests := []struct {
		layout wire.KVLayout
		want   string
	}{
		{wire.KVLayoutMap, "93" + "cb3ff8000000000000" + "93" +
			"89" + str("type") + str("BlockStored") + str("block_hashes") + "9107" + str("parent_block_hash") + "c0" +
			str("token_ids") + "920102" + str("block_size") + "02" + str("lora_id") + "c0" + str("medium") + str("GPU") +
			str("lora_name") + "c0" + str("session_id") + str("s") +
			"83" + str("type") + str("BlockRemoved") + str("block_hashes") + "9107" + str("medium") + str("GPU") +
			"81" + str("type") + str("AllBlocksCleared") +
			"01"},
		{wire.KVLayoutArray, "93" + "cb3ff8000000000000" + "93" +
			"99" + str("BlockStored") + "9107" + "c0" + "920102" + "02" + "c0" + str("GPU") + "c0" + "c0" +
			"93" + str("BlockRemoved") + "9107" + str("GPU") +
			"91" + str("AllBlocksCleared") +
			"01"},
	}
	for _, tt := range tests {
		t.Run(tt.layout.String(), func(t *testing.T) {
			b, err := wire.Marshal(&wire.KVEventBatch{Timestamp: 1.5, DPRank: 1, Events: events, Layout: tt.layout})
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != tt.want {
				t.Errorf("bytes:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestKVEventLoRABytes: a LoRA request's blocks name its adapter as vLLM
// does, lora_name and the deprecated lora_id, in both layouts.
func TestKVEventLoRABytes(t *testing.T) {
	str := func(s string) string { return fmt.Sprintf("%02x", 0xa0+len(s)) + hex.EncodeToString([]byte(s)) }
	ev := &wire.BlockStored{BlockHashes: []uint64{7}, TokenIDs: []int32{1, 2}, BlockSize: 2, Medium: "GPU", LoraName: "alpha", LoraID: 3}
	for _, tt := range []struct {
		layout wire.KVLayout
		want   string
	}{
		{wire.KVLayoutMap, "93" + "cb3ff8000000000000" + "91" +
			"88" + str("type") + str("BlockStored") + str("block_hashes") + "9107" + str("parent_block_hash") + "c0" +
			str("token_ids") + "920102" + str("block_size") + "02" + str("lora_id") + "03" + str("medium") + str("GPU") +
			str("lora_name") + str("alpha") + "00"},
		{wire.KVLayoutArray, "93" + "cb3ff8000000000000" + "91" +
			"99" + str("BlockStored") + "9107" + "c0" + "920102" + "02" + "03" + str("GPU") + str("alpha") + "c0" + "00"},
	} {
		b, err := wire.Marshal(&wire.KVEventBatch{Timestamp: 1.5, Events: []wire.KVEvent{ev}, Layout: tt.layout})
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tt.want {
			t.Errorf("%s bytes:\n got %s\nwant %s", tt.layout, got, tt.want)
		}
		var back wire.KVEventBatch
		if err := wire.Unmarshal(b, &back); err != nil || !cmp.Equal(back.Events, []wire.KVEvent{ev}) {
			t.Errorf("%s round trip: %v %+v", tt.layout, err, back.Events)
		}
	}
}

// TestKVEventBatchDecodesPeers: what vLLM (either layout, newer fields,
// bytes hashes, a nil rank) and Dynamo (signed hashes) send decodes;
// unknown tags are kept as such.
func TestKVEventBatchDecodesPeers(t *testing.T) {
	tests := []struct {
		name string
		raw  any
		want wire.KVEventBatch
	}{
		{"arrays", []any{
			2.5,
			[]any{
				[]any{"BlockStored", []any{[]byte{0, 0, 0, 0, 0, 0, 0, 5, 0xff}, int64(-1)}, nil, []any{1, 2, 3, 4}, 2, 4, "GPU", "lora-x", nil, 0, "full_attention", nil},
				[]any{"BlockRemoved", []any{uint64(3)}},
				[]any{"SomethingNew", 1, 2},
				[]any{"AllBlocksCleared"},
			},
			7, "trailing",
		}, wire.KVEventBatch{Timestamp: 2.5, DPRank: 7, Layout: wire.KVLayoutArray, Events: []wire.KVEvent{
			&wire.BlockStored{BlockHashes: []uint64{5, 1<<64 - 1}, TokenIDs: []int32{1, 2, 3, 4}, BlockSize: 2, Medium: "GPU", LoraName: "lora-x", LoraID: 4},
			&wire.BlockRemoved{BlockHashes: []uint64{3}},
			&wire.UnknownKVEvent{Tag: "SomethingNew"},
			&wire.AllBlocksCleared{},
		}}},
		{"maps", []any{
			3.5,
			[]any{
				map[string]any{"block_size": 2, "type": "BlockStored", "block_hashes": []any{uint64(8)}, "parent_block_hash": uint64(5),
					"token_ids": []any{9, 9}, "lora_id": nil, "medium": "GPU", "lora_name": nil, "extra_keys": []any{nil},
					"group_idx": 0, "locality": "LOCAL", "session_id": "conv-42", "lookahead_token_ids": nil},
				map[string]any{"type": "BlockRemoved", "block_hashes": []any{uint64(8)}, "medium": "GPU", "group_idx": 0},
				map[string]any{"type": "AllBlocksCleared"},
			},
			nil,
		}, wire.KVEventBatch{Timestamp: 3.5, Events: []wire.KVEvent{
			&wire.BlockStored{BlockHashes: []uint64{8}, ParentHash: 5, HasParent: true, TokenIDs: []int32{9, 9}, BlockSize: 2, Medium: "GPU", SessionID: "conv-42"},
			&wire.BlockRemoved{BlockHashes: []uint64{8}, Medium: "GPU"},
			&wire.AllBlocksCleared{},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := msgpack.Marshal(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			var got wire.KVEventBatch
			if err := wire.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decode (-want +got):\n%s", diff)
			}
		})
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
		{"map event without tag", []any{1.0, []any{map[string]any{"block_hashes": []any{1}}}, 0}},
		{"map key not a string", []any{1.0, []any{map[int]any{1: "BlockStored"}}, 0}},
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

func TestReplayRequest(t *testing.T) {
	tests := []struct {
		frame    []byte
		seq      uint64
		snapshot bool
		ok       bool
	}{
		{wire.ReplayRequest(42), 42, false, true},
		{wire.ReplayRequest(0), 0, false, true},
		{wire.SnapshotRequest, 0, true, true},
		{[]byte{1, 2, 3}, 0, false, false},
	}
	for _, tt := range tests {
		seq, snap, err := wire.ParseReplayRequest(tt.frame)
		if (err == nil) != tt.ok || seq != tt.seq || snap != tt.snapshot {
			t.Errorf("ParseReplayRequest(%x) = %d, %v, %v", tt.frame, seq, snap, err)
		}
		if err != nil && !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("error %v does not wrap ErrMalformed", err)
		}
	}
	if !wire.IsReplayEnd([][]byte{nil, wire.ReplayEnd, nil}) || wire.IsReplayEnd([][]byte{nil, wire.ReplayRequest(1), nil}) {
		t.Error("IsReplayEnd")
	}
}

// TestHeartbeatSessions: a session report rides in HEARTBEAT[4]; without
// one the heartbeat keeps its four elements.
func TestHeartbeatSessions(t *testing.T) {
	for _, hb := range []wire.Heartbeat{
		{Timestamp: 1, NumRunning: 2},
		{Timestamp: 1, Sessions: &wire.SessionReport{EngineIndex: 1, Full: true, Added: []string{"a"}}},
	} {
		frames, err := wire.Encode(wire.MsgHeartbeat, &hb)
		if err != nil {
			t.Fatal(err)
		}
		if want := byte(0x94 + btoi(hb.Sessions != nil)); frames[1][0] != want {
			t.Errorf("array header %#x, want %#x", frames[1][0], want)
		}
		_, got, err := wire.Decode(frames)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&hb, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
