package enginecore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

// TestKVLog: the replay buffer keeps the last batches, and the mirror
// follows stores, removals and clears into a snapshot of chains, parents
// first, cut into batches.
func TestKVLog(t *testing.T) {
	stored := func(parent uint64, hasParent bool, hashes ...uint64) *wire.BlockStored {
		s := &wire.BlockStored{BlockHashes: hashes, ParentHash: parent, HasParent: hasParent, BlockSize: 1}
		for _, h := range hashes {
			s.TokenIDs = append(s.TokenIDs, int32(h))
		}
		return s
	}
	l := newKVLog(3, wire.KVLayoutMap)
	for i, evs := range [][]wire.KVEvent{
		{stored(0, false, 1, 2, 3)},                                        // a chain 1 → 2 → 3
		{stored(2, true, 5), &wire.BlockRemoved{BlockHashes: []uint64{3}}}, // 2 → 5; 3 gone
		{stored(0, false, 9)},                                              // another root
		{stored(7, true, 8)},                                               // an orphan: its parent was never stored
	} {
		if seq := l.append(&wire.KVEventBatch{Events: evs}, []byte{byte(i)}); seq != uint64(i) {
			t.Fatalf("append %d: seq %d", i, seq)
		}
	}
	var got []uint64
	for _, b := range l.since(0) {
		got = append(got, b.seq)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3}, got); diff != "" {
		t.Errorf("since(0) seqs (-want +got):\n%s", diff)
	}
	batches, next := l.snapshot(1, 0, 2)
	if next != 4 {
		t.Errorf("snapshot continues at %d, want 4", next)
	}
	type ev struct {
		Parent uint64
		Hashes []uint64
	}
	var shape [][]ev
	for _, b := range batches {
		var evs []ev
		for _, e := range b.Events {
			s := e.(*wire.BlockStored)
			evs = append(evs, ev{s.ParentHash, s.BlockHashes})
		}
		shape = append(shape, evs)
	}
	want := [][]ev{{{0, []uint64{1, 2}}}, {{2, []uint64{5}}, {7, []uint64{8}}}, {{0, []uint64{9}}}}
	if diff := cmp.Diff(want, shape); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	l.append(&wire.KVEventBatch{Events: []wire.KVEvent{&wire.AllBlocksCleared{}}}, nil)
	if batches, _ := l.snapshot(1, 0, 2); len(batches) != 0 {
		t.Errorf("after AllBlocksCleared: %d batches", len(batches))
	}
}

// TestKVLogSnapshotKeepsTheAdapter: a snapshot names each block's LoRA
// adapter as its live event did, and a chain whose blocks came from
// requests with different adapters splits where the adapter changes.
func TestKVLogSnapshotKeepsTheAdapter(t *testing.T) {
	l := newKVLog(4, wire.KVLayoutMap)
	l.append(&wire.KVEventBatch{Events: []wire.KVEvent{
		&wire.BlockStored{BlockHashes: []uint64{1, 2}, TokenIDs: []int32{1, 2}, BlockSize: 1},
		&wire.BlockStored{BlockHashes: []uint64{3}, ParentHash: 2, HasParent: true, TokenIDs: []int32{3}, BlockSize: 1, LoraName: "alpha", LoraID: 4},
	}}, nil)
	batches, _ := l.snapshot(1, 0, 16)
	var got []*wire.BlockStored
	for _, b := range batches {
		for _, e := range b.Events {
			got = append(got, e.(*wire.BlockStored))
		}
	}
	want := []*wire.BlockStored{
		{BlockHashes: []uint64{1, 2}, TokenIDs: []int32{1, 2}, BlockSize: 1, Medium: wire.MediumGPU},
		{BlockHashes: []uint64{3}, ParentHash: 2, HasParent: true, TokenIDs: []int32{3}, BlockSize: 1, Medium: wire.MediumGPU, LoraName: "alpha", LoraID: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
}
