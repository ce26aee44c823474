package enginecore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// pubEngine is an engine core with a KV-events PUB socket, a subscriber
// on it and a replay socket.
type pubEngine struct {
	ep     string // ROUTER
	replay string // replay ROUTER
	sub    *zmq.Conn
}

const testTopic = "kv@pod-3@dummy"

func startPubEngine(t *testing.T, numBlocks int) *pubEngine {
	t.Helper()
	cfg, w := model.Dummy(512)
	be, err := cpu.New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	core, err := enginecore.New(enginecore.Config{
		EngineIndex: 3, Model: "dummy", ServedModelName: "dummy", MaxModelLen: 512, BlockSize: 16, NumBlocks: numBlocks,
		MaxNumSeqs: 16, MaxNumBatchedTokens: 256, EnablePrefixCaching: true,
		HeartbeatInterval: hbInterval, HeartbeatTimeout: hbTimeout, ReportInterval: 20 * time.Millisecond, Logger: quiet,
		KVEvents: enginecore.KVEventsConfig{Topic: testTopic, BufferSteps: 100},
	}, be)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine.sock")
	rt, err := zmq.BindRouter(ep)
	if err != nil {
		t.Fatal(err)
	}
	pubEP := "ipc://" + filepath.Join(dir, "events.sock")
	pub, err := zmq.BindPub(pubEP)
	if err != nil {
		t.Fatal(err)
	}
	replayEP := "ipc://" + filepath.Join(dir, "replay.sock")
	replay, err := zmq.BindRouter(replayEP)
	if err != nil {
		t.Fatal(err)
	}
	core.ServeReplay(replay)
	sub, err := zmq.DialSub(pubEP, []string{""})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- core.Serve(ctx, rt, pub) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		sub.Close()
		rt.Close()
		pub.Close()
		replay.Close()
		be.Close()
	})
	return &pubEngine{ep: ep, replay: replayEP, sub: sub}
}

// ask sends one request to the replay socket and returns the batches of
// the answer, up to its end marker.
func (e *pubEngine) ask(t *testing.T, req []byte) (seqs []uint64, batches []wire.KVEventBatch) {
	t.Helper()
	d, err := zmq.DialDealer(e.replay)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Send([][]byte{{}, req}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case frames := <-d.Recv():
			if len(frames) != 4 || len(frames[0]) != 0 {
				t.Fatalf("replay answer of %d frames", len(frames))
			}
			if wire.IsReplayEnd(frames[1:]) {
				return seqs, batches
			}
			topic, seq, payload, err := wire.ParsePub(frames[1:])
			if err != nil || topic != testTopic {
				t.Fatalf("replay frame: topic %q, %v", topic, err)
			}
			var b wire.KVEventBatch
			if err := wire.Unmarshal(payload, &b); err != nil {
				t.Fatal(err)
			}
			seqs, batches = append(seqs, seq), append(batches, b)
		case <-deadline:
			t.Fatal("no end of the replay answer")
		}
	}
}

// askUntil asks again until ok accepts the answer (what a step published
// may be logged just after its outputs went out).
func (e *pubEngine) askUntil(t *testing.T, req []byte, ok func([]wire.KVEventBatch) bool) ([]uint64, []wire.KVEventBatch) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		seqs, batches := e.ask(t, req)
		if ok(batches) || time.Now().After(deadline) {
			return seqs, batches
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// numEvents counts the events of type T in batches.
func numEvents[T wire.KVEvent](batches []wire.KVEventBatch) int {
	n := 0
	for _, b := range batches {
		for _, ev := range b.Events {
			if _, ok := ev.(T); ok {
				n++
			}
		}
	}
	return n
}

// watch says HELLO on a raw DEALER and returns the heartbeats the engine
// sends it (keeping it alive with heartbeats of its own).
func watch(t *testing.T, ep string) <-chan *wire.Heartbeat {
	t.Helper()
	d, err := zmq.DialDealer(ep)
	if err != nil {
		t.Fatal(err)
	}
	send := func(mt wire.MsgType, v any) {
		frames, err := wire.Encode(mt, v)
		if err == nil {
			_ = d.Send(frames)
		}
	}
	send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "watcher", PID: 1})
	stop := make(chan struct{})
	out := make(chan *wire.Heartbeat, 1024)
	go func() {
		tick := time.NewTicker(hbInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				send(wire.MsgHeartbeat, &wire.Heartbeat{Timestamp: 1})
			case frames := <-d.Recv():
				if _, v, err := wire.Decode(frames); err == nil {
					if hb, ok := v.(*wire.Heartbeat); ok {
						select {
						case out <- hb:
						default:
						}
					}
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); d.Close() })
	return out
}

