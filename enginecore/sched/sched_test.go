package sched

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tandem-llm/tandem/enginecore/batch"
	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/wire"
)

// harness drives a scheduler from a datadriven script:
//
//	init blocks=8 block-size=4 max-seqs=4 max-batched=16 max-len=64 [caching=false]
//	init ... [long-prefill=0]
//	add id=a prompt=10 [max=4] [min=0] [prio=0] [session=s] [salt=x] [prefix=p] [flow=f] [ignore-eos] [progress] [shift=n_keep]
//	step [eos=a,b]        schedule, "execute" (sample token 7, or EOS 2 for listed ids), update
//	abort a b
//	state
type harness struct {
	kv *kvcache.Manager
	s  *Scheduler
}

const eosToken = 2

func (h *harness) cmd(t *testing.T, d *datadriven.TestData) string {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	num := func(k string, def int) int {
		v, ok := args[k]
		if !ok {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %s=%q is not a number", d.Pos, k, v)
		}
		return n
	}
	switch d.Cmd {
	case "init":
		kv, err := kvcache.New(kvcache.Config{NumBlocks: num("blocks", 8), BlockSize: num("block-size", 4), EnablePrefixCaching: args["caching"] != "false"})
		if err != nil {
			t.Fatal(err)
		}
		h.kv = kv
		h.s = New(Config{MaxNumSeqs: num("max-seqs", 4), MaxNumBatchedTokens: num("max-batched", 16), MaxModelLen: num("max-len", 64), BlockSize: num("block-size", 4),
			LongPrefillTokenThreshold: num("long-prefill", 0)}, kv)
		return "ok"
	case "add":
		n := num("prompt", 4)
		prompt := make([]int32, n)
		// Tokens differ per request unless they share a prefix name.
		seed := int32(len(args["id"]) * 1000)
		if p, ok := args["prefix"]; ok {
			seed = int32(len(p) * 100000)
		}
		for i := range prompt {
			prompt[i] = 10 + seed + int32(i)
		}
		if _, ok := args["prefix"]; !ok {
			prompt[0] = 10 + int32(args["id"][0])*7
		}
		sp := wire.DefaultSamplingParams()
		sp.MaxTokens = num("max", 4)
		sp.MinTokens = num("min", 0)
		_, sp.IgnoreEOS = args["ignore-eos"]
		_, sp.ReturnProgress = args["progress"]
		if _, ok := args["shift"]; ok {
			keep := num("shift", 0)
			sp.ContextShift = &keep
		}
		var pooling *wire.PoolingParams
		if t, ok := args["pool"]; ok {
			pooling = &wire.PoolingParams{PoolingType: t}
		}
		r := NewRequest(&wire.EngineCoreRequest{
			RequestID: args["id"], PromptTokenIDs: prompt, SamplingParams: sp,
			Priority: num("prio", 0), SessionID: args["session"], CacheSalt: args["salt"], FlowID: args["flow"],
			Pooling: pooling,
		}, "client", []int32{eosToken})
		if err := h.s.Add(r); err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "step":
		eos := map[string]bool{}
		for _, id := range strings.Split(args["eos"], ",") {
			eos[id] = true
		}
		b := h.s.Schedule()
		var sb strings.Builder
		fmt.Fprintf(&sb, "scheduled %d tokens", b.NumTokens)
		if b.NumPreempted > 0 {
			fmt.Fprintf(&sb, ", preempted %d", b.NumPreempted)
		}
		sb.WriteString("\n")
		res := &batch.Result{Sampled: make([]int32, len(b.Items))}
		for i, it := range b.Items {
			tok := int32(7)
			if eos[it.RequestID] {
				tok = eosToken
			}
			res.Sampled[i] = tok
			if it.Pooling != nil && it.Sample {
				if res.Pooled == nil {
					res.Pooled = make([][]float32, len(b.Items))
				}
				res.Pooled[i] = []float32{float32(it.Start + it.Len)} // stands for the embedding of that many tokens
			}
			fmt.Fprintf(&sb, "  %s: [%d,%d) of %d blocks=%v", it.RequestID, it.Start, it.Start+it.Len, len(it.Tokens), it.BlockTable)
			if it.Sample {
				sb.WriteString(" sample")
			}
			if it.MaskStop {
				sb.WriteString(" mask-stop")
			}
			sb.WriteString("\n")
		}
		shifts := map[*Request]int{}
		for _, it := range b.Items {
			r := h.s.Get(it.RequestID)
			shifts[r] = r.NumShifts
		}
		for _, o := range h.s.Update(b, res) {
			if r := o.Req; r.NumShifts > shifts[r] {
				fmt.Fprintf(&sb, "  shifted %s: tokens %v (prompt %d, generated %d)\n", r.ID, r.tokens, r.numPrompt, r.numOutput())
			}
			if o.PromptProgress > 0 || (len(o.NewTokens) == 0 && !o.Finished) {
				fmt.Fprintf(&sb, "  progress %s: %d of %d, %d tokens\n", o.Req.ID, o.PromptProgress, len(o.Req.PromptTokenIDs()), len(o.NewTokens))
			}
			if o.Finished {
				fmt.Fprintf(&sb, "  finished %s: %s stop_reason=%v outputs=%d cached=%d", o.Req.ID, o.Req.FinishReason, o.Req.StopReason, len(o.Req.OutputTokenIDs()), o.Req.NumCachedTokens())
				if o.Pooled != nil {
					fmt.Fprintf(&sb, " pooled=%v", o.Pooled)
				}
				sb.WriteString("\n")
			}
		}
		return sb.String()
	case "abort":
		var ids []string
		for _, a := range d.CmdArgs {
			ids = append(ids, a.Key)
		}
		var out []string
		for _, r := range h.s.Abort(ids...) {
			out = append(out, r.ID)
		}
		return fmt.Sprintf("aborted %v", out)
	case "state":
		return h.state()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (h *harness) state() string {
	var running, waiting []string
	for _, r := range h.s.running {
		running = append(running, fmt.Sprintf("%s(%d/%d)", r.ID, r.numComputedTokens, len(r.tokens)))
	}
	for _, r := range h.s.waiting {
		waiting = append(waiting, fmt.Sprintf("%s(%d/%d)", r.ID, r.numComputedTokens, len(r.tokens)))
	}
	st := h.kv.Stats()
	sort.Strings(nil)
	return fmt.Sprintf("running: %v\nwaiting: %v\nfree blocks: %d/%d preemptions: %d prefix hits: %d/%d",
		running, waiting, st.NumFreeBlocks, st.NumBlocks, h.s.NumPreemptions(), st.PrefixHits, st.PrefixQueries)
}

func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return h.cmd(t, d) })
	})
}
