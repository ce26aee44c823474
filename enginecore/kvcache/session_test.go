package kvcache

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// unused returns the ids of blocks no request in used took, in id order:
// the untouched hashless blocks.
func unused(numBlocks int, used ...[]BlockID) []BlockID {
	var out []BlockID
	for id := range BlockID(numBlocks) {
		if !slices.ContainsFunc(used, func(l []BlockID) bool { return slices.Contains(l, id) }) {
			out = append(out, id)
		}
	}
	return out
}

func TestEvictionOrder(t *testing.T) {
	const numBlocks, blockSize = 32, 4
	// Every scenario runs requests of 8 tokens (2 full cached blocks each)
	// on distinct tokens, then returns the eviction order it expects.
	next := 0
	prompt := func() []int32 { next += 100; return tokens(next, 8) }
	tests := []struct {
		name  string
		setup func(h *harness) (want []BlockID)
	}{
		{"ended < idle oldest < idle newer < sessionless < active", func(h *harness) []BlockID {
			h.run("e", prompt(), "", "E")
			h.run("i1", prompt(), "", "I1")
			h.run("i2", prompt(), "", "I2")
			h.run("s", prompt(), "", "")
			h.run("a1", prompt(), "", "A")
			h.run("a2", prompt(), "", "A")
			e, i1, i2, s, a1, a2 := h.table("e"), h.table("i1"), h.table("i2"), h.table("s"), h.table("a1"), h.table("a2")
			h.free("a1") // A stays active through a2
			h.clk.advance(time.Second)
			h.free("s")
			h.free("e")
			h.endSession("E")
			h.clk.advance(time.Second)
			h.free("i1")
			h.clk.advance(time.Second)
			h.free("i2")
			return concat(unused(numBlocks, e, i1, i2, s, a1, a2), reversed(e), reversed(i1), reversed(i2), reversed(s), reversed(a1))
		}},
		{"idle order follows last activity", func(h *harness) []BlockID {
			h.run("i1", prompt(), "", "I1")
			h.run("i2", prompt(), "", "I2")
			i1, i2 := h.table("i1"), h.table("i2")
			h.free("i1")
			h.clk.advance(time.Second)
			h.free("i2")
			h.clk.advance(time.Second)
			h.lookup("i1-again", tokens(9000, 3), "", "I1") // I1 active again, then idle
			h.free("i1-again")
			return concat(unused(numBlocks, i1, i2), reversed(i2), reversed(i1))
		}},
		{"ended before an idle session active longer ago", func(h *harness) []BlockID {
			h.run("i", prompt(), "", "I")
			h.run("e", prompt(), "", "E")
			i, e := h.table("i"), h.table("e")
			h.free("i")
			h.clk.advance(time.Minute)
			h.free("e")
			h.endSession("E")
			return concat(unused(numBlocks, i, e), reversed(e), reversed(i))
		}},
		{"re-opened session is active again", func(h *harness) []BlockID {
			h.run("e", prompt(), "", "E")
			h.run("s", prompt(), "", "")
			e, s := h.table("e"), h.table("s")
			h.free("e")
			h.free("s")
			h.endSession("E")
			h.lookup("e2", tokens(9000, 3), "", "E") // live: E active
			return concat(unused(numBlocks, e, s), reversed(s), reversed(e))
		}},
		{"ended session with a live request", func(h *harness) []BlockID {
			h.run("e1", prompt(), "", "E")
			h.run("e2", prompt(), "", "E")
			h.run("i", prompt(), "", "I")
			e1, e2, i := h.table("e1"), h.table("e2"), h.table("i")
			h.free("i")
			h.free("e1")
			h.endSession("E")
			h.free("e2")
			return concat(unused(numBlocks, e1, e2, i), reversed(e1), reversed(e2), reversed(i))
		}},
		{"a sessionless hit that frees last makes blocks sessionless", func(h *harness) []BlockID {
			x := prompt()
			h.run("x", x, "", "X")
			xt := h.table("x")
			if got := h.lookup("y", append(slices.Clone(x), 1), "", ""); got != 8 {
				h.t.Fatalf("Lookup(y) = %d, want 8", got)
			}
			h.free("x")
			h.free("y")
			h.run("z", prompt(), "", "Z")
			zt := h.table("z")
			h.free("z") // Z idle: before sessionless even though freed later
			return concat(unused(numBlocks, xt, zt), reversed(zt), reversed(xt))
		}},
		{"active session's free blocks come last", func(h *harness) []BlockID {
			h.run("a1", prompt(), "", "A")
			h.lookup("a2", tokens(9000, 3), "", "A")
			a1 := h.table("a1")
			h.free("a1")
			h.clk.advance(time.Second)
			h.run("s", prompt(), "", "")
			s := h.table("s")
			h.free("s")
			return concat(unused(numBlocks, a1, s), reversed(s), reversed(a1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, numBlocks, blockSize)
			want := tt.setup(h)
			if diff := cmp.Diff(want, h.drainFree()); diff != "" {
				t.Errorf("eviction order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestActiveSessionSurvives(t *testing.T) {
	h := newHarness(t, 16, 4)
	a1 := tokens(0, 8)
	h.run("a1", a1, "", "A")
	h.run("a2", tokens(100, 8), "", "A")
	h.free("a1") // 2 free cached blocks of active session A
	h.run("s", tokens(200, 8), "", "")
	h.free("s")
	h.run("i", tokens(300, 8), "", "I")
	h.free("i")
	// 16 blocks: a2 holds 2, A's 2 free cached, 4 others cached, 8 hashless.
	h.mustAllocate("x", 12*4) // takes everything but A's blocks
	if got := h.m.Stats().NumFreeBlocks; got != 2 {
		t.Fatalf("NumFreeBlocks = %d, want 2", got)
	}
	if got := h.lookup("a3", append(slices.Clone(a1), 1), "", "A"); got != 8 {
		t.Errorf("Lookup of A's prefix = %d, want 8 (its blocks must survive)", got)
	}
	h.free("a3")
	h.mustAllocate("x", 13*4) // now one of A's: the tail block first
	if got := h.lookup("a4", append(slices.Clone(a1), 1), "", "A"); got != 4 {
		t.Errorf("Lookup of A's prefix after one eviction = %d, want 4", got)
	}
}

func TestSessions(t *testing.T) {
	h := newHarness(t, 16, 4)
	start := h.clk.now()
	type view struct {
		Tokens      int
		NumSessions int
		Info        SessionInfo
		Known       bool
	}
	look := func() view {
		info, ok := h.m.Session("S")
		if ok != h.m.HasSession("S") {
			t.Fatalf("Session says known %v, HasSession %v", ok, h.m.HasSession("S"))
		}
		return view{h.m.SessionCachedTokens("S"), h.m.NumSessions(), info, ok}
	}
	info := func(tokens, numRequests int, lastActive time.Duration, ended bool) view {
		return view{tokens, 1, SessionInfo{NumCachedTokens: tokens, NumRequests: numRequests, LastActive: start.Add(lastActive), Ended: ended}, true}
	}
	p1 := tokens(0, 10)
	p2 := append(slices.Clone(p1), tokens(50, 5)...)
	steps := []struct {
		name string
		do   func()
		want view
	}{
		{"unknown", func() {}, view{}},
		{"r1 computed 10 tokens", func() { h.run("r1", p1, "", "S") }, info(10, 1, 0, false)},
		{"r2 shares 2 blocks", func() {
			h.clk.advance(time.Second)
			if got := h.run("r2", p2, "", "S"); got != 8 {
				t.Fatalf("Lookup(r2) = %d, want 8", got)
			}
		}, info(8+2+4+3, 2, time.Second, false)},
		{"free r1: its partial block goes", func() { h.free("r1") }, info(8+4+3, 1, time.Second, false)},
		{"free r2: 3 cached blocks stay", func() {
			h.clk.advance(4 * time.Second)
			h.free("r2")
		}, info(12, 0, 5*time.Second, false)},
		{"ended", func() { h.endSession("S"); h.endSession("S") }, info(12, 0, 5*time.Second, true)},
		{"end of an unknown session is a no-op", func() { h.endSession("nobody") }, info(12, 0, 5*time.Second, true)},
		{"a sessionless hit borrows the blocks", func() { h.lookup("x", p2, "", "") }, info(12, 0, 5*time.Second, true)},
		{"and gives them back", func() { h.free("x") }, info(12, 0, 5*time.Second, true)},
		{"re-opened by a new request", func() {
			h.clk.advance(time.Second)
			h.lookup("r3", tokens(900, 3), "", "S")
		}, info(12, 1, 6*time.Second, false)},
		{"another session's hit takes them over", func() {
			h.lookup("y", p2, "", "T")
			h.free("y")
		}, func() view { v := info(0, 1, 6*time.Second, false); v.NumSessions = 2; return v }()},
	}
	for _, st := range steps {
		st.do()
		if diff := cmp.Diff(st.want, look()); diff != "" {
			t.Fatalf("after %q (-want +got):\n%s", st.name, diff)
		}
	}
}

func TestSessionForgottenWhenEvicted(t *testing.T) {
	h := newHarness(t, 4, 4)
	h.run("r", tokens(0, 8), "", "S")
	h.free("r")
	h.endSession("S")
	if got := h.m.NumSessions(); got != 1 {
		t.Fatalf("NumSessions() = %d, want 1 while its blocks are resident", got)
	}
	h.drainFree()
	if got := h.m.NumSessions(); got != 0 {
		t.Errorf("NumSessions() = %d after its blocks were evicted, want 0", got)
	}
	if got := h.m.SessionCachedTokens("S"); got != 0 {
		t.Errorf("SessionCachedTokens = %d, want 0", got)
	}
}

func TestHoldKeepsSessionActive(t *testing.T) {
	const numBlocks = 16
	h := newHarness(t, numBlocks, 4)
	h.m.Hold("A")
	checkInvariants(t, h.m)
	h.run("a", tokens(0, 8), "", "A")
	a := h.table("a")
	h.free("a") // waiting or preempted: A is still in the engine
	h.run("s", tokens(100, 8), "", "")
	s := h.table("s")
	h.free("s")
	if info, ok := h.m.Session("A"); !ok || info.NumHolds != 1 || info.NumRequests != 0 {
		t.Fatalf("Session(A) = %+v, %v; want 1 hold, 0 requests", info, ok)
	}
	h.m.Release("A")
	h.m.Release("A") // unmatched: no-op
	h.m.Release("unknown")
	checkInvariants(t, h.m)
	h.m.Hold("A")
	checkInvariants(t, h.m)
	// Held: A's blocks after the sessionless ones.
	want := concat(unused(numBlocks, a, s), reversed(s), reversed(a))
	if diff := cmp.Diff(want, h.drainFree()); diff != "" {
		t.Errorf("eviction order while held (-want +got):\n%s", diff)
	}

	h = newHarness(t, numBlocks, 4)
	h.m.Hold("A")
	h.run("a", tokens(0, 8), "", "A")
	h.free("a")
	h.run("s", tokens(100, 8), "", "")
	h.free("s")
	h.m.Release("A") // finished: A idle, its blocks before sessionless ones
	checkInvariants(t, h.m)
	want = concat(unused(numBlocks, a, s), reversed(a), reversed(s))
	if diff := cmp.Diff(want, h.drainFree()); diff != "" {
		t.Errorf("eviction order after Release (-want +got):\n%s", diff)
	}
	if got := h.m.NumSessions(); got != 0 {
		t.Errorf("NumSessions() = %d, want 0", got)
	}
}
