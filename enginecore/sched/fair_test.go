package sched

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// TestFairnessProperties runs random mixes of flows, priorities, prompt
// lengths and pool sizes to the end and checks, every step, the limits
// (budget, slots, each request at most once) and, at the end, that every
// request finished: fair preemption never livelocks. Half the runs
// speculate: random drafts, a random prefix of each kept; a drafted item
// is in decode (one real token, then the draft), its draft within the
// budget, max_tokens and max_model_len, and its output never past them.
func TestFairnessProperties(t *testing.T) {
	drafted := 0
	defer func() {
		if drafted == 0 && !t.Failed() {
			t.Error("no step carried a draft")
		}
	}()
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			blocks := 8 + rng.IntN(56)
			cfg := Config{MaxNumSeqs: 1 + rng.IntN(6), MaxNumBatchedTokens: 4 + rng.IntN(60), MaxModelLen: 64, BlockSize: 4,
				LongPrefillTokenThreshold: rng.IntN(3) * 8, NumSpeculativeTokens: rng.IntN(2) * (1 + rng.IntN(6))}
			kv, err := kvcache.New(kvcache.Config{NumBlocks: blocks, BlockSize: 4, EnablePrefixCaching: rng.IntN(2) == 0})
			if err != nil {
				t.Fatal(err)
			}
			s := New(cfg, kv)
			n := 1 + rng.IntN(30)
			added := 0
			for i := range n {
				sp := wire.DefaultSamplingParams()
				sp.MaxTokens, sp.IgnoreEOS = 1+rng.IntN(12), true
				prompt := make([]int32, 1+rng.IntN(min(40, blocks*4-12)))
				for j := range prompt {
					prompt[j] = int32(10 + rng.IntN(5))
				}
				r := NewRequest(&wire.EngineCoreRequest{RequestID: fmt.Sprint("r", i), PromptTokenIDs: prompt, SamplingParams: sp,
					Priority: rng.IntN(2), FlowID: fmt.Sprint("f", rng.IntN(4))}, "client", nil)
				if s.Add(r) == nil {
					added++
				}
			}
			finished := 0
			outputs := map[string]int{}
			for steps := 0; s.HasWork(); steps++ {
				if steps > 5000 {
					t.Fatalf("not done after %d steps: %d running, %d waiting", steps, s.NumRunning(), s.NumWaiting())
				}
				b := s.Schedule()
				if b.NumTokens > cfg.MaxNumBatchedTokens {
					t.Fatalf("step %d: %d tokens > budget %d", steps, b.NumTokens, cfg.MaxNumBatchedTokens)
				}
				if s.NumRunning() > cfg.MaxNumSeqs {
					t.Fatalf("step %d: %d running > %d", steps, s.NumRunning(), cfg.MaxNumSeqs)
				}
				seen := map[string]bool{}
				for _, it := range b.Items {
					if seen[it.RequestID] {
						t.Fatalf("step %d: %s scheduled twice", steps, it.RequestID)
					}
					seen[it.RequestID] = true
					if t0 := cfg.LongPrefillTokenThreshold; t0 > 0 && it.Len > t0 {
						t.Fatalf("step %d: %s computes %d > threshold %d", steps, it.RequestID, it.Len, t0)
					}
				}
				res := &batch.Result{Sampled: make([]int32, len(b.Items)), Tokens: make([][]int32, len(b.Items))}
				for i, it := range b.Items {
					res.Sampled[i] = 7
					if it.Draft == 0 {
						continue
					}
					r := s.Get(it.RequestID)
					if it.Draft > cfg.NumSpeculativeTokens || it.Len != it.Draft+1 || it.Start != len(r.tokens)-1 || !it.Sample ||
						len(it.Tokens) != len(r.tokens)+it.Draft || len(it.Tokens) >= cfg.MaxModelLen ||
						r.numOutput()+it.Draft+1 > r.Params.MaxTokens {
						t.Fatalf("step %d: %s: draft %d, len %d, start %d of %d tokens, %d outputs of %d", steps, it.RequestID,
							it.Draft, it.Len, it.Start, len(r.tokens), r.numOutput(), r.Params.MaxTokens)
					}
					drafted++
					keep := rng.IntN(it.Draft + 1)
					res.Tokens[i] = append(append([]int32(nil), it.Tokens[len(it.Tokens)-it.Draft:][:keep]...), 7)
				}
				for _, o := range s.Update(b, res) {
					outputs[o.Req.ID] += len(o.NewTokens)
					if outputs[o.Req.ID] > o.Req.Params.MaxTokens {
						t.Fatalf("step %d: %s has %d outputs, max_tokens %d", steps, o.Req.ID, outputs[o.Req.ID], o.Req.Params.MaxTokens)
					}
					if o.Finished {
						finished++
					}
				}
				s.Draft(func(r *Request, k int) []int32 {
					d := make([]int32, rng.IntN(k+2)) // sometimes longer than asked: Draft must cut it
					for j := range d {
						d[j] = int32(10 + rng.IntN(5))
					}
					return d
				})
			}
			if finished != added {
				t.Fatalf("%d of %d requests finished", finished, added)
			}
			if len(s.flows) != 0 {
				t.Fatalf("flow records left after every request finished: %v", s.flows)
			}
		})
	}
}

