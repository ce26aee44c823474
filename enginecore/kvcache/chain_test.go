package kvcache

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCachedChain(t *testing.T) {
	const blockSize = 16
	prompt := tokens(0, 100) // 6 full blocks and 4 tokens
	tests := []struct {
		name   string
		tokens []int32
		salt   string
		want   int // blocks
	}{
		{"same tokens: every full block", prompt, "", 6},
		{"96 tokens: the last token covered", prompt[:96], "", 6},
		{"95 tokens", prompt[:95], "", 5},
		{"longer", append(slices.Clone(prompt), tokens(500, 40)...), "", 6},
		{"other salt", prompt, "x", 0},
		{"diverges in block 2", append(slices.Clone(prompt[:40]), -1), "", 2},
		{"empty", nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 64, blockSize)
			h.run("a", prompt, "", "")
			want := h.table("a")[:tt.want]
			before := h.m.Stats()
			got := h.m.CachedChain(tt.tokens, tt.salt)
			if diff := cmp.Diff(want, got, cmpEmpty); diff != "" {
				t.Errorf("CachedChain (-want +got):\n%s", diff)
			}
			if after := h.m.Stats(); after != before {
				t.Errorf("CachedChain changed the stats: %+v → %+v", before, after)
			}
			checkInvariants(t, h.m)
		})
	}
}

// TestAdopt fills blocks from elsewhere (a restore): Adopt pins what is
// cached, Allocate adds the rest, Commit indexes them, and a later Lookup
// hits them all.
func TestAdopt(t *testing.T) {
	const blockSize = 16
	prompt := tokens(0, 80) // 5 full blocks
	h := newHarness(t, 32, blockSize, withEvents())
	h.run("a", prompt[:40], "", "") // blocks 0 and 1 computed
	h.free("a")
	h.m.DrainEvents()
	before := h.m.Stats()
	if got := h.m.Adopt("restore", prompt, "", "s"); got != 32 {
		t.Fatalf("Adopt = %d cached tokens, want 32", got)
	}
	if st := h.m.Stats(); st.PrefixQueries != before.PrefixQueries || st.PrefixHits != before.PrefixHits {
		t.Errorf("Adopt counted a prefix-cache query: %+v → %+v", before, st)
	}
	h.mustAllocate("restore", len(prompt))
	h.commit("restore", prompt, len(prompt))
	h.free("restore")
	ev := h.m.DrainEvents()
	if len(ev) != 1 || len(ev[0].(BlockStored).Hashes) != 3 {
		t.Errorf("events = %+v, want one BlockStored of 3 blocks", ev)
	}
	if got := h.lookup("b", append(slices.Clone(prompt), 7), "", ""); got != 80 {
		t.Errorf("Lookup after the restore = %d, want 80", got)
	}
}

func TestEvictChain(t *testing.T) {
	const blockSize = 16
	prompt := tokens(0, 64) // 4 full blocks
	other := append(slices.Clone(prompt[:32]), tokens(900, 32)...)
	h := newHarness(t, 32, blockSize, withEvents())
	h.run("a", prompt, "", "s")
	h.free("a")
	h.run("b", other, "", "") // shares blocks 0 and 1, keeps them in use
	h.m.DrainEvents()
	got := h.m.EvictChain(prompt, "")
	checkInvariants(t, h.m)
	if got != 32 {
		t.Errorf("EvictChain = %d tokens, want 32 (blocks 2 and 3; 0 and 1 are in use)", got)
	}
	if ev := h.m.DrainEvents(); len(ev) != 1 || len(ev[0].(BlockRemoved).Hashes) != 2 {
		t.Errorf("events = %+v, want one BlockRemoved of 2 blocks", ev)
	}
	if n := len(h.m.CachedChain(prompt, "")); n != 2 {
		t.Errorf("chain after the eviction: %d blocks, want 2", n)
	}
	h.free("b")
	if got := h.m.EvictChain(prompt, ""); got != 32 {
		t.Errorf("second EvictChain = %d, want 32", got)
	}
	checkInvariants(t, h.m)
	if got := h.lookup("c", prompt, "", ""); got != 0 {
		t.Errorf("Lookup after erasing = %d, want 0", got)
	}
}
