package kvcache

import "time"

// session is one session_id known to the manager. It exists while it has
// a live request, a hold or a cached block it owns (free or lent); then it
// is forgotten.
type session struct {
	id          string
	numRequests int       // requests registered by Lookup and not yet Freed
	numHolds    int       // Hold calls not yet matched by Release
	ended       bool      // EndSession was called and no request re-opened it
	lastActive  time.Time // clock at the session's last Lookup, Allocate, Commit or Free
	order       uint64    // Manager.seq at the last activity or EndSession: place in its tier
	// lent counts the cached blocks it owns that requests hold now (its own
	// or others'): they come back to it when a sessionless request frees them.
	lent int
	// free holds the free cached blocks last released by this session's
	// requests, least recently released first.
	free blockList

	prev, next *session     // links in list
	list       *sessionList // ended, idle or active while free.n > 0; nil otherwise
}

// SessionInfo describes a session for the visibility endpoints.
type SessionInfo struct {
	NumCachedTokens int       // as SessionCachedTokens
	NumRequests     int       // live requests (registered by Lookup, not yet Freed)
	NumHolds        int       // Hold calls not yet matched by Release
	LastActive      time.Time // clock at its last Lookup, Allocate, Commit or Free
	Ended           bool      // EndSession was called and no request re-opened it
}

// tierList is the session list s belongs on while it holds free blocks.
func (m *Manager) tierList(s *session) *sessionList {
	switch {
	case s.ended:
		return &m.ended
	case s.numRequests > 0 || s.numHolds > 0:
		return &m.active
	}
	return &m.idle
}

// place puts s at the tail of its tier's list (most recently active) if it
// holds free blocks, and on no list otherwise.
func (m *Manager) place(s *session) {
	if s.list != nil {
		s.list.remove(s)
	}
	if s.free.n > 0 {
		m.tierList(s).pushBack(s)
	}
}

// reenter puts s, which just got a free block back without activity of its
// own, on its tier's list at the place of its last activity: O(1) when it
// was active after every session on the list, O(sessions passed) otherwise.
func (m *Manager) reenter(s *session) {
	if s.list != nil {
		return
	}
	l := m.tierList(s)
	after := l.tail
	for after != nil && after.order > s.order {
		after = after.prev
	}
	l.insertAfter(after, s)
}

// touch records activity of s now.
func (m *Manager) touch(s *session) {
	s.lastActive = m.now()
	m.seq++
	s.order = m.seq
	m.place(s)
}

// gc forgets s once it has neither requests, holds, free blocks nor lent
// blocks.
func (m *Manager) gc(s *session) {
	if s.numRequests == 0 && s.numHolds == 0 && s.free.n == 0 && s.lent == 0 {
		if s.list != nil {
			s.list.remove(s)
		}
		delete(m.sessions, s.id)
		if m.reportGone {
			m.gone = append(m.gone, s.id)
		}
	}
}

// DrainGoneSessions returns the sessions forgotten since the last call
// (their last request ended and their last cached block was evicted), so
// the engine can drop what it keeps about them. Always nil unless
// Config.ReportGoneSessions.
func (m *Manager) DrainGoneSessions() []string {
	gone := m.gone
	m.gone = nil
	return gone
}

// Hold says one more request of session id is in the engine, whether or not
// it holds blocks (waiting, or preempted and freed): the session stays
// active until the matching Release, even between its requests' Free and
// Lookup. It re-opens an ended session. Callers that never Hold get
// activity from Lookup/Free alone.
func (m *Manager) Hold(id string) {
	if id == "" {
		return
	}
	s, ok := m.sessions[id]
	if !ok {
		s = &session{id: id}
		m.sessions[id] = s
	}
	s.numHolds++
	s.ended = false
	m.touch(s)
}

// Release undoes one Hold of session id (its request finished or was
// aborted). A Release without a matching Hold is a no-op.
func (m *Manager) Release(id string) {
	s, ok := m.sessions[id]
	if !ok || s.numHolds == 0 {
		return
	}
	s.numHolds--
	m.touch(s)
	m.gc(s)
}

// EndSession ends a session: its free cached blocks are evicted before any
// other cached block, and blocks its live requests release later join them.
// A later Lookup with the same session re-opens it. Unknown sessions and
// repeated calls are no-ops.
func (m *Manager) EndSession(id string) {
	s, ok := m.sessions[id]
	if !ok || s.ended {
		return
	}
	s.ended = true
	m.seq++
	s.order = m.seq
	m.place(s)
}

// SessionCachedTokens is the number of tokens resident for a session: the
// cached blocks it owns, free or lent (BlockSize tokens each), plus the
// computed tokens in the blocks its live requests hold (a partially
// computed block counts its computed tokens; a block counts once however
// many requests share it). O(live requests' blocks).
func (m *Manager) SessionCachedTokens(id string) int {
	s, ok := m.sessions[id]
	if !ok {
		return 0
	}
	total := s.free.n * m.blockSize
	m.markGen++
	for _, r := range m.requests {
		if r.session != s && s.lent == 0 {
			continue
		}
		for i, id := range r.table {
			b := &m.blocks[id]
			filled := m.blockSize // a block s owns is cached: full
			if r.session == s {
				if filled = min(m.blockSize, r.numComputedTokens-i*m.blockSize); filled <= 0 {
					break
				}
			} else if b.owner != s {
				continue
			}
			if b.mark != m.markGen {
				b.mark = m.markGen
				total += filled
			}
		}
	}
	return total
}

// Session describes a session the manager knows (one with a live request,
// a hold or a cached block it owns).
func (m *Manager) Session(id string) (SessionInfo, bool) {
	s, ok := m.sessions[id]
	if !ok {
		return SessionInfo{}, false
	}
	return SessionInfo{
		NumCachedTokens: m.SessionCachedTokens(id),
		NumRequests:     s.numRequests,
		NumHolds:        s.numHolds,
		LastActive:      s.lastActive,
		Ended:           s.ended,
	}, true
}

// HasSession reports whether the manager knows session id (a live
// request, a hold or a cached block of its own). O(1), unlike Session.
func (m *Manager) HasSession(id string) bool {
	_, ok := m.sessions[id]
	return ok
}

// NumSessions is the number of sessions with a live request, a hold or a
// cached block of their own.
func (m *Manager) NumSessions() int { return len(m.sessions) }
