package engineclient

import (
	"encoding/binary"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// fakeReplay answers snapshot and replay requests as an engine's replay
// socket does: the snapshot stores blocks 1 and 2 and says live batches
// continue at 5; batch seq (5, 6, 7 buffered) stores block 100+seq.
func fakeReplay(t *testing.T) string {
	t.Helper()
	ep := "ipc://" + filepath.Join(t.TempDir(), "replay.sock")
	r, err := zmq.BindRouter(ep)
	if err != nil {
		t.Skipf("no ZeroMQ here: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	stored := func(hashes ...uint64) []byte {
		b := &wire.KVEventBatch{Events: []wire.KVEvent{&wire.BlockStored{BlockHashes: hashes, TokenIDs: make([]int32, 2*len(hashes)), BlockSize: 2}}}
		p, err := wire.Marshal(b)
		if err != nil {
			t.Error(err)
		}
		return p
	}
	seqFrame := func(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }
	go func() {
		for frames := range r.Recv() {
			id := frames[0]
			from, snapshot, err := wire.ParseReplayRequest(frames[len(frames)-1])
			if err != nil {
				continue
			}
			if snapshot {
				_ = r.Send([][]byte{id, nil, seqFrame(5), stored(1, 2)})
			} else {
				for s := max(from, 5); s <= 7; s++ {
					_ = r.Send([][]byte{id, nil, seqFrame(s), stored(100 + s)})
				}
			}
			_ = r.Send([][]byte{id, {}, wire.ReplayEnd, {}})
		}
	}()
	return ep
}

// TestCatchUp: a frontend that joins late applies the snapshot, skips the
// live batches it covers, and fills a gap between the snapshot and the
// first live batch from a replay.
func TestCatchUp(t *testing.T) {
	ep := fakeReplay(t)
	r, err := router.New(router.Config{Policy: router.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{log: slog.New(slog.NewTextHandler(io.Discard, nil)), router: r, stop: make(chan struct{})}
	cu := c.loadSnapshot(0, ep)
	if !cu.active || cu.next != 5 || r.NumCachedBlocks(0) != 2 {
		t.Fatalf("after the snapshot: %+v, %d blocks; want next 5 and 2 blocks", cu, r.NumCachedBlocks(0))
	}
	if c.admit(0, &cu, 4) {
		t.Error("live batch 4, in the snapshot already, was admitted")
	}
	// The subscription took effect at 8: 5, 6 and 7 come from a replay.
	if !c.admit(0, &cu, 8) || cu.active {
		t.Errorf("live batch 8: not admitted, or still catching up (%+v)", cu)
	}
	if got := r.NumCachedBlocks(0); got != 5 {
		t.Errorf("%d blocks after the replay of 5–7, want 5", got)
	}
	if !c.admit(0, &cu, 3) {
		t.Error("after catching up, a live batch was not admitted")
	}
	if cu := c.loadSnapshot(1, ""); cu.active {
		t.Error("an engine without a replay socket gave a snapshot")
	}
}
