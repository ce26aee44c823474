package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Feed streams Snapshots as server-sent events. Its viewers share one
// snapshot per interval, so they add no load on the engines.
type Feed struct {
	src      Source
	interval time.Duration
	now      func() time.Time

	mu     sync.Mutex // mu guards the fields below
	last   Snapshot
	lastAt time.Time
	prev   counters
}

// NewFeed returns a feed of src, one snapshot a second.
func NewFeed(src Source) *Feed {
	return &Feed{src: src, interval: time.Second, now: time.Now}
}

// Snapshot returns the current snapshot: the latest, or a new one when
// that is older than half the interval.
func (f *Feed) Snapshot(ctx context.Context) Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if !f.lastAt.IsZero() && now.Sub(f.lastAt) < f.interval/2 {
		return f.last
	}
	prevAt := f.lastAt
	if now.Sub(prevAt) > 3*f.interval {
		prevAt = time.Time{} // nobody watched: no rate over the gap
	}
	f.last, f.prev = build(ctx, f.src, now, f.prev, prevAt)
	f.lastAt = now
	return f.last
}

// ServeHTTP streams every session to the viewer.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = f.Serve(r.Context(), w, nil)
}

// Serve streams snapshots to w as "snapshot" events until ctx ends or a
// write fails. scope maps an engine's session id to the id the viewer
// knows it by, false for a session that is not the viewer's (its tenant's,
// with several API keys); nil shows every session as it is.
func (f *Feed) Serve(ctx context.Context, w http.ResponseWriter, scope func(string) (string, bool)) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		s := scoped(f.Snapshot(ctx), scope)
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("webui: snapshot: %w", err)
		}
		if _, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", b); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// scoped is s with only the sessions scope admits, renamed.
func scoped(s Snapshot, scope func(string) (string, bool)) Snapshot {
	if scope == nil {
		return s
	}
	out := make([]Session, 0, len(s.Sessions))
	for _, ss := range s.Sessions {
		if id, ok := scope(ss.ID); ok {
			ss.ID = id
			out = append(out, ss)
		}
	}
	if len(out) != len(s.Sessions) {
		s.NumSessions = len(out) // the other tenants' are not counted either
	}
	s.Sessions = out
	return s
}
