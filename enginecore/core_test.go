package enginecore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

const (
	hbInterval = 50 * time.Millisecond
	hbTimeout  = 400 * time.Millisecond
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startEngine runs a dummy-model engine core on an ipc endpoint until the
// test ends and returns the endpoint.
func startEngine(t *testing.T, numBlocks int) string {
	t.Helper()
	return startEngineTimeout(t, numBlocks, hbTimeout)
}

// startEngineTimeout is startEngine with the engine's heartbeat timeout
// for its frontends.
func startEngineTimeout(t *testing.T, numBlocks int, timeout time.Duration) string {
	t.Helper()
	cfg, w := model.Dummy(512)
	be, err := cpu.New(cfg, w, 1)
	if err != nil {
		t.Fatal(err)
	}
	core, err := enginecore.New(enginecore.Config{
		Model: "dummy", ServedModelName: "dummy", MaxModelLen: 512, BlockSize: 16, NumBlocks: numBlocks,
		MaxNumSeqs: 16, MaxNumBatchedTokens: 256, EnablePrefixCaching: true,
		HeartbeatInterval: hbInterval, HeartbeatTimeout: timeout, Logger: quiet,
	}, be)
	if err != nil {
		t.Fatal(err)
	}
	ep := "ipc://" + filepath.Join(t.TempDir(), "engine.sock")
	router, err := zmq.BindRouter(ep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- core.Serve(ctx, router, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		router.Close()
		be.Close()
	})
	return ep
}

func dial(t *testing.T, ep string) *engineclient.Client {
	t.Helper()
	return dialTimeout(t, ep, hbTimeout)
}

// dialTimeout is dial with the client's heartbeat timeout for its engine.
func dialTimeout(t *testing.T, ep string, timeout time.Duration) *engineclient.Client {
	t.Helper()
	c, err := engineclient.Dial(engineclient.Config{Endpoints: []string{ep}, HeartbeatInterval: hbInterval, HeartbeatTimeout: timeout, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func greedy(maxTokens int) wire.SamplingParams {
	p := wire.DefaultSamplingParams()
	p.Temperature = 0
	p.MaxTokens = maxTokens
	p.IgnoreEOS = true
	return p
}

// drain reads a stream to its end and returns its tokens and finish reason.
func drain(t *testing.T, st *engineclient.Generation) ([]int32, wire.FinishReason) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var toks []int32
	for {
		out, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			t.Fatal("stream ended without a finish reason")
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		toks = append(toks, out.NewTokenIDs...)
		if out.FinishReason != wire.FinishNone {
			if _, err := st.Next(ctx); !errors.Is(err, io.EOF) {
				t.Fatalf("after the finish: %v, want io.EOF", err)
			}
			return toks, out.FinishReason
		}
	}
}

func TestGenerateCarriesSessionToTheEngine(t *testing.T) {
	c := dial(t, startEngine(t, 256))
	ctx := context.Background()
	// 20 prompt tokens fill a block: the engine keeps the record while it caches some of the session.
	prompt := []int32{72, 105, 32, 116, 104, 101, 114, 101, 44, 32, 104, 111, 119, 32, 97, 114, 101, 32, 121, 111}
	st, err := c.Generate(ctx, prompt, greedy(5), "req-1", engineclient.WithSessionID("conv-42"))
	if err != nil {
		t.Fatal(err)
	}
	toks, fin := drain(t, st)
	if len(toks) != 5 || fin != wire.FinishLength {
		t.Fatalf("got %d tokens, finish %v; want 5, length", len(toks), fin)
	}
	infos, err := c.Session(ctx, "conv-42")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].NumRequests != 1 || infos[0].NumPromptTokens != int64(len(prompt)) || infos[0].NumOutputTokens != 5 ||
		!slices.Equal(infos[0].RecentRequestIDs, []string{"req-1"}) {
		t.Fatalf("session info %+v", infos)
	}
	if infos, _ := c.Session(ctx, "unknown"); len(infos) != 0 {
		t.Fatalf("unknown session: %+v", infos)
	}
}

// TestGreedyAloneEqualsInBatch: a greedy request returns the same tokens
// alone and inside a busy batch.
func TestGreedyAloneEqualsInBatch(t *testing.T) {
	c := dial(t, startEngine(t, 512))
	prompt := []int32{84, 104, 101, 32, 113, 117, 105, 99, 107}
	st, err := c.Generate(context.Background(), prompt, greedy(12), "alone")
	if err != nil {
		t.Fatal(err)
	}
	alone, _ := drain(t, st)

	var wg sync.WaitGroup
	results := make([][]int32, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := append([]int32{int32(40 + i)}, prompt...)
			if i == 3 {
				p = prompt
			}
			s, err := c.Generate(context.Background(), p, greedy(12), "batch-"+string(rune('a'+i)))
			if err != nil {
				t.Error(err)
				return
			}
			results[i], _ = drain(t, s)
		}()
	}
	wg.Wait()
	if !slices.Equal(results[3], alone) {
		t.Fatalf("in a batch: %v\nalone:      %v", results[3], alone)
	}
}

func stats(t *testing.T, c *engineclient.Client) wire.SchedulerStats {
	t.Helper()
	raw, err := c.Call(context.Background(), 0, "get_stats")
	if err != nil {
		t.Fatal(err)
	}
	var st wire.SchedulerStats
	if err := wire.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func waitIdle(t *testing.T, c *engineclient.Client, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := stats(t, c)
		if st.NumRunningReqs == 0 && st.NumWaitingReqs == 0 && st.NumFreeBlocks == st.NumTotalBlocks {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not idle after %v: %+v", within, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCancelAbortsInTheEngine(t *testing.T) {
	c := dial(t, startEngine(t, 256))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Generate(ctx, []int32{1, 2, 3}, greedy(400), "long")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := st.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	waitIdle(t, c, 5*time.Second)
}

// TestSilentFrontendIsAborted: a frontend that sends ADD and then dies
// (no more heartbeats) has its requests aborted and blocks freed.
// rawFrontend dials ep as a bare DEALER, a frontend written by hand, and
// a send that encodes and sends one message; the caller closes it.
func rawFrontend(t *testing.T, ep string) (*zmq.Conn, func(wire.MsgType, any)) {
	t.Helper()
	raw, err := zmq.DialDealer(ep)
	if err != nil {
		t.Fatal(err)
	}
	return raw, func(typ wire.MsgType, p any) {
		frames, err := wire.Encode(typ, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Send(frames); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSilentFrontendIsAborted(t *testing.T) {
	ep := startEngine(t, 256)
	observer := dial(t, ep)
	raw, send := rawFrontend(t, ep)
	send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "doomed"})
	<-raw.Recv() // READY
	send(wire.MsgAdd, &wire.EngineCoreRequest{RequestID: "orphan", PromptTokenIDs: []int32{1, 2, 3}, SamplingParams: greedy(100000)})
	deadline := time.Now().Add(5 * time.Second)
	for stats(t, observer).NumRunningReqs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("orphan never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	raw.Close() // the frontend dies: no more heartbeats
	waitIdle(t, observer, 10*hbTimeout)
}

func TestProtocolVersionMismatchIsRefused(t *testing.T) {
	ep := startEngine(t, 64)
	raw, send := rawFrontend(t, ep)
	defer raw.Close()
	send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion + 1, FrontendID: "future"})
	select {
	case msg := <-raw.Recv():
		typ, p, err := wire.Decode(msg)
		if err != nil || typ != wire.MsgReady {
			t.Fatalf("got %v %v", typ, err)
		}
		if r := p.(*wire.Ready); r.Error == "" {
			t.Fatalf("READY %+v: want an error", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to HELLO: a mismatch must be an error, not a hang")
	}
}

// TestSilentEngineFailsStreams: an engine that stops answering fails the
// in-flight streams with ErrEngineDead instead of hanging them.
func TestSilentEngineFailsStreams(t *testing.T) {
	ep := "ipc://" + filepath.Join(t.TempDir(), "fake.sock")
	router, err := zmq.BindRouter(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	go func() {
		for msg := range router.Recv() {
			typ, _, _ := wire.Decode(msg[1:])
			if typ == wire.MsgHello {
				frames, _ := wire.Encode(wire.MsgReady, &wire.Ready{ProtocolVersion: wire.ProtocolVersion, Model: "dummy", EngineID: "fake", MaxModelLen: 64, BlockSize: 16, NumBlocks: 4, VocabSize: 320})
				_ = router.Send(append([][]byte{msg[0]}, frames...))
			}
			// Everything else, heartbeats included, goes unanswered.
		}
	}()
	c := dial(t, ep)
	st, err := c.Generate(context.Background(), []int32{1}, greedy(4), "stuck")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := st.Next(ctx); !errors.Is(err, engineclient.ErrEngineDead) {
		t.Fatalf("Next: %v, want ErrEngineDead", err)
	}
	if _, err := c.Generate(context.Background(), []int32{1}, greedy(4), "after"); !errors.Is(err, engineclient.ErrNoEngine) {
		t.Fatalf("Generate on a dead engine: %v, want ErrNoEngine", err)
	}
}

// TestParallelSamplingCarriesTheSession: a Go program with only
// engineclient asks for n=3 seeded samples in a session; it gets three
// sequences, and the engine records their three requests (0_…, 1_…, 2_…)
// under the session.
func TestParallelSamplingCarriesTheSession(t *testing.T) {
	c := dial(t, startEngine(t, 256))
	ctx := context.Background()
	prompt := make([]int32, 24)
	for i := range prompt {
		prompt[i] = int32(65 + i)
	}
	p := wire.DefaultSamplingParams()
	p.N, p.MaxTokens, p.IgnoreEOS = 3, 6, true
	seed := int64(7)
	p.Seed = &seed
	g, err := c.Generate(ctx, prompt, p, "par", engineclient.WithSessionID("conv-par"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Children) != 3 {
		t.Fatalf("%d samples, want 3", len(g.Children))
	}
	seqs := make([][]int32, 3)
	for {
		out, err := g.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seqs[out.Index] = append(seqs[out.Index], out.NewTokenIDs...)
	}
	for i, s := range seqs {
		if len(s) != 6 {
			t.Errorf("sample %d: %d tokens, want 6", i, len(s))
		}
	}
	if slices.Equal(seqs[0], seqs[1]) && slices.Equal(seqs[1], seqs[2]) {
		t.Errorf("three seeded samples are the same: %v", seqs)
	}
	infos, err := c.Session(ctx, "conv-par")
	if err != nil || len(infos) != 1 {
		t.Fatalf("session: %+v, %v", infos, err)
	}
	if got := infos[0].RecentRequestIDs; !slices.Equal(got, []string{"0_par", "1_par", "2_par"}) || infos[0].NumRequests != 3 {
		t.Fatalf("session records requests %v (%d), want 0_par 1_par 2_par", got, infos[0].NumRequests)
	}
}

// TestReportsCountTheFrontendsAdds: every heartbeat and OUTPUTS a
// frontend gets says how many of its ADDs (since its HELLO) the figures
// include, and the figures hold exactly those requests; a new HELLO
// counts anew.
func TestReportsCountTheFrontendsAdds(t *testing.T) {
	ep := startEngine(t, 256)
	raw, send := rawFrontend(t, ep)
	defer raw.Close()
	// next is the figures of the next heartbeat or OUTPUTS (answering
	// the engine's heartbeats keeps this frontend alive).
	next := func() *wire.SchedulerStats {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case frames := <-raw.Recv():
				_, v, err := wire.Decode(frames)
				if err != nil {
					t.Fatal(err)
				}
				switch m := v.(type) {
				case *wire.Heartbeat:
					send(wire.MsgHeartbeat, &wire.Heartbeat{Timestamp: 1})
					return m.SchedulerStats
				case *wire.EngineCoreOutputs:
					return m.SchedulerStats
				}
			case <-timeout:
				t.Fatal("no report from the engine")
			}
		}
	}
	send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "counter"})
	const n = 3
	for i := range n {
		send(wire.MsgAdd, &wire.EngineCoreRequest{RequestID: fmt.Sprint("r", i), PromptTokenIDs: []int32{1, 2, 3}, SamplingParams: greedy(100000)})
	}
	for seen := int64(0); seen < n; {
		st := next()
		if st == nil || st.AddsSeen == nil {
			t.Fatalf("report without adds_seen: %+v", st)
		}
		if *st.AddsSeen < seen || *st.AddsSeen > n {
			t.Fatalf("adds_seen %d after %d, with %d sent", *st.AddsSeen, seen, n)
		}
		seen = *st.AddsSeen
		if got := int64(st.NumRunningReqs + st.NumWaitingReqs); got != seen {
			t.Fatalf("figures hold %d requests, adds_seen says %d", got, seen)
		}
	}
	send(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "counter"})
	for {
		if st := next(); *st.AddsSeen == 0 {
			break
		}
	}
	send(wire.MsgAbort, &wire.Abort{RequestIDs: []string{"r0", "r1", "r2"}})
}
