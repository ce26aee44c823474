package cpu

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// TestLongContextMatchesReference runs a 250-token prompt (16 and 84
// blocks), chunked as the scheduler would, against the float64
// reference, then decodes at that depth: block size 16 takes the
// multi-row kernels, 3 the any-block-size path.
func TestLongContextMatchesReference(t *testing.T) {
	cfg, w := dummy()
	const n = 250
	toks := prompt(n, 3)
	ref, want := refAfter(t, cfg, w, toks)
	next := []int32{5, 9}
	var wantDecode [][]float64
	for _, tok := range next {
		wantDecode = append(wantDecode, ref.next(tok))
	}
	for _, bs := range []int{16, 3} {
		t.Run(fmt.Sprintf("block=%d", bs), func(t *testing.T) {
			h := newHarness(t, cfg, w, 2, n/bs+8, bs, 5)
			var s seqState
			var got []float32
			for c := 0; c < n; c += 100 {
				got = h.feed(&s, toks[c:min(c+100, n)])
			}
			if d := maxDiff(got, want); d > 1e-4 {
				t.Fatalf("prefill at depth %d: max |Δlogit| = %g, want ≤ 1e-4", n, d)
			}
			for j, tok := range next {
				if d := maxDiff(h.feed(&s, []int32{tok}), wantDecode[j]); d > 1e-4 {
					t.Fatalf("decode %d at depth %d: max |Δlogit| = %g, want ≤ 1e-4", j, n+j, d)
				}
			}
		})
	}
}

// TestAttentionBitsIgnoreTiling checks that a row's attention does not
// depend on what shares its step or on the thread count: a long sequence
// decoded alone (heads split into one tile each), next to 20 others
// (whole-group tiles), and at 1 and 3 threads gives the same bits.
func TestAttentionBitsIgnoreTiling(t *testing.T) {
	cfg, w := dummy()
	checkBitsIgnoreTiling(t, cfg, w, prompt(300, 8), 150, 7)
}

// checkBitsIgnoreTiling checks that token tok's logits after ctx (fed
// in chunks of at most chunk tokens, KV blocks of 16) have the same bits
// decoded alone at 1, 2 and 3 threads and next to 20 short sequences,
// and returns them.
func checkBitsIgnoreTiling(t *testing.T, cfg model.Config, w *model.Weights, ctx []int32, chunk int, tok int32) []float32 {
	t.Helper()
	const bs = 16
	n := len(ctx) + 1
	run := func(threads, others int) []float32 {
		h := newHarness(t, cfg, w, threads, n/bs+8+others*2, bs, uint64(threads*100+others))
		var s seqState
		for c := 0; c < len(ctx); c += chunk {
			h.feed(&s, ctx[c:min(c+chunk, len(ctx))])
		}
		var step runner.Step
		h.add(&step, &s, []int32{tok}, true)
		for i := range others {
			h.add(&step, &seqState{}, prompt(3+i%5, uint64(i)), true)
		}
		return h.forward(&step)[0]
	}
	want := run(1, 0)
	for _, tc := range []struct{ threads, others int }{{2, 0}, {3, 0}, {2, 20}} {
		t.Run(fmt.Sprintf("threads=%d/others=%d", tc.threads, tc.others), func(t *testing.T) {
			if diff := cmp.Diff(want, run(tc.threads, tc.others)); diff != "" {
				t.Errorf("logits differ from 1 thread alone:\n%s", diff)
			}
		})
	}
	return want
}

