package webui

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
)

func ptr(v float64) *float64 { return &v }

func TestRates(t *testing.T) {
	r := func(p, o string) [2]string { return [2]string{p, o} }
	tests := []struct {
		name      string
		prev, cur counters
		dt        float64
		want      Rates
	}{
		{"first snapshot", counters{}, counters{tokens: 10}, 0, Rates{Routing: []Count{}}},
		{"tokens and ttft", counters{tokens: 10, ttftSum: 1, ttftCount: 2}, counters{tokens: 30, ttftSum: 1.5, ttftCount: 4}, 2,
			Rates{Interval: 2, TokensPerSecond: 10, TTFTSeconds: ptr(0.25), Routing: []Count{}}},
		{"no first token", counters{ttftSum: 1, ttftCount: 2}, counters{ttftSum: 1, ttftCount: 2}, 1, Rates{Interval: 1, Routing: []Count{}}},
		{"counter reset", counters{tokens: 50}, counters{tokens: 5}, 1, Rates{Interval: 1, Routing: []Count{}}},
		{"routing in the interval", counters{routing: map[[2]string]float64{r("session", "session_hit"): 3}},
			counters{routing: map[[2]string]float64{r("session", "session_hit"): 5, r("session", "session_new"): 1, r("prefix", "load"): 0}}, 1,
			Rates{Interval: 1, Routing: []Count{{"session", "session_hit", 2}, {"session", "session_new", 1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rates(tc.prev, tc.cur, tc.dt)); diff != "" {
				t.Errorf("rates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionsOf(t *testing.T) {
	at := time.Unix(100, 0)
	hs := []router.Holding{{Session: "b", Engine: 1, Since: at}, {Session: "a", Engine: 0, Since: at}, {Session: "b", Engine: 0, Since: at}}
	got, total := sessionsOf(hs)
	want := []Session{{ID: "b", EngineIndex: 0, Engines: []int{0, 1}}, {ID: "a", EngineIndex: 0, Engines: []int{0}}}
	if diff := cmp.Diff(want, got); diff != "" || total != 2 {
		t.Errorf("sessionsOf: total %d (-want +got):\n%s", total, diff)
	}
	s := got[0]
	detail(&s, []wire.SessionInfo{{EngineIndex: 0, NumRequests: 1, NumCachedTokens: 16, LastActive: 5}, {EngineIndex: 1, NumRequests: 2, NumCachedTokens: 32, LastActive: 9}})
	if s.EngineIndex != 1 || s.NumRequests != 3 || s.NumCachedTokens != 48 || !s.Detailed || s.LastActive != 9 {
		t.Errorf("detail: %+v", s)
	}
}

func TestScoped(t *testing.T) {
	s := Snapshot{Sessions: []Session{{ID: "t1:a"}, {ID: "t2:b"}, {ID: "t1:c"}}, NumSessions: 3}
	got := scoped(s, func(id string) (string, bool) {
		if len(id) > 3 && id[:3] == "t1:" {
			return id[3:], true
		}
		return "", false
	})
	if diff := cmp.Diff([]Session{{ID: "a"}, {ID: "c"}}, got.Sessions); diff != "" || got.NumSessions != 2 {
		t.Errorf("scoped: num %d (-want +got):\n%s", got.NumSessions, diff)
	}
	if got := scoped(s, nil); len(got.Sessions) != 3 {
		t.Errorf("nil scope dropped sessions: %+v", got.Sessions)
	}
}

// TestBuild takes two snapshots of a source with metrics, engines and
// sessions, as the feed does.
func TestBuild(t *testing.T) {
	reg := prometheus.NewRegistry()
	gen := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:generation_tokens_total"}, []string{"engine"})
	ttft := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds"})
	routing := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tandem:routing_decisions_total"}, []string{"policy", "outcome"})
	reg.MustRegister(gen, ttft, routing)
	now := time.Unix(1000, 0)
	src := Source{
		Policy: "session",
		Engines: func() []engineclient.EngineState {
			return []engineclient.EngineState{
				{Index: 0, Endpoint: "ipc://e0", Ready: true, Stats: wire.SchedulerStats{NumRunningReqs: 1, KVCacheUsage: 0.5, PrefixCacheQueries: 100, PrefixCacheHits: 25, NumSessions: 1}},
				{Index: 1, Endpoint: "ipc://e1", Err: "heartbeats stopped"},
			}
		},
		Sessions: func(int) []router.Holding { return []router.Holding{{Session: "conv", Engine: 0, Since: now}} },
		Session: func(_ context.Context, id string) ([]wire.SessionInfo, error) {
			return []wire.SessionInfo{{EngineIndex: 0, NumRequests: 2, NumCachedTokens: 48, LastActive: 999}}, nil
		},
		Metrics: reg,
	}
	_, c := build(context.Background(), src, now, counters{}, time.Time{})
	gen.WithLabelValues("0").Add(40)
	ttft.Observe(0.2)
	routing.WithLabelValues("session", "session_hit").Inc()
	s, _ := build(context.Background(), src, now.Add(2*time.Second), c, now)
	want := Snapshot{
		Time: 1002, Policy: "session",
		Engines: []Engine{
			{Index: 0, Endpoint: "ipc://e0", State: "ready", NumRunning: 1, KVCacheUsage: 0.5, NumSessions: 1, PrefixCacheHitRate: 0.25},
			{Index: 1, Endpoint: "ipc://e1", State: "unavailable", Error: "heartbeats stopped"},
		},
		Sessions:    []Session{{ID: "conv", EngineIndex: 0, Engines: []int{0}, Detailed: true, NumRequests: 2, NumCachedTokens: 48, LastActive: 999}},
		NumSessions: 1,
		Rates:       Rates{Interval: 2, TokensPerSecond: 20, TTFTSeconds: ptr(0.2), Routing: []Count{{"session", "session_hit", 1}}},
		Routing:     []Count{{"session", "session_hit", 1}},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
}
