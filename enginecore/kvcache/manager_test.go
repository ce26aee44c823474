package kvcache

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"ok", Config{NumBlocks: 4, BlockSize: 16}, false},
		{"one block", Config{NumBlocks: 1, BlockSize: 1}, false},
		{"no blocks", Config{NumBlocks: 0, BlockSize: 16}, true},
		{"negative blocks", Config{NumBlocks: -3, BlockSize: 16}, true},
		{"zero block size", Config{NumBlocks: 4, BlockSize: 0}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.cfg)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("New(%+v) error = %v, want ErrInvalidConfig", tt.cfg, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v): %v", tt.cfg, err)
			}
			checkInvariants(t, m)
			want := Stats{NumBlocks: tt.cfg.NumBlocks, NumFreeBlocks: tt.cfg.NumBlocks}
			if diff := cmp.Diff(want, m.Stats()); diff != "" {
				t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupPrefixHit(t *testing.T) {
	const blockSize = 16
	prefix := tokens(0, 1000) // a computes all of it: 62 full blocks cached
	diverge := slices.Clone(prefix)
	diverge[10*blockSize+3] = -1
	tests := []struct {
		name   string
		tokens []int32
		salt   string
		want   int // cached tokens
	}{
		{"same 1000 tokens", prefix, "", 992}, // floor(999/16)*16
		{"longer prompt", append(slices.Clone(prefix), tokens(5000, 24)...), "", 992},
		{"993 tokens", prefix[:993], "", 992},
		{"992 tokens: last token never covered", prefix[:992], "", 976},
		{"diverges in block 10", diverge, "", 160},
		{"different salt", prefix, "other", 0},
		{"first token differs", append([]int32{-7}, prefix[1:]...), "", 0},
		{"shorter than a block", prefix[:10], "", 0},
		{"exactly one block", prefix[:16], "", 0},
		{"empty", nil, "", 0},
	}
	for _, tt := range tests {
		for _, freeA := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/freeA=%v", tt.name, freeA), func(t *testing.T) {
				h := newHarness(t, 256, blockSize)
				if got := h.run("a", prefix, "", "s"); got != 0 {
					t.Fatalf("first Lookup = %d, want 0", got)
				}
				tableA := h.table("a")
				if freeA {
					h.free("a")
				}
				got := h.lookup("b", tt.tokens, tt.salt, "")
				if got != tt.want {
					t.Errorf("Lookup = %d, want %d", got, tt.want)
				}
				if diff := cmp.Diff(tableA[:tt.want/blockSize], h.table("b"), cmpEmpty); diff != "" {
					t.Errorf("b's table is not a's prefix (-want +got):\n%s", diff)
				}
				st := h.m.Stats()
				wantCounters := []int64{int64(len(prefix) + len(tt.tokens)), int64(tt.want)}
				if diff := cmp.Diff(wantCounters, []int64{st.PrefixQueries, st.PrefixHits}); diff != "" {
					t.Errorf("[queries hits] mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// cmpEmpty makes nil and empty slices equal.
var cmpEmpty = cmp.Comparer(func(a, b []BlockID) bool { return slices.Equal(a, b) })

func TestSaltIsolation(t *testing.T) {
	tests := []struct {
		saltA, saltB string
		want         int
	}{
		{"", "", 32},
		{"x", "x", 32},
		{"x", "y", 0},
		{"x", "", 0},
		{"", "x", 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%q", tt.saltA, tt.saltB), func(t *testing.T) {
			h := newHarness(t, 32, 4)
			prompt := tokens(0, 33)
			h.run("a", prompt, tt.saltA, "")
			if got := h.lookup("b", prompt, tt.saltB, ""); got != tt.want {
				t.Errorf("Lookup = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestLookupRegistered(t *testing.T) {
	h := newHarness(t, 16, 4)
	prompt := tokens(0, 9)
	h.run("a", prompt, "", "")
	if got := h.lookup("b", prompt, "", ""); got != 8 {
		t.Fatalf("Lookup(b) = %d, want 8", got)
	}
	table := h.table("b")
	queries := h.m.Stats().PrefixQueries
	if got := h.lookup("b", prompt, "", ""); got != 0 {
		t.Errorf("second Lookup of a request holding blocks = %d, want 0", got)
	}
	if diff := cmp.Diff(table, h.table("b")); diff != "" {
		t.Errorf("table changed (-want +got):\n%s", diff)
	}
	if got := h.m.Stats().PrefixQueries; got != queries {
		t.Errorf("PrefixQueries = %d after the no-op, want %d", got, queries)
	}

	// A request registered without blocks is looked up afresh, here under
	// another session.
	if got := h.lookup("c", tokens(100, 9), "", "s1"); got != 0 {
		t.Fatalf("Lookup(c) = %d, want 0", got)
	}
	if got := h.lookup("c", prompt, "", "s2"); got != 8 {
		t.Errorf("re-Lookup(c) = %d, want 8", got)
	}
	if _, ok := h.m.Session("s1"); ok {
		t.Errorf("session s1 still known after its only request moved to s2")
	}
	if info, ok := h.m.Session("s2"); !ok || info.NumRequests != 1 {
		t.Errorf("Session(s2) = %+v, %v; want 1 request", info, ok)
	}
}

func TestPrefixCachingDisabled(t *testing.T) {
	h := newHarness(t, 16, 4, withoutPrefixCaching(), withEvents())
	prompt := tokens(0, 20)
	h.run("a", prompt, "", "s")
	if got := h.lookup("b", prompt, "", "s"); got != 0 {
		t.Errorf("Lookup = %d, want 0", got)
	}
	h.free("a")
	h.free("b")
	want := Stats{NumBlocks: 16, NumFreeBlocks: 16}
	if diff := cmp.Diff(want, h.m.Stats()); diff != "" {
		t.Errorf("Stats() mismatch (-want +got):\n%s", diff)
	}
	if !h.m.ResetPrefixCache() {
		t.Errorf("ResetPrefixCache() = false, want true")
	}
	if ev := h.m.DrainEvents(); ev != nil {
		t.Errorf("DrainEvents() = %v, want none", ev)
	}
	if got := h.m.NumSessions(); got != 0 {
		t.Errorf("NumSessions() = %d, want 0", got)
	}
}

func TestFreeOrder(t *testing.T) {
	tests := []struct {
		name        string
		session     string
		numComputed int // of 10 tokens in 3 blocks (0, 1, 2)
		want        []BlockID
	}{
		// Hashless blocks go to the front, cached ones to the back tail first.
		{"two cached blocks", "", 10, []BlockID{2, 3, 4, 5, 6, 7, 1, 0}},
		{"two cached blocks, session", "S", 10, []BlockID{2, 3, 4, 5, 6, 7, 1, 0}},
		{"one cached block", "", 4, []BlockID{1, 2, 3, 4, 5, 6, 7, 0}},
		{"nothing computed", "S", 0, []BlockID{0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 8, 4)
			prompt := tokens(0, 10)
			h.lookup("r", prompt, "", tt.session)
			h.mustAllocate("r", len(prompt))
			h.commit("r", prompt, tt.numComputed)
			h.free("r")
			h.free("r") // idempotent
			if diff := cmp.Diff(tt.want, h.drainFree()); diff != "" {
				t.Errorf("reuse order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllocateAllOrNothing(t *testing.T) {
	tests := []struct {
		name      string
		id        string
		numTokens int
		want      bool
		wantLen   int // blocks in id's table afterwards
	}{
		{"fits exactly", "b", 5 * 4, true, 5},
		{"one block too many", "b", 6 * 4, false, 0},
		{"partial block counts", "b", 5*4 + 1, false, 0},
		{"zero tokens", "b", 0, true, 0},
		{"within the table", "a", 17, true, 5},
		{"grow", "a", 10 * 4, true, 10},
		{"grow too far", "a", 10*4 + 1, false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 10 blocks: a holds 5, 2 free cached (c), 3 hashless.
			h := newHarness(t, 10, 4, withEvents())
			h.lookup("a", tokens(0, 20), "", "A")
			h.mustAllocate("a", 20)
			h.run("c", tokens(100, 8), "", "C")
			h.free("c")
			h.m.DrainEvents()
			before := h.table("a")
			stats := h.m.Stats()

			if got := h.m.CanAllocate(tt.id, tt.numTokens); got != tt.want {
				t.Errorf("CanAllocate = %v, want %v", got, tt.want)
			}
			if got := h.allocate(tt.id, tt.numTokens); got != tt.want {
				t.Fatalf("Allocate = %v, want %v", got, tt.want)
			}
			if got := len(h.m.BlockTable(tt.id)); got != tt.wantLen {
				t.Errorf("len(BlockTable) = %d, want %d", got, tt.wantLen)
			}
			if tt.want {
				return
			}
			if _, ok := h.m.requests["b"]; ok {
				t.Errorf("a failed Allocate registered b")
			}
			if diff := cmp.Diff(before, h.table("a")); diff != "" {
				t.Errorf("a's table changed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(stats, h.m.Stats()); diff != "" {
				t.Errorf("Stats changed (-want +got):\n%s", diff)
			}
			if ev := h.m.DrainEvents(); ev != nil {
				t.Errorf("events after a failed Allocate: %v", ev)
			}
		})
	}
}

func TestResetPrefixCache(t *testing.T) {
	h := newHarness(t, 8, 4, withEvents())
	prompt := tokens(0, 9)
	h.run("a", prompt, "", "S")
	h.m.DrainEvents()
	if h.m.ResetPrefixCache() {
		t.Fatalf("ResetPrefixCache() = true with a block in use")
	}
	checkInvariants(t, h.m)
	if got := h.m.Stats().NumCachedBlocks; got != 2 {
		t.Errorf("NumCachedBlocks = %d after a refused reset, want 2", got)
	}
	if ev := h.m.DrainEvents(); ev != nil {
		t.Errorf("events after a refused reset: %v", ev)
	}
	h.free("a") // blocks 0, 1 cached, 2 hashless
	if !h.m.ResetPrefixCache() {
		t.Fatalf("ResetPrefixCache() = false with every block free")
	}
	checkInvariants(t, h.m)
	if diff := cmp.Diff([]Event{AllBlocksCleared{}}, h.m.DrainEvents()); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
	if got := h.m.NumSessions(); got != 0 {
		t.Errorf("NumSessions() = %d, want 0", got)
	}
	if got := h.lookup("b", prompt, "", ""); got != 0 {
		t.Errorf("Lookup after reset = %d, want 0", got)
	}
	h.free("b")
	want := []BlockID{2, 3, 4, 5, 6, 7, 0, 1} // hashless tier, cleared blocks appended in id order
	if diff := cmp.Diff(want, h.drainFree()); diff != "" {
		t.Errorf("reuse order mismatch (-want +got):\n%s", diff)
	}
}

func TestEvents(t *testing.T) {
	h := newHarness(t, 8, 4, withEvents())
	prompt := tokens(0, 13)
	hash := func(i int) BlockHash {
		var parent BlockHash
		var salt []byte
		for j := 0; j <= i; j++ {
			if j == 0 {
				salt = []byte("s")
			} else {
				salt = nil
			}
			parent, _ = wire.HashBlockTokens(nil, parent, prompt[j*4:(j+1)*4], salt)
		}
		return parent
	}
	h.lookup("a", prompt, "s", "")
	h.mustAllocate("a", len(prompt))
	h.commit("a", prompt, 8)
	h.commit("a", prompt, 13)
	h.commit("a", prompt, 13) // idempotent
	want := []Event{
		BlockStored{Hashes: []uint64{hash(0).Uint64(), hash(1).Uint64()}, TokenIDs: prompt[:8], BlockSize: 4},
		BlockStored{Hashes: []uint64{hash(2).Uint64()}, ParentHash: hash(1).Uint64(), HasParent: true, TokenIDs: prompt[8:12], BlockSize: 4},
	}
	if diff := cmp.Diff(want, h.m.DrainEvents()); diff != "" {
		t.Errorf("stored events mismatch (-want +got):\n%s", diff)
	}
	if ev := h.m.DrainEvents(); ev != nil {
		t.Errorf("second DrainEvents() = %v, want nil", ev)
	}

	h.free("a")
	h.mustAllocate("b", 8*4) // 5 hashless, then a's cached blocks tail first
	want = []Event{BlockRemoved{Hashes: []uint64{hash(2).Uint64(), hash(1).Uint64(), hash(0).Uint64()}}}
	if diff := cmp.Diff(want, h.m.DrainEvents()); diff != "" {
		t.Errorf("removed events mismatch (-want +got):\n%s", diff)
	}
	if got := h.m.Stats().NumEvictions; got != 3 {
		t.Errorf("NumEvictions = %d, want 3", got)
	}
}

// TestEventsNameTheAdapter: the blocks a LoRA request stores name its
// adapter; a later request without one stores its own blocks unnamed, and
// registering afresh forgets the adapter.
func TestEventsNameTheAdapter(t *testing.T) {
	h := newHarness(t, 8, 4, withEvents())
	prompt := tokens(0, 9)
	if n := h.m.Lookup("a", prompt, "lora-salt", "", Adapter{Name: "alpha", ID: 3}); n != 0 {
		t.Fatalf("Lookup(a) = %d", n)
	}
	h.mustAllocate("a", 9)
	h.commit("a", prompt, 9)
	for _, ev := range h.m.DrainEvents() {
		if s, ok := ev.(BlockStored); !ok || s.LoRAName != "alpha" || s.LoRAID != 3 {
			t.Errorf("a's event %+v, want alpha's (id 3)", ev)
		}
	}
	h.free("a")
	h.lookup("b", prompt, "", "")
	h.mustAllocate("b", 9)
	h.commit("b", prompt, 9)
	evs := h.m.DrainEvents()
	if len(evs) == 0 {
		t.Fatal("b stored nothing")
	}
	for _, ev := range evs {
		if s := ev.(BlockStored); s.LoRAName != "" || s.LoRAID != 0 {
			t.Errorf("b's event %+v names an adapter", ev)
		}
	}
}

func TestCommitDuplicate(t *testing.T) {
	h := newHarness(t, 8, 4, withEvents())
	prompt := tokens(0, 9)
	h.lookup("a", prompt, "", "")
	h.lookup("b", prompt, "", "")
	h.mustAllocate("a", 9)
	h.mustAllocate("b", 9)
	h.commit("a", prompt, 9)
	h.m.DrainEvents()
	h.commit("b", prompt, 9) // same hashes: b's blocks stay unhashed
	if ev := h.m.DrainEvents(); ev != nil {
		t.Errorf("events for duplicates: %v", ev)
	}
	if got := h.m.Stats().NumCachedBlocks; got != 2 {
		t.Errorf("NumCachedBlocks = %d, want 2", got)
	}
	b := h.table("b")
	h.free("b") // all hashless: to the front, reused first
	if got := h.lookup("c", prompt, "", ""); got != 8 {
		t.Errorf("Lookup(c) = %d, want 8 (a's blocks)", got)
	}
	want := concat([]BlockID{b[0], b[1], b[2]}, unused(8, b, h.table("a")))
	if diff := cmp.Diff(want, h.drainFree()); diff != "" {
		t.Errorf("reuse order mismatch (-want +got):\n%s", diff)
	}
}

func TestCommitClamps(t *testing.T) {
	h := newHarness(t, 8, 4)
	prompt := tokens(0, 12)
	h.lookup("a", prompt, "", "")
	h.mustAllocate("a", 4)       // one block
	h.commit("a", prompt, 12)    // only the allocated block can be hashed
	h.commit("a", prompt[:2], 9) // fewer tokens than claimed: nothing more
	h.commit("unknown", prompt, 12)
	if got := h.m.Stats().NumCachedBlocks; got != 1 {
		t.Errorf("NumCachedBlocks = %d, want 1", got)
	}
}
