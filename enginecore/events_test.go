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

// pubEngine is an engine core with a PUB socket and a subscriber on it.
type pubEngine struct {
	ep  string // ROUTER
	sub *zmq.Conn
}

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
	sub, err := zmq.DialSub(pubEP, nil)
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
		be.Close()
	})
	// Wait for the subscription to take (ZMQ's late joiner): the first
	// load report.
	e := &pubEngine{ep: ep, sub: sub}
	e.next(t, wire.TopicLoad, 5*time.Second)
	return e
}

// next returns the next PUB message on topic, skipping others.
func (e *pubEngine) next(t *testing.T, topic string, timeout time.Duration) (uint64, []byte) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case frames := <-e.sub.Recv():
			tp, seq, payload, err := wire.ParsePub(frames)
			if err != nil {
				t.Fatal(err)
			}
			if tp == topic {
				return seq, payload
			}
		case <-deadline:
			t.Fatalf("no %q message within %s", topic, timeout)
		}
	}
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
	var stored []uint64
	for len(stored) < 4 {
		_, payload := e.next(t, wire.TopicKV, 5*time.Second)
		var b wire.KVEventBatch
		if err := wire.Unmarshal(payload, &b); err != nil {
			t.Fatal(err)
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
			}
		}
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
	for len(removed) == 0 {
		_, payload := e.next(t, wire.TopicKV, 5*time.Second)
		var b wire.KVEventBatch
		if err := wire.Unmarshal(payload, &b); err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			if r, ok := ev.(*wire.BlockRemoved); ok {
				removed = append(removed, r.BlockHashes...)
			}
		}
	}
	for _, h := range removed {
		if !slices.Contains(stored, h) {
			t.Errorf("BlockRemoved %x was never stored", h)
		}
	}
}

// TestEnginePublishesSessions: a session is announced when its request
// arrives, and the snapshot lists what the engine holds.
func TestEnginePublishesSessions(t *testing.T) {
	e := startPubEngine(t, 64)
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot listing conv-a and conv-b")
		}
		_, payload := e.next(t, wire.TopicSessions, 5*time.Second)
		var rep wire.SessionReport
		if err := wire.Unmarshal(payload, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.EngineIndex != 3 {
			t.Errorf("engine_index %d, want 3", rep.EngineIndex)
		}
		if !rep.Full {
			deltas = append(deltas, rep.Added...)
			continue
		}
		if slices.Equal(rep.Added, []string{"conv-a", "conv-b"}) {
			break
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

// TestEngineLoadReportRate: load reports come every ReportInterval and
// the engine tells where it publishes.
func TestEngineLoadReportRate(t *testing.T) {
	e := startPubEngine(t, 64)
	var n int
	var rep wire.LoadReport
	window := time.After(500 * time.Millisecond)
	for done := false; !done; {
		select {
		case frames := <-e.sub.Recv():
			tp, _, payload, err := wire.ParsePub(frames)
			if err != nil || tp != wire.TopicLoad {
				continue
			}
			n++
			if err := wire.Unmarshal(payload, &rep); err != nil {
				t.Fatal(err)
			}
		case <-window:
			done = true
		}
	}
	if n < 10 {
		t.Errorf("%d load reports in 500 ms at a 20 ms interval, want ≥ 10", n)
	}
	if rep.EngineIndex != 3 || rep.NumTotalBlocks != 64 || rep.NumFreeBlocks != 64 {
		t.Errorf("load report %+v", rep)
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
}