// TestEnginePublishesKVEvents: the blocks a request computes arrive as
// BlockStored events whose hashes the router recomputes from the prompt,
// and evictions as BlockRemoved.
func TestEnginePublishesKVEvents(t *testing.T) {
	e := startPubEngine(t, 8) // 8 blocks of 16: the second prompt evicts the first's
	c := dial(t, e.ep)
	prompt := make([]int32, 70)
	for i := range prompt {
		prompt[i] = int32(i%200 + 1)
	}
	st, err := c.Generate(context.Background(), prompt, greedy(2), "req-1", engineclient.WithSessionID("conv-1"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, st)
	// The subscription may not have taken before the first batch (ZMQ's
	// late joiner): the replay socket resends from 0.
	var stored []uint64
	seqs, batches := e.askUntil(t, wire.ReplayRequest(0), func(b []wire.KVEventBatch) bool { return numEvents[*wire.BlockStored](b) > 0 })
	for i, b := range batches {
		if seqs[i] != uint64(i) {
			t.Errorf("replayed seq %d at %d", seqs[i], i)
		}
		if b.DPRank != 3 {
			t.Errorf("dp_rank %d, want 3", b.DPRank)
		}
		for _, ev := range b.Events {
			if s, ok := ev.(*wire.BlockStored); ok {
				stored = append(stored, s.BlockHashes...)
				if s.BlockSize != 16 || len(s.TokenIDs) != 16*len(s.BlockHashes) {
					t.Errorf("BlockStored block_size %d with %d tokens for %d hashes", s.BlockSize, len(s.TokenIDs), len(s.BlockHashes))
				}
				if s.SessionID != "conv-1" || s.Medium != wire.MediumGPU {
					t.Errorf("BlockStored session %q, medium %q", s.SessionID, s.Medium)
				}
			}
		}
	}
	if len(stored) < 4 {
		t.Fatalf("replay holds %d stored blocks, want 4", len(stored))
	}
	want := wire.BlockHashes(nil, prompt, 16, "")
	if diff := cmp.Diff(want, stored[:4]); diff != "" {
		t.Errorf("stored hashes (-wire.BlockHashes +engine):\n%s", diff)
	}

	other := make([]int32, 100)
	for i := range other {
		other[i] = int32(i%100 + 100)
	}
	st, err = c.Generate(context.Background(), other, greedy(2), "req-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, fin := drain(t, st); fin == wire.FinishError {
		t.Fatal("the second request failed")
	}
	var removed []uint64
	_, batches = e.askUntil(t, wire.ReplayRequest(uint64(len(seqs))), func(b []wire.KVEventBatch) bool { return numEvents[*wire.BlockRemoved](b) > 0 })
	for _, b := range batches {
		for _, ev := range b.Events {
			if r, ok := ev.(*wire.BlockRemoved); ok {
				removed = append(removed, r.BlockHashes...)
			}
		}
	}
	if len(removed) == 0 {
		t.Error("no BlockRemoved after the second prompt")
	}
	for _, h := range removed {
		if !slices.Contains(stored, h) {
			t.Errorf("BlockRemoved %x was never stored", h)
		}
	}
}

// TestEnginePublishesSessions: a session is announced (in a heartbeat)
// when its request arrives, and the snapshot lists what the engine holds.
func TestEnginePublishesSessions(t *testing.T) {
	e := startPubEngine(t, 64)
	hbs := watch(t, e.ep)
	c := dial(t, e.ep)
	prompt := make([]int32, 40) // two full blocks stay cached after the request
	for i, sess := range []string{"conv-b", "conv-a", "conv-b"} {
		prompt[0] = int32(i + 1)
		st, err := c.Generate(context.Background(), prompt, greedy(1), fmt.Sprint("req-", i), engineclient.WithSessionID(sess))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, st)
	}
	var deltas []string
	deadline := time.After(5 * time.Second)
	for done := false; !done; {
		var hb *wire.Heartbeat
		select {
		case hb = <-hbs:
		case <-deadline:
			t.Fatal("no snapshot listing conv-a and conv-b")
		}
		rep := hb.Sessions
		switch {
		case rep == nil:
			continue
		case rep.EngineIndex != 3:
			t.Errorf("engine_index %d, want 3", rep.EngineIndex)
		case !rep.Full:
			deltas = append(deltas, rep.Added...)
		case slices.Equal(rep.Added, []string{"conv-a", "conv-b"}):
			done = true
		}
	}
	if diff := cmp.Diff([]string{"conv-b", "conv-a"}, deltas); diff != "" {
		t.Errorf("session deltas (-want +got):\n%s", diff)
	}
	raw, err := c.Call(context.Background(), 0, "get_sessions")
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	if err := wire.Unmarshal(raw, &held); err != nil || !slices.Equal(held, []string{"conv-a", "conv-b"}) {
		t.Errorf("get_sessions = %v, %v; want [conv-a conv-b]", held, err)
	}
}

