package conformance

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// testCase is one random model of TestRandomModels or TestGemmaModels.
type testCase struct {
	name  string
	spec  testmodel.Spec
	bound float64 // max |Δ log-softmax|, nats
	tie   float64 // oracle top-2 margin under which top-1 may differ, nats
}

// modelRuns are random models' logits at every position of the same
// prompts: ours, by decode and by prefill, and llama.cpp's.
type modelRuns struct {
	tests   []testCase
	prompts [][]int32
	probe   []int32                                   // the whole vocabulary
	ours    []struct{ decode, prefill [][][]float32 } // [test] → [prompt][position][V]
	want    []oracleResponse                          // [test]
	// flips, by test name, is how many positions may miss the bound, by
	// at most 25× (a tail log-prob can move by several nats), and change
	// top-1: a mixture of experts' router on a near-tie picks another
	// expert when the engines' 8-bit activation roundings differ, as
	// they do in quantized models.
	flips map[string]int
}

// runModels writes every test's GGUF, then runs llama.cpp on all of them
// in the background while our engine computes its side.
func runModels(t *testing.T, tests []testCase, prompts [][]int32) *modelRuns {
	t.Helper()
	r := &modelRuns{tests: tests, prompts: prompts, probe: make([]int32, rmVocab)}
	for i := range r.probe {
		r.probe[i] = int32(i)
	}
	start := time.Now()
	dir := t.TempDir()
	reqs := make([]oracleRequest, len(tests))
	for i, tt := range tests {
		reqs[i] = oracleRequest{Model: filepath.Join(dir, fmt.Sprintf("m%02d.gguf", i)), Prompts: prompts, TopK: 4, Probe: r.probe}
		if err := testmodel.WriteGGUF(reqs[i].Model, tt.spec); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
	}
	wait := startOracle(t, reqs...)
	r.ours = make([]struct{ decode, prefill [][][]float32 }, len(tests))
	for i, req := range reqs {
		e := openEngine(t, req.Model, 80)
		for _, p := range prompts {
			r.ours[i].decode = append(r.ours[i].decode, e.decodeAll(t, p))
			r.ours[i].prefill = append(r.ours[i].prefill, e.prefillFrom(t, p, 0))
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tOurs := time.Since(start)
	r.want = wait()
	t.Logf("%d models: our engine %v, llama.cpp (in parallel) %v", len(tests), tOurs.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return r
}

// checkAll checks every model, a subtest each: both our paths within
// its bound of llama.cpp, top-1 equal but for near-ties.
func (r *modelRuns) checkAll(t *testing.T) {
	for i, tt := range r.tests {
		t.Run(tt.name, func(t *testing.T) {
			if r.want[i].Vocab != rmVocab {
				t.Fatalf("oracle sees a vocabulary of %d, want %d", r.want[i].Vocab, rmVocab)
			}
			var decode, prefill agreement
			for j := range r.prompts {
				decode.add("decode", 0, r.ours[i].decode[j], r.want[i].Prompts[j], r.probe, tt.tie)
				prefill.add("prefill", 0, r.ours[i].prefill[j], r.want[i].Prompts[j], r.probe, tt.tie)
			}
			if n := r.flips[tt.name]; n > 0 {
				checkFlips(t, &decode, tt.bound, n)
				checkFlips(t, &prefill, tt.bound, n)
			} else {
				check(t, &decode, tt.bound)
				check(t, &prefill, tt.bound)
			}
			t.Logf("max |Δ log-softmax| decode %.2g, prefill %.2g (bound %.2g, over it at %d+%d positions); %d positions; near-ties flipped: %d+%d, widest margin %.2g",
				decode.maxDelta, prefill.maxDelta, tt.bound, overBound(&decode, tt.bound), overBound(&prefill, tt.bound),
				decode.positions, decode.nearTies, prefill.nearTies, max(decode.widestTie, prefill.widestTie))
		})
	}
}

// control is a negative control: our prefill logits of model ours
// against llama.cpp's of model oracle (the same weights, another
// architecture feature) must miss by over 100× oracle's bound, and, when
// flips, change some top-1.
func (r *modelRuns) control(t *testing.T, name, ours, oracle string, flips bool) {
	t.Run("control: "+name, func(t *testing.T) {
		o, w := r.index(t, ours), r.index(t, oracle)
		var a agreement
		for j := range r.prompts {
			a.add("prefill", 0, r.ours[o].prefill[j], r.want[w].Prompts[j], r.probe, r.tests[w].tie)
		}
		if a.maxDelta < 100*r.tests[w].bound || flips && len(a.mismatches) == 0 {
			t.Errorf("%s passes for %s: max |Δ| %.3g, %d top-1 mismatches", ours, oracle, a.maxDelta, len(a.mismatches))
		}
		t.Logf("max |Δ| %.3g, %d of %d top-1 differ", a.maxDelta, len(a.mismatches), a.positions)
	})
}

// index is the test named name.
func (r *modelRuns) index(t *testing.T, name string) int {
	i := slices.IndexFunc(r.tests, func(tt testCase) bool { return tt.name == name })
	if i < 0 {
		t.Fatalf("no model %q", name)
	}
	return i
}

// checkFlips is check allowing up to n positions whose max |Δ| exceeds
// bound, by at most 25×, or whose top-1 differs (see modelRuns.flips).
func checkFlips(t *testing.T, a *agreement, bound float64, n int) {
	t.Helper()
	if over := overBound(a, bound); over > n || len(a.mismatches) > n {
		t.Errorf("%d positions over the bound %.3g and %d top-1 mismatches, at most %d allowed (router flips): %v",
			overBound(a, bound), bound, len(a.mismatches), n, a.mismatches)
	}
	if !(a.maxDelta <= 25*bound) {
		t.Errorf("max |Δ log-softmax| %.4g > 25× bound %.4g at %s", a.maxDelta, bound, a.worst)
	}
	if a.positions == 0 || a.pairs == 0 {
		t.Error("nothing compared")
	}
}

// overBound counts a's positions whose max |Δ| exceeds bound.
func overBound(a *agreement, bound float64) int {
	n := 0
	for _, d := range a.deltas {
		if !(d <= bound) {
			n++
		}
	}
	return n
}

// edited is s as f changes it: a test case's variant of a base spec.
func edited(s testmodel.Spec, f func(s *testmodel.Spec)) testmodel.Spec {
	f(&s)
	return s
}

// typed is s with every matrix of type typ.
func typed(s testmodel.Spec, typ model.DType) testmodel.Spec {
	return edited(s, func(s *testmodel.Spec) { s.MatrixType = typ })
}

// lmHead is s with only its LM head (output.weight) of type typ.
func lmHead(s testmodel.Spec, typ model.DType) testmodel.Spec {
	return edited(s, func(s *testmodel.Spec) { s.Types = map[string]model.DType{"output.weight": typ} })
}
