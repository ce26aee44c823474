package webui

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
)

// Source is what the cluster view reads on every tick. Nil fields leave
// their part of the Snapshot empty.
type Source struct {
	Policy   string                                                           // the routing policy (--routing)
	Engines  func() []engineclient.EngineState                                // every configured engine
	Sessions func(limit int) []router.Holding                                 // resident sessions, newest first
	Session  func(ctx context.Context, id string) ([]wire.SessionInfo, error) // one session's records
	Metrics  prometheus.Gatherer                                              // the frontend's metrics
}

// Snapshot is one event of the feed.
type Snapshot struct {
	Time     float64   `json:"time"` // unix seconds
	Policy   string    `json:"policy,omitempty"`
	Engines  []Engine  `json:"engines"`
	Sessions []Session `json:"sessions"`
	// NumSessions counts the sessions resident anywhere; Sessions lists
	// at most MaxSessions of them.
	NumSessions int   `json:"num_sessions"`
	Rates       Rates `json:"rates"`
	// Routing is every routing decision so far, by policy and outcome.
	Routing []Count `json:"routing"`
}

// Engine is one engine core as its latest report has it.
type Engine struct {
	Index              int     `json:"index"`
	Endpoint           string  `json:"endpoint"`
	State              string  `json:"state"` // ready, syncing or unavailable
	Error              string  `json:"error,omitempty"`
	NumRunning         int     `json:"num_requests_running"`
	NumWaiting         int     `json:"num_requests_waiting"`
	KVCacheUsage       float64 `json:"kv_cache_usage"` // 0..1
	NumFreeBlocks      int     `json:"num_free_blocks"`
	NumTotalBlocks     int     `json:"num_total_blocks"`
	NumSessions        int     `json:"num_sessions"`
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"` // hits / queries, in tokens, since the engine started
	NumPreemptions     int64   `json:"num_preemptions"`
	LastSeen           float64 `json:"last_seen,omitempty"` // unix seconds
}

// Session is one resident session.
type Session struct {
	ID          string `json:"id"`
	EngineIndex int    `json:"engine_index"` // the engine that saw it last
	Engines     []int  `json:"engines"`      // every engine reporting it
	// The counters below come from the engines' records (Detailed), which
	// the feed asks for only for the newest MaxDetailed sessions.
	Detailed bool `json:"detailed"`
	// Ended: asked, no engine has a record of it (DELETE
	// /v1/sessions/{id} ended it); its blocks stay cached until evicted,
	// first of all, so the engines still report it for a while.
	Ended           bool    `json:"ended,omitempty"`
	NumRequests     int64   `json:"num_requests"`
	NumCachedTokens int64   `json:"num_cached_tokens"`
	LastActive      float64 `json:"last_active,omitempty"`
}

// Rates are the changes since the previous snapshot, per second.
type Rates struct {
	Interval        float64 `json:"interval"` // seconds since the previous snapshot; 0 on the first
	TokensPerSecond float64 `json:"tokens_per_second"`
	// TTFTSeconds is the mean time to first token of the requests that
	// got one in the interval; nil if none did.
	TTFTSeconds *float64 `json:"ttft_seconds"`
	// Routing is the decisions made in the interval (not per second).
	Routing []Count `json:"routing"`
}

// Count is a number of routing decisions of one policy and outcome.
type Count struct {
	Policy  string  `json:"policy"`
	Outcome string  `json:"outcome"`
	N       float64 `json:"n"`
}

const (
	// MaxSessions bounds Snapshot.Sessions.
	MaxSessions = 200
	// MaxDetailed is how many sessions (the newest) get their counters
	// from the engines on each snapshot: one utility call per engine each.
	MaxDetailed = 16
)

// counters are the cumulative metrics rates are computed from.
type counters struct {
	tokens, ttftSum, ttftCount float64
	routing                    map[[2]string]float64
}

