package cpu

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// windowed is the dummy model with layers 0, 1 and 3 local: a window of
// 40 positions, RoPE base 500.
func windowed() (model.Config, *model.Weights) {
	cfg, w := dummy()
	cfg.SlidingWindow, cfg.LocalRopeTheta = 40, 500
	cfg.LocalLayers = []bool{true, true, false, true}
	return cfg, w
}

// TestSlidingWindowMatchesReference checks local layers against the
// float64 oracle at depth 250, far past the window: chunked prefill (a
// chunk's rows start their windows in different blocks, the first block
// of a tile all masked for its later rows) and decode (spans of blocks
// before the window skipped), at the fast block size and another, with
// float32 and float16 KV caches (whose rounding moves the logits by up
// to 2.5e-3 here).
func TestSlidingWindowMatchesReference(t *testing.T) {
	cfg, w := windowed()
	const n = 250
	toks := prompt(n, 3)
	ref, want := refAfter(t, cfg, w, toks)
	next := []int32{5, 9}
	var wantDecode [][]float64
	for _, tok := range next {
		wantDecode = append(wantDecode, ref.next(tok))
	}
	for _, tc := range []struct {
		bs   int
		half bool
		tol  float64
	}{{16, false, 1e-4}, {3, false, 1e-4}, {16, true, 4e-3}, {3, true, 4e-3}} {
		t.Run(fmt.Sprintf("block=%d/f16=%v", tc.bs, tc.half), func(t *testing.T) {
			h := newHarness(t, cfg, w, 2, n/tc.bs+8, tc.bs, 5)
			if tc.half {
				halfKV(t, h, n/tc.bs+8, tc.bs)
			}
			var s seqState
			var got []float32
			for c := 0; c < n; c += 100 {
				got = h.feed(&s, toks[c:min(c+100, n)])
			}
			if d := maxDiff(got, want); d > tc.tol {
				t.Fatalf("prefill at depth %d: max |Δlogit| = %g, want ≤ %g", n, d, tc.tol)
			}
			for j, tok := range next {
				if d := maxDiff(h.feed(&s, []int32{tok}), wantDecode[j]); d > tc.tol {
					t.Fatalf("decode %d at depth %d: max |Δlogit| = %g, want ≤ %g", j, n+j, d, tc.tol)
				}
			}
		})
	}
	t.Run("window matters", func(t *testing.T) {
		cfg, w := dummy()
		_, global := refAfter(t, cfg, w, toks)
		if d := maxDiff(toF32(global), want); d < 0.1 {
			t.Errorf("the window changes the logits by %g only", d)
		}
	})
}

// TestSlidingWindowBitsIgnoreTiling checks that local layers keep a
// row's bits independent of what shares its step: a token decoded alone
// or next to 20 short sequences, and the same token as the last row of a
// 16-token prefill chunk, whose tile starts at the chunk's first row's
// window.
func TestSlidingWindowBitsIgnoreTiling(t *testing.T) {
	cfg, w := windowed()
	const n, bs = 200, 16
	long := prompt(n, 8)
	want := checkBitsIgnoreTiling(t, cfg, w, long[:n-1], n, long[n-1])
	t.Run("last row of a prefill chunk", func(t *testing.T) {
		h := newHarness(t, cfg, w, 2, n/bs+8, bs, 9)
		var s seqState
		h.feed(&s, long[:n-16])
		if diff := cmp.Diff(want, h.feed(&s, long[n-16:])); diff != "" {
			t.Errorf("logits differ from decode alone:\n%s", diff)
		}
	})
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
