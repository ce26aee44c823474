package kvcache

import (
	"testing"
	"time"
)

// fakeClock is a manual clock starting at a fixed instant.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0).UTC()} }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// harness wraps a Manager so that every operation is followed by
// checkInvariants.
type harness struct {
	t   *testing.T
	m   *Manager
	clk *fakeClock
}

type harnessOpt func(*Config)

func withoutPrefixCaching() harnessOpt { return func(c *Config) { c.EnablePrefixCaching = false } }
func withEvents() harnessOpt           { return func(c *Config) { c.EnableEvents = true } }

func newHarness(t *testing.T, numBlocks, blockSize int, opts ...harnessOpt) *harness {
	t.Helper()
	clk := newFakeClock()
	cfg := Config{NumBlocks: numBlocks, BlockSize: blockSize, EnablePrefixCaching: true, Now: clk.now}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	h := &harness{t: t, m: m, clk: clk}
	checkInvariants(t, m)
	return h
}

func (h *harness) lookup(id string, tokens []int32, salt, session string) int {
	h.t.Helper()
	n := h.m.Lookup(id, tokens, salt, session, Adapter{})
	checkInvariants(h.t, h.m)
	return n
}

func (h *harness) allocate(id string, numTokens int) bool {
	h.t.Helper()
	ok := h.m.Allocate(id, numTokens)
	checkInvariants(h.t, h.m)
	return ok
}

func (h *harness) mustAllocate(id string, numTokens int) {
	h.t.Helper()
	if !h.allocate(id, numTokens) {
		h.t.Fatalf("Allocate(%q, %d) = false, want true (stats %+v)", id, numTokens, h.m.Stats())
	}
}

func (h *harness) commit(id string, tokens []int32, numComputed int) {
	h.t.Helper()
	h.m.Commit(id, tokens, numComputed)
	checkInvariants(h.t, h.m)
}

func (h *harness) free(id string) {
	h.t.Helper()
	h.m.Free(id)
	checkInvariants(h.t, h.m)
}

func (h *harness) endSession(session string) {
	h.t.Helper()
	h.m.EndSession(session)
	checkInvariants(h.t, h.m)
}

// run is a request that computes all its tokens: Lookup, Allocate, Commit.
// It returns the number of cached tokens Lookup found and leaves the
// request live.
func (h *harness) run(id string, tokens []int32, salt, session string) int {
	h.t.Helper()
	n := h.lookup(id, tokens, salt, session)
	h.mustAllocate(id, len(tokens))
	h.commit(id, tokens, len(tokens))
	return n
}

// table returns a copy of id's block table.
func (h *harness) table(id string) []BlockID {
	return append([]BlockID(nil), h.m.BlockTable(id)...)
}

// drainFree allocates every free block, one at a time, to a fresh
// sessionless request and returns them in the order they were taken: the
// eviction order.
func (h *harness) drainFree() []BlockID {
	h.t.Helper()
	const probe = "probe"
	var order []BlockID
	for h.m.Stats().NumFreeBlocks > 0 {
		before := len(h.m.BlockTable(probe))
		h.mustAllocate(probe, (before+1)*h.m.blockSize)
		order = append(order, h.m.BlockTable(probe)[before])
	}
	return order
}

// tokens returns n token ids start, start+1, ….
func tokens(start, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(start + i)
	}
	return out
}

// reversed returns a reversed copy of ids.
func reversed(ids []BlockID) []BlockID {
	out := make([]BlockID, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// concat joins block id lists.
func concat(lists ...[]BlockID) []BlockID {
	var out []BlockID
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
