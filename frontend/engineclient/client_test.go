package engineclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// routeLog records OnRoute calls.
type routeLog struct {
	mu  sync.Mutex
	got []string
}

func (l *routeLog) add(policy, outcome string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, policy+"/"+outcome)
}

func (l *routeLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func dial(t *testing.T, cfg engineclient.Config) *engineclient.Client {
	t.Helper()
	cfg.HeartbeatInterval, cfg.HeartbeatTimeout, cfg.Logger = hbInterval, hbTimeout, quiet
	c, err := engineclient.Dial(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allReady(c *engineclient.Client, n int) func() bool {
	return func() bool {
		ready := 0
		for _, e := range c.Engines() {
			if e.Ready && !e.Syncing {
				ready++
			}
		}
		return ready == n
	}
}

func submit(t *testing.T, c *engineclient.Client, id, session string) *engineclient.Stream {
	t.Helper()
	st, err := c.Submit(context.Background(), &wire.EngineCoreRequest{
		RequestID: id, SessionID: session, PromptTokenIDs: []int32{1, 2, 3, 4, 5, 6}, SamplingParams: wire.DefaultSamplingParams(),
	})
	if err != nil {
		t.Fatalf("Submit(%s): %v", id, err)
	}
	return st
}

// collect reads a stream to its end: the tokens, and the error if it
// ended with one.
func collect(t *testing.T, st *engineclient.Stream) ([]int32, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var toks []int32
	for {
		out, err := st.Next(ctx)
		if errors.Is(err, io.EOF) {
			return toks, nil
		}
		if err != nil {
			return toks, err
		}
		toks = append(toks, out.NewTokenIDs...)
	}
}

// TestEngineFailures: an engine that dies before a request's first output
// costs nothing (the request runs on another engine); one that dies
// after the first output ends the stream with ErrEngineDead; an engine
// that restarted and does not know us answers "unknown frontend", which
// is retried too.
func TestEngineFailures(t *testing.T) {
	tests := []struct {
		name       string
		onAdd      func(f *fakeEngine, client string, req *wire.EngineCoreRequest)
		wantToks   []int32
		wantErr    error
		wantRoutes []string
	}{
		{
			name:       "dies before the first output",
			onAdd:      func(f *fakeEngine, _ string, _ *wire.EngineCoreRequest) { go f.kill() },
			wantToks:   []int32{1},
			wantRoutes: []string{"round-robin/round_robin", "round-robin/round_robin"},
		},
		{
			name: "dies after the first output",
			onAdd: func(f *fakeEngine, client string, req *wire.EngineCoreRequest) {
				f.output(client, wire.EngineCoreOutput{RequestID: req.RequestID, NewTokenIDs: []int32{42}})
				time.AfterFunc(50*time.Millisecond, f.kill) // let the output leave first (close has linger 0)
			},
			wantToks:   []int32{42},
			wantErr:    engineclient.ErrEngineDead,
			wantRoutes: []string{"round-robin/round_robin"},
		},
		{
			name: "restarted and forgot us",
			onAdd: func(f *fakeEngine, client string, req *wire.EngineCoreRequest) {
				f.output(client, wire.EngineCoreOutput{RequestID: req.RequestID, FinishReason: wire.FinishError, StopReason: "unknown frontend: send HELLO first", ErrorCode: wire.CodeUnknownFrontend})
			},
			wantToks:   []int32{1},
			wantRoutes: []string{"round-robin/round_robin", "round-robin/round_robin"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
			e0.setOnAdd(tt.onAdd)
			var log routeLog
			c := dial(t, engineclient.Config{Endpoints: []string{e0.endpoint, e1.endpoint}, Routing: router.RoundRobin, OnRoute: log.add})
			waitFor(t, "both engines ready", allReady(c, 2))
			toks, err := collect(t, submit(t, c, "req-1", ""))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("stream error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantToks, toks); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRoutes, log.list()); diff != "" {
				t.Errorf("routing decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoRetryAfterClose: a request closed by its reader is not resent
// when its engine dies.
func TestNoRetryAfterClose(t *testing.T) {
	e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
	e0.setOnAdd(func(*fakeEngine, string, *wire.EngineCoreRequest) {})
	c := dial(t, engineclient.Config{Endpoints: []string{e0.endpoint, e1.endpoint}, Routing: router.RoundRobin})
	waitFor(t, "both engines ready", allReady(c, 2))
	st := submit(t, c, "req-1", "")
	waitFor(t, "the request at engine 0", func() bool { return len(e0.requestIDs()) == 1 })
	st.Close()
	e0.kill()
	time.Sleep(2 * hbTimeout)
	if got := e1.requestIDs(); len(got) != 0 {
		t.Errorf("engine 1 got %v after the request was closed", got)
	}
}

// TestSessionReportsRoute: a session an engine reports holding goes there,
// whatever the rendezvous order says, and its sessions move when it dies;
// the report comes in a heartbeat, or (an older engine) on the PUB socket.
func TestSessionReportsRoute(t *testing.T) {
	for _, viaPub := range []bool{false, true} {
		t.Run(map[bool]string{false: "heartbeat", true: "pub"}[viaPub], func(t *testing.T) { testSessionReportsRoute(t, viaPub) })
	}
}

func testSessionReportsRoute(t *testing.T, viaPub bool) {
	e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
	var log routeLog
	c := dial(t, engineclient.Config{Endpoints: []string{e0.endpoint, e1.endpoint}, OnRoute: log.add})
	waitFor(t, "both engines ready", allReady(c, 2))
	// Find a session rendezvous places on engine 0, then have engine 1 report it.
	var id string
	for i := 0; id == ""; i++ {
		cand := fmt.Sprintf("conv-%d", i)
		r, _ := router.New(router.Config{})
		d, _ := r.Route(router.Request{SessionID: cand}, []router.Engine{{ID: 0, Name: e0.endpoint, BlockSize: 4}, {ID: 1, Name: e1.endpoint, Rank: 1, BlockSize: 4}})
		if d.Engine == 0 {
			id = cand
		}
	}
	waitFor(t, "engine 1's report to arrive", func() bool {
		rep := &wire.SessionReport{EngineIndex: 1, Full: true, Added: []string{id}}
		if viaPub {
			e1.publish(wire.TopicSessions, rep)
		} else {
			e1.heartbeatSessions(rep)
		}
		return slices.Equal(c.Router().Holders(id), []int{1})
	})
	st := submit(t, c, "req-1", id)
	if toks, err := collect(t, st); err != nil || !slices.Equal(toks, []int32{1}) {
		t.Fatalf("turn 1: %v %v, want engine 1's token", toks, err)
	}
	e1.kill()
	waitFor(t, "engine 1 declared dead", allReady(c, 1))
	if toks, err := collect(t, submit(t, c, "req-2", id)); err != nil || !slices.Equal(toks, []int32{0}) {
		t.Fatalf("turn 2: %v %v, want engine 0's token", toks, err)
	}
	want := []string{"session/session_hit", "session/session_moved"}
	if diff := cmp.Diff(want, log.list()); diff != "" {
		t.Errorf("routing decisions (-want +got):\n%s", diff)
	}
}

// TestLoadReports: least-loaded follows the engines' 100 ms load reports.
func TestLoadReports(t *testing.T) {
	e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
	c := dial(t, engineclient.Config{Endpoints: []string{e0.endpoint, e1.endpoint}, Routing: router.LeastLoaded})
	waitFor(t, "both engines ready", allReady(c, 2))
	waitFor(t, "engine 0's load report", func() bool {
		e0.publish(wire.TopicLoad, &wire.LoadReport{EngineIndex: 0, NumWaiting: 5, NumRunning: 3, NumTotalBlocks: 64, NumFreeBlocks: 10})
		e := c.Engines()[0]
		return e.NumWaiting == 5 && e.UsedBlocks == 54
	})
	for i := range 3 {
		if toks, err := collect(t, submit(t, c, fmt.Sprint("req-", i), "")); err != nil || !slices.Equal(toks, []int32{1}) {
			t.Fatalf("request %d: %v %v, want engine 1", i, toks, err)
		}
	}
}

// TestDNSMembership: engines behind a dns+tcp name join and leave as its
// A records change, while requests keep flowing.
func TestDNSMembership(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	a := startFake(t, 0, fmt.Sprintf("tcp://127.0.0.1:%d", port))
	b := startFake(t, 1, fmt.Sprintf("tcp://127.0.0.2:%d", port))
	var mu sync.Mutex
	records := []net.IP{net.ParseIP("127.0.0.1")}
	lookup := func(_ context.Context, host string) ([]net.IP, error) {
		mu.Lock()
		defer mu.Unlock()
		if host != "engines.test" {
			return nil, fmt.Errorf("no such host %q", host)
		}
		return slices.Clone(records), nil
	}
	setRecords := func(ips ...string) {
		mu.Lock()
		defer mu.Unlock()
		records = nil
		for _, ip := range ips {
			records = append(records, net.ParseIP(ip))
		}
	}
	c := dial(t, engineclient.Config{Endpoints: []string{fmt.Sprintf("dns+tcp://engines.test:%d", port)}, Routing: router.RoundRobin,
		ResolveInterval: 30 * time.Millisecond, LookupIP4: lookup})
	endpoints := func() []string {
		var eps []string
		for _, e := range c.Engines() {
			if e.Ready {
				eps = append(eps, e.Endpoint)
			}
		}
		slices.Sort(eps)
		return eps
	}
	waitFor(t, "engine a", func() bool { return slices.Equal(endpoints(), []string{a.endpoint}) })
	setRecords("127.0.0.1", "127.0.0.2")
	waitFor(t, "engine b to join", func() bool { return slices.Equal(endpoints(), []string{a.endpoint, b.endpoint}) })
	setRecords("127.0.0.2")
	waitFor(t, "engine a to leave", func() bool { return slices.Equal(endpoints(), []string{b.endpoint}) })
	if toks, err := collect(t, submit(t, c, "req-1", "")); err != nil || !slices.Equal(toks, []int32{1}) {
		t.Errorf("after a left: %v %v, want engine b's token", toks, err)
	}
	if n := len(c.Engines()); n != 1 {
		t.Errorf("Engines() lists %d engines, want 1 (those that left are not listed)", n)
	}
}

// TestPinnedRank: X-data-parallel-rank pins the engine by its rank.
func TestPinnedRank(t *testing.T) {
	e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
	c := dial(t, engineclient.Config{Endpoints: []string{e1.endpoint, e0.endpoint}}) // index ≠ rank
	waitFor(t, "both engines ready", allReady(c, 2))
	for _, rank := range []int{0, 1, 0} {
		st, err := c.Generate(context.Background(), []int32{1}, wire.DefaultSamplingParams(), fmt.Sprint("r", rank, time.Now().UnixNano()), engineclient.WithDataParallelRank(rank))
		if err != nil {
			t.Fatal(err)
		}
		if toks, err := collect(t, st.Children[0]); err != nil || !slices.Equal(toks, []int32{int32(rank)}) {
			t.Errorf("pinned to rank %d: %v %v", rank, toks, err)
		}
	}
	_, err := c.Generate(context.Background(), []int32{1}, wire.DefaultSamplingParams(), "r9", engineclient.WithDataParallelRank(9))
	if !errors.Is(err, engineclient.ErrEngineDead) {
		t.Errorf("rank 9: %v, want ErrEngineDead", err)
	}
}

// TestLoadBetweenReports: between two reports the client counts the
// requests it sent, so a burst does not all go to the engine that looked
// idle at the last report.
func TestLoadBetweenReports(t *testing.T) {
	e0, e1 := startFake(t, 0, ""), startFake(t, 1, "")
	hold := func(f *fakeEngine, _ string, _ *wire.EngineCoreRequest) {
		f.mu.Lock()
		f.load.NumRunning++
		f.mu.Unlock()
	}
	e0.setOnAdd(hold)
	e1.setOnAdd(hold)
	e0.mu.Lock()
	e0.load.NumRunning = 2
	e0.mu.Unlock()
	c := dial(t, engineclient.Config{Endpoints: []string{e0.endpoint, e1.endpoint}, Routing: router.LeastLoaded})
	waitFor(t, "both engines ready", allReady(c, 2))
	waitFor(t, "engine 0's heartbeat", func() bool { return c.Engines()[0].NumRunning == 2 })
	for i := range 4 {
		st := submit(t, c, fmt.Sprint("req-", i), "")
		defer st.Close()
	}
	waitFor(t, "4 requests at the engines", func() bool { return len(e0.requestIDs())+len(e1.requestIDs()) == 4 })
	if n0, n1 := len(e0.requestIDs()), len(e1.requestIDs()); n0 < 1 || n1 < 2 {
		t.Errorf("engine 0 got %d, engine 1 got %d requests; want the burst shared once engine 1 caught up", n0, n1)
	}
}

// TestRedialsASilentEngine: an engine that stops answering this frontend's
// identity (its route lost, or taken) is marked down after the heartbeat
// timeout and re-dialled under a new identity, and is ready again.
func TestRedialsASilentEngine(t *testing.T) {
	f := startFake(t, 0, "")
	c := dial(t, engineclient.Config{Endpoints: []string{f.endpoint}})
	waitFor(t, "ready", allReady(c, 1))
	f.shunClients()
	if f.numShunned() != 1 {
		t.Fatalf("%d identities shunned, want the client's one", f.numShunned())
	}
	// The old identity gets no answer; only a new one can be ready.
	waitFor(t, "ready again on a new identity", func() bool { return c.Engines()[0].Ready && f.numClients() == 1 })
	g, err := c.Generate(context.Background(), []int32{1}, wire.DefaultSamplingParams(), "after-redial")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := g.Next(ctx); err != nil {
		t.Fatalf("request after the re-dial: %v", err)
	}
}

// TestRestartAddsEachRequestOnce: with one engine, a request sent while
// the engine restarts reaches the new process once. Before, it was
// re-sent on the "unknown frontend" answer and again when READY with the
// new engine id failed the old process's streams over: the second ADD
// got "duplicate request id" (a 400 for a good request).
func TestRestartAddsEachRequestOnce(t *testing.T) {
	old := startStrictFake(t, 0, "")
	c := dial(t, engineclient.Config{Endpoints: []string{old.endpoint}})
	waitFor(t, "ready", allReady(c, 1))
	old.kill()
	st := submit(t, c, "during-restart", "") // queued in the DEALER, sent on reconnection
	fresh := startStrictFake(t, 0, old.endpoint)
	toks, err := collect(t, st)
	if err != nil || len(toks) != 1 {
		t.Fatalf("request across the restart: %v tokens, %v", toks, err)
	}
	waitFor(t, "READY from the new engine", func() bool { return c.Engines()[0].Info.EngineID == fresh.id })
	time.Sleep(3 * hbInterval) // any failover of the READY would resend by now
	if got := fresh.requestIDs(); len(got) != 1 {
		t.Fatalf("the new engine got ADDs %v, want the request once", got)
	}
}

// TestAuditFailsLostRequests: a request its live engine no longer lists
// fails with ErrRequestLost once quiet for the audit interval (before, it
// waited forever); one the engine still lists (a long prefill) waits on.
func TestAuditFailsLostRequests(t *testing.T) {
	f := startFake(t, 0, "")
	f.setOnAdd(func(f *fakeEngine, _ string, req *wire.EngineCoreRequest) {
		if req.RequestID == "prefilling" {
			f.mu.Lock()
			f.listed[req.RequestID] = true
			f.mu.Unlock()
		}
	})
	c := dial(t, engineclient.Config{Endpoints: []string{f.endpoint}, AuditInterval: 100 * time.Millisecond})
	waitFor(t, "ready", allReady(c, 1))
	lost, kept := submit(t, c, "lost", ""), submit(t, c, "prefilling", "")
	defer kept.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := lost.Next(ctx); !errors.Is(err, engineclient.ErrRequestLost) {
		t.Fatalf("lost request: %v, want ErrRequestLost", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	if _, err := kept.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("listed request: %v, want it still waiting", err)
	}
}