// TestPlanTiles checks the tiling covers every (token, head, block)
// once: whole KV groups unless there are fewer tiles than two per worker,
// then spans of long contexts, else single heads.
func TestPlanTiles(t *testing.T) {
	cfg, w := dummy() // 4 heads, 2 KV heads
	tests := []struct {
		name    string
		lens    []int
		threads int
		want    int // tiles
		heads   int32
	}{
		{"decode of one, split to heads", []int{1}, 2, 4, 1},
		{"decode of one, one thread", []int{1}, 1, 2, 2},
		{"prefill of 40 tokens", []int{40}, 2, 6, 2},
		{"mixed", []int{17, 1, 1, 16}, 2, 10, 2},
		{"decode at depth 300, split to spans", []int{-300}, 2, 4, 2}, // 19 blocks: spans of 16 + 3, per KV head
		{"decode at depth 300, one thread", []int{-300}, 1, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, cfg, w, tt.threads, 64, 16, 0)
			var step runner.Step
			for i, n := range tt.lens {
				if n < 0 { // one decode token after -n cached positions
					s := &seqState{}
					var warm runner.Step
					h.add(&warm, s, prompt(-n, uint64(i)), false)
					h.add(&step, s, []int32{1}, true)
					continue
				}
				h.add(&step, &seqState{}, prompt(n, uint64(i)), true)
			}
			tiles := h.be.planTiles(&step)
			if len(tiles) != tt.want {
				t.Fatalf("%d tiles, want %d: %v", len(tiles), tt.want, tiles)
			}
			seen := map[[3]int32]int{}
			for _, tl := range tiles {
				if tl.h1-tl.h0 != tt.heads {
					t.Errorf("tile %v has %d heads, want %d", tl, tl.h1-tl.h0, tt.heads)
				}
				s := step.Seqs[tl.seq]
				if int(tl.t0) < s.Start || int(tl.t1) > s.Start+s.Len || tl.t1-tl.t0 > tileTokens {
					t.Errorf("tile %v outside seq %d [%d,+%d)", tl, tl.seq, s.Start, s.Len)
				}
				if (tl.part >= 0) != h.be.attn.split || tl.b1 <= tl.b0 || tl.part >= 0 && tl.b1-tl.b0 > spanBlocks {
					t.Errorf("tile %v: blocks or part wrong (split %v)", tl, h.be.attn.split)
				}
				for tok := tl.t0; tok < tl.t1; tok++ {
					for hd := tl.h0; hd < tl.h1; hd++ {
						for blk := tl.b0; blk < tl.b1; blk++ {
							seen[[3]int32{tok, hd, blk}]++
						}
					}
				}
			}
			for tok := range len(step.TokenIDs) {
				nb := (int(step.Positions[tok]) + 16) / 16
				for hd := range cfg.NumHeads {
					for blk := range nb {
						if c := seen[[3]int32{int32(tok), int32(hd), int32(blk)}]; c != 1 {
							t.Errorf("token %d head %d block %d in %d tiles, want 1", tok, hd, blk, c)
						}
					}
				}
			}
		})
	}
}

// refAfter runs toks through the float64 reference and returns it with
// the last token's logits.
func refAfter(t *testing.T, cfg model.Config, w *model.Weights, toks []int32) (*refModel, []float64) {
	ref := newRef(t, cfg, w)
	var want []float64
	for _, tok := range toks {
		want = ref.next(tok)
	}
	return ref, want
}

// halfKV switches h's backend to a float16 KV cache of the same size.
func halfKV(t testing.TB, h *harness, numBlocks, bs int) {
	t.Helper()
	h.be.SetKVDtype(KVFloat16)
	if err := h.be.AllocateKV(numBlocks, bs); err != nil {
		t.Fatal(err)
	}
}

// TestKVFloat16 runs the long-context reference check on a float16 cache
// (logits within 2e-3 of the float64 reference: the cache rounds K and V
// to 11 bits), that a row's bits still ignore the tiling, and that the
// cache takes half the bytes.
func TestKVFloat16(t *testing.T) {
	cfg, w := dummy()
	const n = 250
	toks := prompt(n, 3)
	_, want := refAfter(t, cfg, w, toks)
	for _, bs := range []int{16, 3} {
		t.Run(fmt.Sprintf("block=%d", bs), func(t *testing.T) {
			h := newHarness(t, cfg, w, 2, n/bs+8, bs, 5)
			f32 := h.be.KVBytesPerBlock(bs)
			halfKV(t, h, n/bs+8, bs)
			if got := h.be.KVBytesPerBlock(bs); got*2 != f32 {
				t.Errorf("KVBytesPerBlock = %d, want half of float32's %d", got, f32)
			}
			var s seqState
			var got []float32
			for c := 0; c < n; c += 100 {
				got = h.feed(&s, toks[c:min(c+100, n)])
			}
			if d := maxDiff(got, want); d > 2e-3 {
				t.Fatalf("prefill at depth %d: max |Δlogit| = %g, want ≤ 2e-3", n, d)
			}
		})
	}
	t.Run("bits ignore tiling", func(t *testing.T) {
		run := func(threads, others int) []float32 {
			h := newHarness(t, cfg, w, threads, 64, 16, uint64(threads+others))
			halfKV(t, h, 64, 16)
			var s seqState
			h.feed(&s, toks[:200])
			var step runner.Step
			h.add(&step, &s, []int32{7}, true)
			for i := range others {
				h.add(&step, &seqState{}, prompt(3+i%5, uint64(i)), true)
			}
			return h.forward(&step)[0]
		}
		want := run(1, 0)
		if diff := cmp.Diff(want, run(2, 8)); diff != "" {
			t.Errorf("2 threads among 8 others differ from 1 thread alone:\n%s", diff)
		}
	})
}

func TestParseKVDtype(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want KVDtype
		ok   bool
	}{{"auto", KVFloat32, true}, {"float32", KVFloat32, true}, {"float16", KVFloat16, true}, {"FP16", KVFloat16, true}, {"fp8", 0, false}, {"", 0, false}} {
		var d KVDtype
		err := d.Set(tc.in)
		if (err == nil) != tc.ok || tc.ok && d != tc.want {
			t.Errorf("Set(%q) = %v, %v; want %v, ok %v", tc.in, d, err, tc.want, tc.ok)
		}
	}
}
