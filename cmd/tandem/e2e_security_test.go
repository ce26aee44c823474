package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCacheSaltNoTimingLeak: a tenant must not learn, from how fast its request starts,
// whether another tenant (another cache_salt) sent the same prompt. Tenant A's prompt is
// cached for A (a repeat starts several times faster: the signal exists); the same
// prompt from tenants B1..B3 gets no cached token and starts as slowly as a cold prompt,
// never close to A's warm start. See also TestPrefixCacheHitsAndSaltIsolation.
func TestCacheSaltNoTimingLeak(t *testing.T) {
	s := startSplit(t)
	run := time.Now().UnixNano()
	prompt := fmt.Sprintf("%d %s", run, strings.Repeat("Secret plans of tenant A, line by line. ", 24))[:960]
	send := func(salt string) streamResult {
		t.Helper()
		body := map[string]any{"prompt": prompt, "max_tokens": 1}
		if salt != "" {
			body["cache_salt"] = salt
		}
		r := streamCompletion(s.base, body, nil)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	}
	saltA := fmt.Sprintf("tenant-a-%d", run)
	cold := send(saltA)
	var warm []streamResult
	for range 3 {
		warm = append(warm, send(saltA))
	}
	var cross []streamResult
	for i := range 3 {
		cross = append(cross, send(fmt.Sprintf("tenant-b%d-%d", i, run)))
	}
	unsalted := send("")
	slowestWarm, fastestCross := time.Duration(0), time.Duration(1<<62)
	for _, w := range warm {
		if w.cached < 900 {
			t.Fatalf("tenant A's repeat: %d cached tokens, want ≥ 900", w.cached)
		}
		slowestWarm = max(slowestWarm, w.ttft)
	}
	for _, c := range append(cross, unsalted) {
		if c.cached != 0 {
			t.Fatalf("another tenant got %d cached tokens of tenant A's prompt", c.cached)
		}
		fastestCross = min(fastestCross, c.ttft)
	}
	t.Logf("TTFT: A cold %v, A warm ≤ %v, other tenants ≥ %v", cold.ttft, slowestWarm, fastestCross)
	if cold.ttft < 3*slowestWarm {
		t.Skipf("no timing signal to leak on this machine: cold %v, warm %v", cold.ttft, slowestWarm)
	}
	// Closer on a log scale (the geometric mean is the midpoint): one cold
	// sample on a loaded machine varies by 2×, a cache hit by 100×.
	if float64(fastestCross)*float64(fastestCross) < float64(slowestWarm)*float64(cold.ttft) || fastestCross < 2*slowestWarm {
		t.Errorf("another tenant's first token came after %v: closer to A's warm start (%v) than to a cold one (%v)",
			fastestCross, slowestWarm, cold.ttft)
	}
}
