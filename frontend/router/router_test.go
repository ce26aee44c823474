package router_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
)

const bs = 4 // block size of the test engines

func engines(n int) []router.Engine {
	es := make([]router.Engine, n)
	for i := range es {
		es[i] = router.Engine{ID: i, Name: fmt.Sprintf("ipc:///run/tandem/engine-%d.sock", i), Rank: i, BlockSize: bs}
	}
	return es
}

func newRouter(t *testing.T, p router.Policy) *router.Router {
	t.Helper()
	r, err := router.New(router.Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func route(t *testing.T, r *router.Router, req router.Request, es []router.Engine) router.Decision {
	t.Helper()
	d, err := r.Route(req, es)
	if err != nil {
		t.Fatalf("Route(%+v): %v", req, err)
	}
	return d
}

func seq(n int, base int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = base + int32(i)
	}
	return s
}

func stored(tokens []int32) *wire.KVEventBatch {
	return &wire.KVEventBatch{Events: []wire.KVEvent{&wire.BlockStored{BlockHashes: wire.BlockHashes(nil, tokens, bs, ""), BlockSize: bs}}}
}

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    router.Policy
		wantErr bool
	}{
		{"", router.Session, false},
		{"session", router.Session, false},
		{"prefix", router.Prefix, false},
		{"least-loaded", router.LeastLoaded, false},
		{"round-robin", router.RoundRobin, false},
		{"random", "", true},
	}
	for _, tt := range tests {
		got, err := router.ParsePolicy(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParsePolicy(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !errors.Is(err, router.ErrUnknownPolicy) {
			t.Errorf("ParsePolicy(%q) error %v does not wrap ErrUnknownPolicy", tt.in, err)
		}
	}
}

func TestBlockHashesChainAndSalt(t *testing.T) {
	toks := seq(10, 100)
	full := wire.BlockHashes(nil, toks, bs, "")
	if len(full) != 2 {
		t.Fatalf("10 tokens in blocks of 4: %d hashes, want 2 (the partial block has none)", len(full))
	}
	if diff := cmp.Diff(full[:1], wire.BlockHashes(nil, toks[:4], bs, "")); diff != "" {
		t.Errorf("a prefix's hashes are a prefix of the hashes (-want +got):\n%s", diff)
	}
	salted := wire.BlockHashes(nil, toks, bs, "tenant-a")
	for i := range full {
		if salted[i] == full[i] {
			t.Errorf("block %d: the salt must change every block through the chain", i)
		}
	}
	other := append(seq(4, 999), toks[4:]...)
	if h := wire.BlockHashes(nil, other, bs, ""); h[1] == full[1] {
		t.Error("block 1 with a different block 0 must hash differently (chaining)")
	}
}

func TestSessionPolicy(t *testing.T) {
	prompt := seq(9, 1)
	tests := []struct {
		name    string
		setup   func(r *router.Router)
		engines func() []router.Engine
		req     router.Request
		want    router.Decision
	}{
		{
			name: "reported holder",
			setup: func(r *router.Router) {
				r.ApplySessions(2, &wire.SessionReport{EngineIndex: 2, Added: []string{"conv"}})
			},
			engines: func() []router.Engine { return engines(3) },
			req:     router.Request{SessionID: "conv", TokenIDs: prompt},
			want:    router.Decision{Engine: 2, Policy: router.Session, Outcome: router.OutcomeSessionHit},
		},
		{
			name: "holder whose queue alone is over the bound spills",
			setup: func(r *router.Router) {
				r.ApplySessions(1, &wire.SessionReport{EngineIndex: 1, Added: []string{"conv"}})
			},
			engines: func() []router.Engine {
				es := engines(2)
				es[1].Waiting, es[1].Running = 40, 4 // mean load 22, bound 28.5; 40 ≥ SpillMinWaiting
				return es
			},
			req:  router.Request{SessionID: "conv", TokenIDs: prompt},
			want: router.Decision{Engine: 0, Policy: router.Session, Outcome: router.OutcomeSessionSpill},
		},
		{
			name: "a burst shorter than SpillMinWaiting keeps the session",
			setup: func(r *router.Router) {
				r.ApplySessions(1, &wire.SessionReport{EngineIndex: 1, Added: []string{"conv"}})
			},
			engines: func() []router.Engine {
				es := engines(2)
				es[1].Waiting = 20 // all waiting for the next step: mean 10, bound 13.5
				return es
			},
			req:  router.Request{SessionID: "conv", TokenIDs: prompt},
			want: router.Decision{Engine: 1, Policy: router.Session, Outcome: router.OutcomeSessionHit},
		},
		{
			name: "busy holder with a short queue keeps the session",
			setup: func(r *router.Router) {
				r.ApplySessions(1, &wire.SessionReport{EngineIndex: 1, Added: []string{"conv"}})
			},
			engines: func() []router.Engine {
				es := engines(2)
				es[1].Waiting, es[1].Running = 8, 12 // a burst: mean load 10, bound 13.5
				return es
			},
			req:  router.Request{SessionID: "conv", TokenIDs: prompt},
			want: router.Decision{Engine: 1, Policy: router.Session, Outcome: router.OutcomeSessionHit},
		},
		{
			name: "of two holders the longer cached prefix wins",
			setup: func(r *router.Router) {
				r.ApplySessions(0, &wire.SessionReport{EngineIndex: 0, Added: []string{"conv"}})
				r.ApplySessions(1, &wire.SessionReport{EngineIndex: 1, Added: []string{"conv"}})
				r.ApplyKV(0, stored(prompt[:4]))
				r.ApplyKV(1, stored(prompt[:8]))
			},
			engines: func() []router.Engine { return engines(2) },
			req:     router.Request{SessionID: "conv", TokenIDs: prompt},
			want:    router.Decision{Engine: 1, Policy: router.Session, Outcome: router.OutcomeSessionHit, CachedTokens: 8},
		},
		{
			name:    "pinned rank",
			setup:   func(r *router.Router) { r.ApplySessions(0, &wire.SessionReport{Added: []string{"conv"}}) },
			engines: func() []router.Engine { return engines(3) },
			req:     router.Request{SessionID: "conv", TokenIDs: prompt, Rank: ptr(2)},
			want:    router.Decision{Engine: 2, Policy: router.Session, Outcome: router.OutcomePinned},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(t, router.Session)
			tt.setup(r)
			if diff := cmp.Diff(tt.want, route(t, r, tt.req, tt.engines())); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestPinnedRankMissing(t *testing.T) {
	r := newRouter(t, router.Session)
	_, err := r.Route(router.Request{Rank: ptr(7)}, engines(2))
	if !errors.Is(err, router.ErrRankMissing) {
		t.Errorf("Route(rank 7 of 2) = %v, want ErrRankMissing", err)
	}
	if _, err := r.Route(router.Request{SessionID: "x"}, nil); !errors.Is(err, router.ErrNoEngine) {
		t.Errorf("Route(no engines) = %v, want ErrNoEngine", err)
	}
}

// TestFrontendsAgree: two routers that never talk place 200 new sessions
// on the same engines, and each session's later turns stay there.
func TestFrontendsAgree(t *testing.T) {
	a, b := newRouter(t, router.Session), newRouter(t, router.Session)
	es := engines(4)
	counts := map[int]int{}
	for i := range 200 {
		id := fmt.Sprintf("conv-%d", i)
		da := route(t, a, router.Request{SessionID: id}, es)
		db := route(t, b, router.Request{SessionID: id}, es)
		if da.Engine != db.Engine || da.Outcome != router.OutcomeSessionNew {
			t.Fatalf("%s: frontend A chose %+v, frontend B %+v", id, da, db)
		}
		counts[da.Engine]++
		if again := route(t, b, router.Request{SessionID: id}, es); again.Engine != da.Engine || again.Outcome != router.OutcomeSessionHit {
			t.Fatalf("%s: next turn %+v, want session_hit on %d", id, again, da.Engine)
		}
	}
	for e := range 4 {
		if counts[e] < 25 || counts[e] > 75 {
			t.Errorf("engine %d got %d of 200 sessions; rendezvous hashing should spread them (%v)", e, counts[e], counts)
		}
	}
}

// TestBoundedLoad: with the first-ranked engine over 1.25 × mean + 1 a new
// session goes to the next one.
func TestBoundedLoad(t *testing.T) {
	r := newRouter(t, router.Session)
	es := engines(2)
	first := route(t, newRouter(t, router.Session), router.Request{SessionID: "s"}, es).Engine
	es[first].Running = 10 // mean 5, bound 7.25
	d := route(t, r, router.Request{SessionID: "s"}, es)
	if d.Engine == first || d.Outcome != router.OutcomeSessionSpill {
		t.Errorf("decision %+v, want session_spill away from engine %d", d, first)
	}
	es[first].Running = 2 // mean 1, bound 2.25: within
	if d := route(t, newRouter(t, router.Session), router.Request{SessionID: "s"}, es); d.Engine != first || d.Outcome != router.OutcomeSessionNew {
		t.Errorf("decision %+v, want session_new on engine %d", d, first)
	}
}

// TestEngineLoss: an engine's sessions move to their next-ranked engine,
// the same on every frontend, and are labelled session_moved once.
func TestEngineLoss(t *testing.T) {
	es := engines(3)
	a, b := newRouter(t, router.Session), newRouter(t, router.Session)
	var victims []string
	for i := range 60 {
		id := fmt.Sprintf("c%d", i)
		if d := route(t, a, router.Request{SessionID: id}, es); d.Engine == 1 {
			victims = append(victims, id)
		}
	}
	a.ApplySessions(1, &wire.SessionReport{EngineIndex: 1, Full: true, Added: victims})
	a.ResetEngine(1)
	survivors := []router.Engine{es[0], es[2]}
	for _, id := range victims {
		d := route(t, a, router.Request{SessionID: id}, survivors)
		if d.Outcome != router.OutcomeSessionMoved {
			t.Errorf("%s: outcome %q, want session_moved", id, d.Outcome)
		}
		if other := route(t, b, router.Request{SessionID: id}, survivors); other.Engine != d.Engine {
			t.Errorf("%s: frontends disagree after the loss: %d vs %d", id, d.Engine, other.Engine)
		}
		if d := route(t, a, router.Request{SessionID: id}, survivors); d.Outcome != router.OutcomeSessionHit {
			t.Errorf("%s: next turn outcome %q, want session_hit", id, d.Outcome)
		}
	}
	if len(victims) == 0 {
		t.Fatal("no session landed on engine 1")
	}
}

func TestSessionReports(t *testing.T) {
	r := newRouter(t, router.Session)
	r.ApplySessions(0, &wire.SessionReport{Added: []string{"a", "b"}})
	r.ApplySessions(1, &wire.SessionReport{Added: []string{"b"}})
	r.ApplySessions(0, &wire.SessionReport{Removed: []string{"a"}})
	r.ApplySessions(1, &wire.SessionReport{Full: true, Added: []string{"c"}})
	got := map[string][]int{"a": r.Holders("a"), "b": r.Holders("b"), "c": r.Holders("c")}
	want := map[string][]int{"a": nil, "b": {0}, "c": {1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holders (-want +got):\n%s", diff)
	}
}

func TestPrefixPolicy(t *testing.T) {
	prompt := seq(17, 1) // 4 full blocks + 1 token
	tests := []struct {
		name    string
		setup   func(r *router.Router)
		engines func() []router.Engine
		want    router.Decision
	}{
		{
			name:    "longest cached prefix",
			setup:   func(r *router.Router) { r.ApplyKV(0, stored(prompt[:4])); r.ApplyKV(1, stored(prompt[:12])) },
			engines: func() []router.Engine { return engines(2) },
			want:    router.Decision{Engine: 1, Policy: router.Prefix, Outcome: router.OutcomePrefixHit, CachedTokens: 12},
		},
		{
			name:  "the hit never covers the last token",
			setup: func(r *router.Router) { r.ApplyKV(1, stored(seq(20, 1))) },
			engines: func() []router.Engine {
				return engines(2)
			},
			want: router.Decision{Engine: 1, Policy: router.Prefix, Outcome: router.OutcomePrefixHit, CachedTokens: 16},
		},
		{
			name:  "load outweighs a small hit",
			setup: func(r *router.Router) { r.ApplyKV(1, stored(prompt[:4])) },
			engines: func() []router.Engine {
				es := engines(2)
				es[1].UsedBlocks = 50
				return es
			},
			want: router.Decision{Engine: 0, Policy: router.Prefix, Outcome: router.OutcomeLoad},
		},
		{
			name: "evicted blocks no longer count",
			setup: func(r *router.Router) {
				r.ApplyKV(1, stored(prompt[:12]))
				r.ApplyKV(1, &wire.KVEventBatch{Events: []wire.KVEvent{&wire.BlockRemoved{BlockHashes: wire.BlockHashes(nil, prompt[:12], bs, "")[1:2]}}})
				r.ApplyKV(0, stored(prompt[:8]))
			},
			engines: func() []router.Engine { return engines(2) },
			want:    router.Decision{Engine: 0, Policy: router.Prefix, Outcome: router.OutcomePrefixHit, CachedTokens: 8},
		},
		{
			name: "cleared",
			setup: func(r *router.Router) {
				r.ApplyKV(1, stored(prompt[:12]))
				r.ApplyKV(1, &wire.KVEventBatch{Events: []wire.KVEvent{&wire.AllBlocksCleared{}}})
				r.ApplyKV(0, stored(prompt[:4]))
			},
			engines: func() []router.Engine { return engines(2) },
			want:    router.Decision{Engine: 0, Policy: router.Prefix, Outcome: router.OutcomePrefixHit, CachedTokens: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouter(t, router.Prefix)
			tt.setup(r)
			if diff := cmp.Diff(tt.want, route(t, r, router.Request{TokenIDs: prompt}, tt.engines())); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrefixPredicts: a burst of requests sharing a prefix lands together
// before any KV event arrives, and the prediction expires.
func TestPrefixPredicts(t *testing.T) {
	now := time.Unix(1000, 0)
	r, err := router.New(router.Config{Policy: router.Prefix, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	es := engines(3)
	sys := seq(16, 500)
	first := route(t, r, router.Request{TokenIDs: append(sys, 1, 2, 3)}, es)
	es[first.Engine].UsedBlocks = 2 // a little load does not break the tie
	second := route(t, r, router.Request{TokenIDs: append(sys, 7, 8)}, es)
	if second.Engine != first.Engine || second.Outcome != router.OutcomePrefixHit {
		t.Errorf("sibling request: %+v, want prefix_hit on engine %d", second, first.Engine)
	}
	now = now.Add(3 * time.Second)
	es[first.Engine].UsedBlocks = 10
	if third := route(t, r, router.Request{TokenIDs: append(sys, 9)}, es); third.Engine == first.Engine {
		t.Errorf("after the prediction expired the loaded engine %d was chosen: %+v", first.Engine, third)
	}
}

func TestBaselinePolicies(t *testing.T) {
	es := engines(3)
	es[0].Waiting, es[0].Running = 1, 0 // score 4
	es[1].Running = 3                   // score 3
	es[2].Running, es[2].Pending = 2, 2 // score 4
	ll := newRouter(t, router.LeastLoaded)
	for range 3 {
		if d := route(t, ll, router.Request{SessionID: "s"}, es); d.Engine != 1 || d.Outcome != router.OutcomeLoad {
			t.Errorf("least-loaded: %+v, want engine 1 / load", d)
		}
	}
	rr := newRouter(t, router.RoundRobin)
	var got []int
	for range 6 {
		got = append(got, route(t, rr, router.Request{SessionID: "s"}, es).Engine)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 0, 1, 2}, got); diff != "" {
		t.Errorf("round-robin order (-want +got):\n%s", diff)
	}
}

func BenchmarkRouteSession(b *testing.B) {
	r, _ := router.New(router.Config{})
	es := engines(8)
	prompt := seq(1024, 1)
	for i := range 1000 {
		r.ApplySessions(i%8, &wire.SessionReport{Added: []string{fmt.Sprint(i)}})
	}
	for b.Loop() {
		_, _ = r.Route(router.Request{SessionID: "500", TokenIDs: prompt}, es)
	}
}

func TestSessionsNewestFirst(t *testing.T) {
	now := time.Unix(1000, 0)
	r, err := router.New(router.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r.ApplySessions(0, &wire.SessionReport{Added: []string{"old"}})
	now = now.Add(time.Second)
	r.ApplySessions(1, &wire.SessionReport{Added: []string{"new", "also-new"}})
	r.ApplySessions(0, &wire.SessionReport{Added: []string{"new"}})
	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{"also-new@1", "new@0", "new@1", "old@0"}},
		{2, []string{"also-new@1", "new@0"}},
	}
	for _, tc := range tests {
		var got []string
		for _, h := range r.Sessions(tc.limit) {
			got = append(got, fmt.Sprintf("%s@%d", h.Session, h.Engine))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Sessions(%d) (-want +got):\n%s", tc.limit, diff)
		}
	}
}