func gather(g prometheus.Gatherer) counters {
	c := counters{routing: map[[2]string]float64{}}
	if g == nil {
		return c
	}
	fams, err := g.Gather()
	if err != nil && len(fams) == 0 {
		return c
	}
	for _, f := range fams {
		switch f.GetName() {
		case "vllm:generation_tokens_total":
			for _, m := range f.GetMetric() {
				c.tokens += m.GetCounter().GetValue()
			}
		case "vllm:time_to_first_token_seconds":
			for _, m := range f.GetMetric() {
				c.ttftSum += m.GetHistogram().GetSampleSum()
				c.ttftCount += float64(m.GetHistogram().GetSampleCount())
			}
		case "tandem:routing_decisions_total":
			for _, m := range f.GetMetric() {
				c.routing[[2]string{label(m, "policy"), label(m, "outcome")}] += m.GetCounter().GetValue()
			}
		}
	}
	return c
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// rates is what changed from prev to cur over dt seconds (dt 0: nothing).
func rates(prev, cur counters, dt float64) Rates {
	r := Rates{Interval: dt, Routing: []Count{}}
	if dt <= 0 {
		return r
	}
	r.TokensPerSecond = max(cur.tokens-prev.tokens, 0) / dt
	if n := cur.ttftCount - prev.ttftCount; n > 0 {
		v := (cur.ttftSum - prev.ttftSum) / n
		r.TTFTSeconds = &v
	}
	for k, v := range cur.routing {
		if d := v - prev.routing[k]; d > 0 {
			r.Routing = append(r.Routing, Count{Policy: k[0], Outcome: k[1], N: d})
		}
	}
	sortCounts(r.Routing)
	return r
}

func totals(c counters) []Count {
	out := []Count{}
	for k, v := range c.routing {
		out = append(out, Count{Policy: k[0], Outcome: k[1], N: v})
	}
	sortCounts(out)
	return out
}

func sortCounts(cs []Count) {
	slices.SortFunc(cs, func(a, b Count) int {
		if c := strings.Compare(a.Policy, b.Policy); c != 0 {
			return c
		}
		return strings.Compare(a.Outcome, b.Outcome)
	})
}

func engineOf(e engineclient.EngineState) Engine {
	v := Engine{
		Index: e.Index, Endpoint: e.Endpoint, State: "unavailable", Error: e.Err,
		NumRunning: e.Stats.NumRunningReqs, NumWaiting: e.Stats.NumWaitingReqs, KVCacheUsage: e.Stats.KVCacheUsage,
		NumFreeBlocks: e.Stats.NumFreeBlocks, NumTotalBlocks: e.Stats.NumTotalBlocks, NumSessions: e.Stats.NumSessions,
		NumPreemptions: e.Stats.NumPreemptions,
	}
	switch {
	case e.Ready && e.Syncing:
		v.State = "syncing"
	case e.Ready:
		v.State = "ready"
	}
	if q := e.Stats.PrefixCacheQueries; q > 0 {
		v.PrefixCacheHitRate = float64(e.Stats.PrefixCacheHits) / float64(q)
	}
	if !e.LastSeen.IsZero() {
		v.LastSeen = float64(e.LastSeen.UnixNano()) / 1e9
	}
	return v
}

// sessionsOf groups holdings by session, keeping their order (newest
// first), at most MaxSessions of them.
func sessionsOf(hs []router.Holding) (out []Session, total int) {
	at := map[string]int{}
	for _, h := range hs {
		i, ok := at[h.Session]
		if !ok {
			total++
			if len(out) == MaxSessions {
				continue
			}
			i = len(out)
			at[h.Session] = i
			out = append(out, Session{ID: h.Session, EngineIndex: h.Engine})
		}
		out[i].Engines = append(out[i].Engines, h.Engine)
	}
	for i := range out {
		slices.Sort(out[i].Engines)
		out[i].EngineIndex = out[i].Engines[0]
	}
	return out, total
}

// detail fills a session's counters from the engines' records; the engine
// that saw it last is its EngineIndex.
func detail(s *Session, infos []wire.SessionInfo) {
	if len(infos) == 0 {
		return
	}
	s.Detailed = true
	for _, in := range infos {
		s.NumRequests += in.NumRequests
		s.NumCachedTokens += in.NumCachedTokens
		if in.LastActive >= s.LastActive {
			s.LastActive, s.EngineIndex = in.LastActive, in.EngineIndex
		}
	}
}

// build takes one snapshot; prev is the previous one's counters, at the
// time prevAt (zero: none).
func build(ctx context.Context, src Source, now time.Time, prev counters, prevAt time.Time) (Snapshot, counters) {
	s := Snapshot{Time: float64(now.UnixNano()) / 1e9, Policy: src.Policy, Engines: []Engine{}, Sessions: []Session{}}
	if src.Engines != nil {
		for _, e := range src.Engines() {
			s.Engines = append(s.Engines, engineOf(e))
		}
	}
	if src.Sessions != nil {
		// A session held by several engines appears once per engine.
		s.Sessions, s.NumSessions = sessionsOf(src.Sessions(0))
		if s.Sessions == nil {
			s.Sessions = []Session{}
		}
	}
	if src.Session != nil {
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		for i := range s.Sessions[:min(len(s.Sessions), MaxDetailed)] {
			infos, err := src.Session(dctx, s.Sessions[i].ID)
			switch {
			case err != nil:
			case len(infos) == 0:
				s.Sessions[i].Ended = true
			default:
				detail(&s.Sessions[i], infos)
			}
		}
		cancel()
	}
	cur := gather(src.Metrics)
	var dt float64
	if !prevAt.IsZero() {
		dt = now.Sub(prevAt).Seconds()
	}
	s.Rates = rates(prev, cur, dt)
	s.Routing = totals(cur)
	return s, cur
}