// TestEngineLoadReportRate: the load comes in a heartbeat every
// ReportInterval, nothing but KV events is on the PUB socket, and the
// engine tells where it publishes and where it answers replays.
func TestEngineLoadReportRate(t *testing.T) {
	e := startPubEngine(t, 64)
	hbs := watch(t, e.ep)
	var n int
	var last *wire.Heartbeat
	window := time.After(500 * time.Millisecond)
	for done := false; !done; {
		select {
		case last = <-hbs:
			n++
		case frames := <-e.sub.Recv():
			t.Errorf("idle engine published %q", frames[0])
		case <-window:
			done = true
		}
	}
	if n < 10 {
		t.Errorf("%d heartbeats in 500 ms at a 20 ms report interval, want ≥ 10", n)
	}
	if st := last.SchedulerStats; st == nil || st.NumTotalBlocks != 64 || st.NumFreeBlocks != 64 {
		t.Errorf("heartbeat stats %+v", st)
	}
	c := dial(t, e.ep)
	raw, err := c.Call(context.Background(), 0, "get_events_endpoint")
	if err != nil {
		t.Fatal(err)
	}
	var ep string
	if err := wire.Unmarshal(raw, &ep); err != nil || filepath.Base(ep) != "events.sock" {
		t.Errorf("get_events_endpoint = %q, %v", ep, err)
	}
	if raw, err = c.Call(context.Background(), 0, "get_replay_endpoint"); err != nil {
		t.Fatal(err)
	}
	if err := wire.Unmarshal(raw, &ep); err != nil || filepath.Base(ep) != "replay.sock" {
		t.Errorf("get_replay_endpoint = %q, %v", ep, err)
	}
}

// TestEngineKVSnapshot: a subscriber that joins late asks for a snapshot
// and gets every cached block, parents first, chained from a root, with
// the sequence number live events continue from.
func TestEngineKVSnapshot(t *testing.T) {
	e := startPubEngine(t, 64)
	c := dial(t, e.ep)
	system := make([]int32, 48)
	for i := range system {
		system[i] = int32(i + 10)
	}
	var want [][]uint64
	for i, user := range []int32{100, 150} { // ids below the dummy vocabulary
		prompt := append(slices.Clone(system), make([]int32, 20)...)
		for j := 48; j < len(prompt); j++ {
			prompt[j] = user + int32(j)
		}
		st, err := c.Generate(context.Background(), prompt, greedy(1), fmt.Sprint("req-", i), engineclient.WithSessionID(fmt.Sprint("conv-", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, fin := drain(t, st); fin == wire.FinishError {
			t.Fatalf("request %d failed", i)
		}
		want = append(want, wire.BlockHashes(nil, prompt, 16, ""))
	}
	seqs, batches := e.askUntil(t, wire.SnapshotRequest, func(b []wire.KVEventBatch) bool {
		n := 0
		for _, bt := range b {
			for _, ev := range bt.Events {
				n += len(ev.(*wire.BlockStored).BlockHashes)
			}
		}
		return n == 5 // 3 shared blocks and one more per conversation
	})
	known := map[uint64]bool{}
	for i, b := range batches {
		if seqs[i] != seqs[0] {
			t.Errorf("snapshot seq frames %v differ", seqs)
		}
		for _, ev := range b.Events {
			s := ev.(*wire.BlockStored)
			if s.HasParent && !known[s.ParentHash] {
				t.Errorf("block %x comes before its parent %x", s.BlockHashes[0], s.ParentHash)
			}
			for _, h := range s.BlockHashes {
				known[h] = true
			}
		}
	}
	for _, chain := range want {
		for _, h := range chain {
			if !known[h] {
				t.Errorf("snapshot lacks block %x", h)
			}
		}
	}
	live, _ := e.ask(t, wire.ReplayRequest(0))
	if len(seqs) == 0 || seqs[0] != uint64(len(live)) {
		t.Errorf("snapshot continues at %v, %d batches were published", seqs, len(live))
	}
}