// TestNewcomerRunsAtOnce: however many sequences one flow holds, a single
// request of another flow computes its whole short prompt in its first
// step and a token every step after.
func TestNewcomerRunsAtOnce(t *testing.T) {
	for _, flood := range []int{4, 64, 512} {
		t.Run(fmt.Sprint(flood), func(t *testing.T) {
			kv, err := kvcache.New(kvcache.Config{NumBlocks: 256, BlockSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			s := New(Config{MaxNumSeqs: 32, MaxNumBatchedTokens: 256, MaxModelLen: 4096, BlockSize: 16}, kv)
			add := func(id, flow string, prompt, maxTokens int) {
				sp := wire.DefaultSamplingParams()
				sp.MaxTokens, sp.IgnoreEOS = maxTokens, true
				toks := make([]int32, prompt)
				for i := range toks {
					toks[i] = int32(100 + len(id) + i)
				}
				toks[0] = int32(len(id)*1000 + len(flow))
				if err := s.Add(NewRequest(&wire.EngineCoreRequest{RequestID: id, PromptTokenIDs: toks, SamplingParams: sp, FlowID: flow}, "c", nil)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range flood {
				add(fmt.Sprint("flood-", i), "flood", 300, 1000)
			}
			run := func() map[string]int {
				b := s.Schedule()
				res := &batch.Result{Sampled: make([]int32, len(b.Items))}
				got := map[string]int{}
				for _, it := range b.Items {
					if it.Sample {
						got[it.RequestID]++
					}
				}
				s.Update(b, res)
				return got
			}
			for range 20 {
				run()
			}
			add("probe", "probe", 40, 8)
			for i := range 8 {
				if got := run(); got["probe"] != 1 {
					t.Fatalf("step %d after arrival: the probe sampled %d tokens, want 1", i, got["probe"])
				}
			}
		})
	}
}

func TestPaceBudget(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		steps [][2]int // tokens, ms
		want  int
	}{
		{"off without target", nil, 2048},
		{"no steps yet", nil, 2048},
		// 10 ms + 3 ms/token: 500 ms fits (500−10)/3 = 163 tokens.
		{"linear fit", [][2]int{{1, 13}, {64, 202}, {16, 58}, {128, 394}}, 163},
		// One size only: 4 ms per token, overhead unknown.
		{"ratio when one size", [][2]int{{100, 400}, {100, 400}}, 125},
		// A GPU: 2,048 tokens in 20 ms.
		{"fast device keeps the max", [][2]int{{2048, 20}, {1, 5}}, 2048},
		// Slower than the target at one token: the minimum.
		{"floor", [][2]int{{1, 900}, {2, 1800}}, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pace{Target: 500 * ms, Min: 16}
			if tc.name == "off without target" {
				p.Target = 0
				p.Observe(100, time.Second)
			}
			for _, s := range tc.steps {
				p.Observe(s[0], time.Duration(s[1])*ms)
			}
			if got := p.Budget(2048); got != tc.want {
				t.Fatalf("Budget = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestFlowsTakeTurnsUnderASmallBudget: with more flows than a step has
// tokens (a paced step on a CPU), every flow's request still gets a token
// every few steps; none waits for the earlier flows to finish.
func TestFlowsTakeTurnsUnderASmallBudget(t *testing.T) {
	kv, err := kvcache.New(kvcache.Config{NumBlocks: 64, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{MaxNumSeqs: 16, MaxNumBatchedTokens: 64, MaxModelLen: 256, BlockSize: 4}, kv)
	const flows = 10
	for i := range flows {
		sp := wire.DefaultSamplingParams()
		sp.MaxTokens, sp.IgnoreEOS = 100, true
		if err := s.Add(NewRequest(&wire.EngineCoreRequest{RequestID: fmt.Sprint("r", i), PromptTokenIDs: []int32{int32(100 + i), 5, 6},
			SamplingParams: sp, FlowID: fmt.Sprint("f", i)}, "c", nil)); err != nil {
			t.Fatal(err)
		}
	}
	step := func() map[string]bool {
		b := s.Schedule()
		got := map[string]bool{}
		for _, it := range b.Items {
			got[it.RequestID] = it.Sample
		}
		s.Update(b, &batch.Result{Sampled: make([]int32, len(b.Items))})
		return got
	}
	step() // every prompt (30 tokens) fits the first step
	s.pace = Pace{Target: time.Second, Min: 1}
	s.pace.Observe(1, 250*time.Millisecond) // 4 tokens a step from now on
	last := map[string]int{}
	for n := 1; n <= 12; n++ {
		for id := range step() {
			last[id] = n
		}
		if n >= 3 {
			for i := range flows {
				if id := fmt.Sprint("r", i); n-last[id] >= 3 {
					t.Fatalf("step %d: %s has had no token since step %d", n, id, last[id])
				}
			}
		}
	}
}
