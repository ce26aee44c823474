package engineclient

import (
	"math/rand/v2"
	"testing"
)

// TestFirstsFirst checks, on random batches, that firstsFirst puts every
// first output before the others and keeps the engine's order within
// each group (so within each stream).
func TestFirstsFirst(t *testing.T) {
	streams := make([]*Stream, 6)
	for i := range streams {
		streams[i] = &Stream{id: string(rune('a' + i))}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		isFirst := make(map[*Stream]bool)
		for _, s := range streams {
			isFirst[s] = rng.IntN(2) == 0
		}
		n := rng.IntN(12)
		rs := make([]routed, n)
		for k := range rs {
			s := streams[rng.IntN(len(streams))]
			rs[k] = routed{s: s, out: k, first: isFirst[s]}
		}
		got := append([]routed(nil), rs...)
		firstsFirst(got)
		var want []routed
		for _, group := range []bool{true, false} {
			for _, r := range rs {
				if r.first == group {
					want = append(want, r)
				}
			}
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("firstsFirst(%v) = %v, want %v", rs, got, want)
			}
		}
	}
}
