package router

import (
	"slices"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

const maxLost = 1 << 16 // sessions remembered as lost, at most

// engineState is what the router learned of one engine from its reports.
type engineState struct {
	blocks    map[uint64]struct{}  // hashes of its cached blocks (KV events)
	predicted map[uint64]time.Time // hashes expected from routed requests → expiry
	sessions  map[string]time.Time // sessions it holds (session reports) → first reported
}

func (r *Router) state(id int) *engineState {
	st, ok := r.engines[id]
	if !ok {
		st = &engineState{blocks: map[uint64]struct{}{}, predicted: map[uint64]time.Time{}, sessions: map[string]time.Time{}}
		r.engines[id] = st
	}
	return st
}

// matched is the number of leading blocks of hashes cached (or expected)
// on the engine, at most what the engine's lookup can hit: it never covers
// the prompt's last token.
func (st *engineState) matched(hashes []uint64, numTokens, blockSize int, now time.Time) int {
	limit := min(len(hashes), (numTokens-1)/blockSize)
	for i := range limit {
		if _, ok := st.blocks[hashes[i]]; ok {
			continue
		}
		if exp, ok := st.predicted[hashes[i]]; ok && now.Before(exp) {
			continue
		}
		return i
	}
	return max(limit, 0)
}

// holdSince reports whether engine id holds session, by its reports or by
// this frontend's own recent placement, and since when.
func (r *Router) holdSince(session string, id int, now time.Time) (time.Time, bool) {
	if st, ok := r.engines[id]; ok {
		if t, ok := st.sessions[session]; ok {
			return t, true
		}
	}
	if b, ok := r.bindings[session]; ok && b.engine == id && now.Sub(b.at) < r.cfg.BindingTTL {
		return b.at, true
	}
	return time.Time{}, false
}

// ApplyKV applies one KV event batch published by engine id.
func (r *Router) ApplyKV(id int, b *wire.KVEventBatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state(id)
	for _, ev := range b.Events {
		switch ev := ev.(type) {
		case *wire.BlockStored:
			for _, h := range ev.BlockHashes {
				st.blocks[h] = struct{}{}
				delete(st.predicted, h)
			}
		case *wire.BlockRemoved:
			for _, h := range ev.BlockHashes {
				delete(st.blocks, h)
			}
		case *wire.AllBlocksCleared:
			clear(st.blocks)
			clear(st.predicted)
		}
	}
}

// ApplySessions applies one session report published by engine id. A full
// report replaces what was known of the engine's sessions.
func (r *Router) ApplySessions(id int, rep *wire.SessionReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	st := r.state(id)
	if rep.Full {
		keep := make(map[string]struct{}, len(rep.Added))
		for _, s := range rep.Added {
			keep[s] = struct{}{}
		}
		for s := range st.sessions {
			if _, ok := keep[s]; !ok {
				delete(st.sessions, s)
			}
		}
	}
	for _, s := range rep.Removed {
		delete(st.sessions, s)
	}
	for _, s := range rep.Added {
		if _, ok := st.sessions[s]; !ok {
			st.sessions[s] = now
		}
		delete(r.lost, s)
	}
}

// ResetEngine forgets what engine id reported (it died, restarted, or its
// reports were lost): its cached blocks, and its sessions, which are
// remembered as lost so their next request is labelled session_moved.
func (r *Router) ResetEngine(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.engines[id]
	if !ok {
		return
	}
	now := r.cfg.Now()
	for s := range st.sessions {
		if len(r.lost) < maxLost {
			r.lost[s] = now
		}
	}
	for s, b := range r.bindings {
		if b.engine == id {
			if len(r.lost) < maxLost {
				r.lost[s] = now
			}
			delete(r.bindings, s)
		}
	}
	delete(r.engines, id)
}

// ResetKV forgets engine id's cached blocks only (its KV events were lost;
// its session reports carry on).
func (r *Router) ResetKV(id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.engines[id]; ok {
		clear(st.blocks)
	}
}

// Holders lists the engines that report holding session, in ID order.
func (r *Router) Holders(session string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int
	for id, st := range r.engines {
		if _, ok := st.sessions[session]; ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Holding is one engine's report that it holds a session.
type Holding struct {
	Session string
	Engine  int
	Since   time.Time // when the engine first reported it (this frontend's clock)
}

// Sessions lists every session the engines report holding, newest first
// (then by session and engine), at most limit of them (0 = all).
func (r *Router) Sessions(limit int) []Holding {
	r.mu.Lock()
	var out []Holding
	for id, st := range r.engines {
		for s, t := range st.sessions {
			out = append(out, Holding{Session: s, Engine: id, Since: t})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Holding) int {
		if c := b.Since.Compare(a.Since); c != 0 {
			return c
		}
		if a.Session != b.Session {
			return strings.Compare(a.Session, b.Session)
		}
		return a.Engine - b.Engine
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// NumCachedBlocks is the number of blocks engine id reports cached.
func (r *Router) NumCachedBlocks(id int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.engines[id]; ok {
		return len(st.blocks)
	}
	return 0
}

// sweep drops expired predictions, bindings and lost sessions, at most
// once per PredictTTL.
func (r *Router) sweep(now time.Time) {
	if now.Sub(r.lastSweep) < r.cfg.PredictTTL {
		return
	}
	r.lastSweep = now
	for _, st := range r.engines {
		for h, exp := range st.predicted {
			if !now.Before(exp) {
				delete(st.predicted, h)
			}
		}
	}
	for s, b := range r.bindings {
		if now.Sub(b.at) >= r.cfg.BindingTTL {
			delete(r.bindings, s)
		}
	}
	for s, t := range r.lost {
		if now.Sub(t) >= r.cfg.LostTTL {
			delete(r.lost, s)
		}
	}
}
