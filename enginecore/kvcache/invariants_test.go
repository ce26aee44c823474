package kvcache

import (
	"testing"
)

// checkInvariants verifies the manager's internal consistency. Tests call
// it after every operation.
func checkInvariants(t *testing.T, m *Manager) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("invariant: "+format, args...)
	}

	// Every free list: links consistent, membership recorded, no block twice.
	onList := make(map[BlockID]*blockList)
	walk := func(name string, l *blockList, wantCached bool, owner *session) {
		t.Helper()
		var prev *block
		n := 0
		for b := l.head; b != nil; b = b.next {
			if _, dup := onList[b.id]; dup {
				fail("block %d on two lists (second: %s)", b.id, name)
			}
			onList[b.id] = l
			if b.prev != prev || b.list != l {
				fail("block %d: broken links on %s", b.id, name)
			}
			if b.ref != 0 {
				fail("block %d on free list %s with ref %d", b.id, name, b.ref)
			}
			if b.cached != wantCached {
				fail("block %d on %s: cached=%v", b.id, name, b.cached)
			}
			if b.owner != owner {
				fail("block %d on %s: wrong owner", b.id, name)
			}
			prev = b
			n++
		}
		if l.tail != prev || l.n != n {
			fail("list %s: tail/count mismatch (n=%d, walked %d)", name, l.n, n)
		}
	}
	walk("hashless", &m.hashless, false, nil)
	walk("sessionless", &m.sessionless, true, nil)
	for _, s := range m.sessions {
		walk("session "+s.id, &s.free, true, s)
	}

	// Session lists: each holds sessions of its tier with free blocks.
	inSessionList := make(map[*session]bool)
	walkSessions := func(name string, l *sessionList) {
		t.Helper()
		var prev *session
		n := 0
		for s := l.head; s != nil; s = s.next {
			if inSessionList[s] {
				fail("session %q on two lists", s.id)
			}
			inSessionList[s] = true
			if s.prev != prev || s.list != l {
				fail("session %q: broken links on %s", s.id, name)
			}
			if m.tierList(s) != l {
				fail("session %q on %s, wrong tier", s.id, name)
			}
			if s.free.n == 0 {
				fail("session %q on %s without free blocks", s.id, name)
			}
			if m.sessions[s.id] != s {
				fail("session %q on %s but not in the map", s.id, name)
			}
			if s.prev != nil && s.prev.order > s.order {
				fail("session %q on %s out of activity order", s.id, name)
			}
			prev = s
			n++
		}
		if l.tail != prev || l.n != n {
			fail("session list %s: tail/count mismatch", name)
		}
	}
	walkSessions("ended", &m.ended)
	walkSessions("idle", &m.idle)
	walkSessions("active", &m.active)

	// Requests: refcounts equal table references.
	refs := make([]int32, len(m.blocks))
	numRequests := make(map[*session]int)
	for id, r := range m.requests {
		if r.id != id {
			fail("request %q stored under %q", r.id, id)
		}
		if r.session != nil {
			numRequests[r.session]++
			if m.sessions[r.session.id] != r.session {
				fail("request %q: session %q not in the map", id, r.session.id)
			}
		}
		for _, b := range r.table {
			refs[b]++
		}
		if r.numCommittedBlocks > len(r.table) || r.numCommittedBlocks > len(r.hashes) {
			fail("request %q: %d committed blocks, %d blocks, %d hashes", id, r.numCommittedBlocks, len(r.table), len(r.hashes))
		}
	}
	numFree := 0
	lent := make(map[*session]int)
	for i := range m.blocks {
		b := &m.blocks[i]
		if b.id != BlockID(i) {
			fail("block %d has id %d", i, b.id)
		}
		if b.ref != refs[i] {
			fail("block %d: ref %d, held by %d tables", i, b.ref, refs[i])
		}
		_, free := onList[b.id]
		if free != (b.ref == 0) || (b.list != nil) != free {
			fail("block %d: ref %d, on free list %v", i, b.ref, free)
		}
		if free {
			numFree++
		} else if b.owner != nil {
			if !b.cached {
				fail("block %d in use, uncached, with an owner", i)
			}
			lent[b.owner]++
		}
		if b.owner != nil && m.sessions[b.owner.id] != b.owner {
			fail("block %d owned by forgotten session %q", i, b.owner.id)
		}
		if b.cached {
			if m.index[b.hash] != b {
				fail("block %d cached but not indexed", i)
			}
		} else if b.hash != (BlockHash{}) {
			fail("block %d unhashed with a stale hash", i)
		}
	}
	if numFree != m.numFree {
		fail("numFree %d, counted %d", m.numFree, numFree)
	}
	st := m.Stats()
	if used := len(m.blocks) - numFree; st.NumFreeBlocks+used != st.NumBlocks {
		fail("free %d + used %d != total %d", st.NumFreeBlocks, used, st.NumBlocks)
	}
	for h, b := range m.index {
		if !b.cached || b.hash != h {
			fail("index entry points at block %d without that hash", b.id)
		}
	}

	// Sessions: alive iff a live request or a free block, counts exact.
	for id, s := range m.sessions {
		if s.id != id {
			fail("session %q stored under %q", s.id, id)
		}
		if s.numRequests != numRequests[s] {
			fail("session %q: numRequests %d, counted %d", id, s.numRequests, numRequests[s])
		}
		if s.numRequests == 0 && s.numHolds == 0 && s.free.n == 0 && s.lent == 0 {
			fail("session %q kept without requests, holds or blocks", id)
		}
		if s.lent != lent[s] {
			fail("session %q: lent %d, counted %d", id, s.lent, lent[s])
		}
		if s.numHolds < 0 {
			fail("session %q: %d holds", id, s.numHolds)
		}
		if (s.free.n > 0) != inSessionList[s] {
			fail("session %q: %d free blocks, on a list %v", id, s.free.n, inSessionList[s])
		}
	}
}
