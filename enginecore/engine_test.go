package enginecore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// countingBackend is a model whose greedy next token is the last input
// token plus one (mod vocab): a prompt ending in 5 continues 6 7 8 …, and
// one ending in 60 reaches EOS (2) after 63 0 1. Its hidden state at a
// token is [position, token] (Dim 2). It records the steps.
type countingBackend struct {
	vocab   int
	steps   int
	tokens  int // tokens computed, all steps
	blocks  int
	allocs  int
	lastLen int

	kvReleases, weightReleases int // sleep mode's memoryReleaser calls

	// LoRA: loading a path that starts with "bad" fails; each adapter a
	// request applies with a non-zero scale adds 1 to its next token.
	loraLoads []string
}

func (b *countingBackend) LoadLoRA(path string, maxRank int) (*lora.Adapter, error) {
	b.loraLoads = append(b.loraLoads, path)
	if strings.HasPrefix(path, "bad") {
		return nil, fmt.Errorf("%w: %s is not a LoRA adapter", lora.ErrFormat, path)
	}
	return &lora.Adapter{Path: path}, nil
}

func (b *countingBackend) ReleaseKV()      { b.kvReleases++ }
func (b *countingBackend) ReleaseWeights() { b.weightReleases++ }

const testEOS = 2

func (b *countingBackend) Model() runner.ModelInfo {
	return runner.ModelInfo{Name: "counting", Arch: "test", VocabSize: b.vocab, MaxContextLen: 1 << 12,
		EOSTokenIDs: []int32{testEOS}, BOSTokenID: 1, NumLayers: 1, NumKVHeads: 1, HeadDim: 1, Dim: 2}
}
func (b *countingBackend) AllocateKV(numBlocks, blockSize int) error {
	b.blocks, b.allocs = numBlocks, b.allocs+1
	return nil
}
func (b *countingBackend) KVBytesPerBlock(blockSize int) int64 { return int64(blockSize) }
func (b *countingBackend) Close() error                        { return nil }

func (b *countingBackend) Forward(_ context.Context, st *runner.Step, logits []float32) error {
	b.steps++
	b.tokens += len(st.TokenIDs)
	b.lastLen = len(st.TokenIDs)
	row := 0
	for _, s := range st.Seqs {
		first, n := s.LogitRows()
		for t := first; t < first+n; t++ {
			out := logits[row*b.vocab : (row+1)*b.vocab]
			clear(out)
			next := int(st.TokenIDs[t]) + 1
			for _, u := range s.LoRA {
				if u.Scale != 0 {
					next++
				}
			}
			out[next%b.vocab] = 10
			row++
		}
	}
	h := 0
	for _, s := range st.Seqs {
		first, n := s.HiddenRowsOf()
		for t := first; t < first+n; t++ {
			st.Hidden[2*h], st.Hidden[2*h+1] = float32(st.Positions[t]), float32(st.TokenIDs[t])
			h++
		}
	}
	return nil
}

// engineHarness drives an Engine from a datadriven script, with a clock
// that moves only when the script says:
//
//	init blocks=8 block-size=4 max-seqs=4 max-batched=16 max-len=64 [max-sessions=N] [caching=false] [publish] [vocab] [max-loras=N]
//	     [spec=ngram|ngram-simple spec-k=4 spec-min=1 spec-max=3]   speculative decoding
//	hello fe1 [version=N]              HELLO from frontend fe1 (its ZMQ identity)
//	add fe1 id=a [start=10] [len=4] [tokens=1,2] [max=4] [min=0] [session=s] [salt=x] [stop=5,9] [ignore-eos] [prio=0] [regex=R]
//	    [pool=LAST|MEAN|CLS|default [dims=N] [normalize]]  an embedding request
//	    [lora=PATH:SCALE,…]             LoRA adapters (each adds 1 to the next token; a PATH "bad…" fails to load; ids 1, 2, … by first mention)
//	loras                              the adapter files loaded so far, in order
//	compile-start                      Engine.NextCompile: hand the next compile to a (pretend) worker
//	compile-done [fail=msg]            run the oldest started compile (or fail it) and give it to Engine.Compiled
//	compiling                          the holding area: requests waiting, compiles queued and started
//	step [n=1]                         Engine.Step, n times
//	run                                step until there is no work
//	abort fe1 a b                      ABORT
//	drop fe1                           Engine.Drop (the shell found it silent)
//	utility fe1 METHOD [ARG]           UTILITY (an ARG that is a number is an int, [a,b] a list, nil nil)
//	idle                               Engine.Tick (the shell's periodic call: idle sleep)
//	publish                            Engine.Publish: topics and contents
//	warm-up [n=64]                     Engine.WarmUp
//	tick s=1.5                         advance the clock
//	state                              load figures and frontends
//
// With vocab, token t < 64 stands for the byte '0'+t (1 and 2, BOS and
// EOS, are special), so regex=5678 allows exactly the tokens 5 6 7 8.
type engineHarness struct {
	be      *countingBackend
	e       *Engine
	now     time.Time
	seq     int
	started []CompileJob // handed out by compile-start, not done yet
	events  bool         // init … events: print each output's request events
	loraIDs map[string]int
}

// countingVocab is the vocabulary of the counting model: token t is the
// byte '0'+t; BOS (1) and EOS (2) are special.
func countingVocab(n int) *gguf.Vocab {
	v := &gguf.Vocab{Pieces: make([][]byte, n), Special: make([]bool, n)}
	for t := range n {
		v.Pieces[t] = []byte{byte('0' + t)}
		v.Special[t] = t == 1 || t == testEOS
	}
	return v
}

func (h *engineHarness) cmd(t *testing.T, d *datadriven.TestData) string {
	args := map[string]string{}
	var pos []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			pos = append(pos, a.Key)
			continue
		}
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
	arg := func(i int) string {
		if i >= len(pos) {
			t.Fatalf("%s: %s needs %d positional arguments", d.Pos, d.Cmd, i+1)
		}
		return pos[i]
	}
	switch d.Cmd {
	case "init":
		h.be = &countingBackend{vocab: 64}
		h.now = time.Unix(1000, 0)
		var vocab *gguf.Vocab
		if slices.Contains(pos, "vocab") {
			vocab = countingVocab(h.be.vocab)
		}
		var sc *spec.Config
		if m, ok := args["spec"]; ok {
			sc = &spec.Config{Method: m, NumSpeculativeTokens: num("spec-k", 4), PromptLookupMin: num("spec-min", 1), PromptLookupMax: num("spec-max", 3)}
		}
		e, err := NewEngine(Config{ServedModelName: "counting", MaxModelLen: num("max-len", 64), BlockSize: num("block-size", 4),
			NumBlocks: num("blocks", 8), MaxNumSeqs: num("max-seqs", 4), MaxNumBatchedTokens: num("max-batched", 16),
			EnablePrefixCaching: args["caching"] != "false", MaxSessionRecords: num("max-sessions", 0), Vocab: vocab,
			SleepIdle: time.Duration(num("sleep-idle", 0)) * time.Second, Speculative: sc, MaxLoRAs: num("max-loras", 0),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, h.be)
		if err != nil {
			return "error: " + err.Error()
		}
		if slices.Contains(pos, "publish") {
			e.PublishTo("tcp://engine:5556", true)
		}
		h.e, h.events = e, slices.Contains(pos, "events")
		return "ok"
	case "hello":
		return h.outs(h.e.Handle(h.now, arg(0), &wire.Hello{ProtocolVersion: num("version", wire.ProtocolVersion), FrontendID: arg(0) + "-id"}))
	case "add":
		n, start := num("len", 4), num("start", 10)
		prompt := make([]int32, n)
		for i := range prompt {
			prompt[i] = int32((start + i) % h.be.vocab)
		}
		if list, ok := args["tokens"]; ok {
			prompt = prompt[:0]
			for _, f := range strings.Split(list, ",") {
				v, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s: tokens=%q", d.Pos, list)
				}
				prompt = append(prompt, int32(v))
			}
		}
		sp := wire.DefaultSamplingParams()
		sp.Temperature = 0
		sp.MaxTokens, sp.MinTokens = num("max", 4), num("min", 0)
		_, sp.IgnoreEOS = args["ignore-eos"]
		if slices.Contains(pos, "ignore-eos") {
			sp.IgnoreEOS = true
		}
		if s, ok := args["stop"]; ok {
			for _, f := range strings.Split(s, ",") {
				v, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s: stop=%q", d.Pos, s)
				}
				sp.StopTokenIDs = append(sp.StopTokenIDs, int32(v))
			}
		}
		if re, ok := args["regex"]; ok {
			sp.StructuredOutputs = &wire.StructuredOutputs{Regex: re}
		}
		var pooling *wire.PoolingParams
		if t, ok := args["pool"]; ok {
			pooling = &wire.PoolingParams{PoolingType: strings.TrimPrefix(t, "default"), Dimensions: num("dims", 0),
				Normalize: slices.Contains(pos, "normalize")}
		}
		var loras []wire.LoRARequest
		if list, ok := args["lora"]; ok {
			for _, f := range strings.Split(list, ",") {
				path, scale, _ := strings.Cut(f, ":")
				s, err := strconv.ParseFloat(scale, 64)
				if err != nil {
					t.Fatalf("%s: lora=%q", d.Pos, list)
				}
				if h.loraIDs == nil {
					h.loraIDs = map[string]int{}
				}
				if h.loraIDs[path] == 0 {
					h.loraIDs[path] = len(h.loraIDs) + 1 // a frontend's ids: one per file, from 1
				}
				loras = append(loras, wire.LoRARequest{Name: path, ID: h.loraIDs[path], Path: path, Scale: s})
			}
		}
		return h.outs(h.e.Handle(h.now, arg(0), &wire.EngineCoreRequest{RequestID: args["id"], PromptTokenIDs: prompt,
			SamplingParams: sp, SessionID: args["session"], CacheSalt: args["salt"], Priority: num("prio", 0), Pooling: pooling, LoRA: loras}))
	case "loras":
		return strings.Join(h.be.loraLoads, " ")
	case "compile-start":
		j, ok := h.e.NextCompile()
		if !ok {
			return "nothing to compile"
		}
		h.started = append(h.started, j)
		return fmt.Sprintf("compiling %s %q", j.Constraint.Kind, j.Constraint.Data)
	case "compile-done":
		if len(h.started) == 0 {
			t.Fatalf("%s: no compile started", d.Pos)
		}
		j := h.started[0]
		h.started = h.started[1:]
		res := CompileResult{Constraint: j.Constraint, Err: errors.New(args["fail"])}
		if _, fail := args["fail"]; !fail {
			res = j.Run()
		}
		return h.outs(h.e.Compiled(h.now, res))
	case "compiling":
		return h.compiling()
	case "step":
		var b strings.Builder
		for range num("n", 1) {
			b.WriteString(h.step(t))
		}
		return b.String()
	case "run":
		var b strings.Builder
		for i := 0; h.e.HasWork(); i++ {
			if i > 1000 {
				t.Fatalf("%s: still working after 1000 steps", d.Pos)
			}
			b.WriteString(h.step(t))
		}
		return b.String()
	case "abort":
		return h.outs(h.e.Handle(h.now, arg(0), &wire.Abort{RequestIDs: pos[1:]}))
	case "drop":
		h.e.Drop(h.now, pos...)
		return h.state()
	case "utility":
		u := &wire.Utility{CallID: uint64(h.seq), Method: arg(1)}
		h.seq++
		for _, a := range pos[2:] {
			u.Args = append(u.Args, utilityArg(a))
		}
		return h.outs(h.e.Handle(h.now, arg(0), u))
	case "publish":
		var b strings.Builder
		for _, p := range h.e.Publish(h.now) {
			var payload any = p.KV
			topic := "kv"
			if p.Sessions != nil {
				payload, topic = p.Sessions, "sessions"
			}
			raw, err := wire.Marshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := wire.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s\n", topic, compact(v))
		}
		if b.Len() == 0 {
			return "nothing"
		}
		return b.String()
	case "warm-up":
		before := h.be.steps
		if err := h.e.WarmUp(context.Background(), h.now, num("n", 64)); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%d steps, %d tokens\n%s", h.be.steps-before, h.be.lastLen, h.state())
	case "idle":
		h.e.Tick(h.now)
		return h.state()
	case "tick":
		s, err := strconv.ParseFloat(args["s"], 64)
		if err != nil {
			t.Fatalf("%s: tick s=%q", d.Pos, args["s"])
		}
		h.now = h.now.Add(time.Duration(s * float64(time.Second)))
		return "ok"
	case "state":
		return h.state()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (h *engineHarness) step(t *testing.T) string {
	before := h.be.steps
	outs, err := h.e.Step(context.Background(), h.now)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	head := "step: nothing scheduled\n"
	if h.be.steps > before {
		head = fmt.Sprintf("step: %d tokens\n", h.be.lastLen)
	}
	if len(outs) == 0 {
		return head
	}
	return head + h.outs(outs)
}

// outs prints messages for frontends, one line per output.
func (h *engineHarness) outs(outs []Out) string {
	if len(outs) == 0 {
		return "no reply"
	}
	var b strings.Builder
	for _, o := range outs {
		switch p := o.Payload.(type) {
		case *wire.Ready:
			if p.Error != "" {
				fmt.Fprintf(&b, "%s READY refused: %s\n", o.Client, p.Error)
			} else {
				fmt.Fprintf(&b, "%s READY model=%s blocks=%d block-size=%d\n", o.Client, p.ServedModelName, p.NumBlocks, p.BlockSize)
			}
		case *wire.EngineCoreOutputs:
			for _, eo := range p.Outputs {
				fmt.Fprintf(&b, "%s OUTPUT %s +%v", o.Client, eo.RequestID, eo.NewTokenIDs)
				if eo.FinishReason != wire.FinishNone {
					fmt.Fprintf(&b, " finished=%s", eo.FinishReason)
					if eo.StopReason != nil {
						fmt.Fprintf(&b, " stop_reason=%v", eo.StopReason)
					}
				}
				if eo.NumCachedTokens > 0 {
					fmt.Fprintf(&b, " cached=%d", eo.NumCachedTokens)
				}
				if sd := eo.SpecDecode; sd != nil {
					fmt.Fprintf(&b, " draft=%d/%d", sd.NumAcceptedTokens, sd.NumDraftTokens)
				}
				if eo.PoolingOutput != nil {
					fmt.Fprintf(&b, " pooled=%v", eo.PoolingOutput)
				}
				if h.events && len(eo.Events) > 0 {
					b.WriteString(" events=")
					for i, ev := range eo.Events {
						if i > 0 {
							b.WriteString(",")
						}
						fmt.Fprintf(&b, "%s@%g", eventNames[ev.Type], ev.Timestamp-1000)
					}
				}
				b.WriteString("\n")
			}
		case *wire.UtilityResult:
			if p.FailureMessage != "" {
				fmt.Fprintf(&b, "%s UTILITY error: %s\n", o.Client, p.FailureMessage)
				break
			}
			var v any
			if len(p.Result) > 0 {
				if err := wire.Unmarshal(p.Result, &v); err != nil {
					fmt.Fprintf(&b, "%s UTILITY undecodable: %v\n", o.Client, err)
					break
				}
			}
			fmt.Fprintf(&b, "%s UTILITY %s\n", o.Client, compact(v))
		default:
			fmt.Fprintf(&b, "%s %v %T\n", o.Client, o.Type, o.Payload)
		}
	}
	return b.String()
}

var eventNames = map[wire.EngineCoreEventType]string{wire.EventQueued: "queued", wire.EventScheduled: "scheduled", wire.EventPreempted: "preempted"}

// compiling prints the holding area: who waits on which constraint.
func (h *engineHarness) compiling() string {
	hd := h.e.holding
	if len(hd.reqs) == 0 && len(hd.pending) == 0 {
		return "nothing compiling"
	}
	var lines []string
	for c, p := range hd.pending {
		var ids []string
		for _, k := range p.waiters {
			ids = append(ids, hd.reqs[k].req.WireID)
		}
		state := "queued"
		if p.started {
			state = "started"
		}
		lines = append(lines, fmt.Sprintf("%s %q %s, waiting: %v", c.Kind, c.Data, state, ids))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func (h *engineHarness) state() string {
	st := h.e.Load()
	out := fmt.Sprintf("running %d waiting %d free blocks %d/%d preemptions %d prefix hits %d/%d sessions %d records %d\nfrontends %v",
		st.NumRunningReqs, st.NumWaitingReqs, st.NumFreeBlocks, st.NumTotalBlocks, st.NumPreemptions,
		st.PrefixCacheHits, st.PrefixCacheQueries, st.NumSessions, h.e.sessions.len(), h.e.Clients())
	if st.Sleeping || h.be.kvReleases > 0 || h.be.weightReleases > 0 {
		out += fmt.Sprintf("\nsleeping %v level %d idle %v; releases: kv %d weights %d; KV allocations %d",
			st.Sleeping, st.SleepLevel, h.e.slp.idle, h.be.kvReleases, h.be.weightReleases, h.be.allocs)
	}
	if sd := st.SpecDecoding; sd != nil {
		out += fmt.Sprintf("\nspec k=%d drafts %d tokens %d accepted %d per position %v",
			sd.NumSpecTokens, sd.NumDrafts, sd.NumDraftTokens, sd.NumAcceptedTokens, sd.NumAcceptedTokensPerPos)
	}
	return out
}

// utilityArg reads a script's utility argument: a number is an int64, [a,b]
// a list of strings, nil nil, anything else a string.
func utilityArg(a string) any {
	if n, err := strconv.ParseInt(a, 10, 64); err == nil {
		return n
	}
	if a == "nil" {
		return nil
	}
	if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
		list := []any{}
		for _, f := range strings.Split(strings.Trim(a, "[]"), ";") {
			if f != "" {
				list = append(list, utilityArg(f))
			}
		}
		return list
	}
	return a
}

// compact prints a decoded msgpack value as JSON with sorted keys,
// timestamps replaced by their offset from the harness clock's start.
func compact(v any) string {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(v))
		for _, k := range keys {
			out[k] = normalize(v[k])
			if f, ok := v[k].(float64); ok && (k == "last_active" || k == "timestamp") {
				out[k] = f - 1000
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = normalize(v[i])
		}
		return out
	case []byte:
		return fmt.Sprintf("%x", v)
	}
	return v
}

// TestEngineScripts runs the scripts in testdata/engine: the whole engine
// (handshakes, requests, steps, sessions, salts, aborts, silent frontends,
// preemption, utilities, events) with no sockets, goroutines or timers.
func TestEngineScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/engine", func(t *testing.T, path string) {
		h := &engineHarness{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string { return h.cmd(t, d) })
	})
}

// TestSessionStateStaysBounded: 100,000 distinct session ids pass through
// an engine (with a PUB socket, so the publisher tracks them too); what it
// keeps per session stays bounded by the KV cache and the records' cap,
// and the heap does not grow with the number of ids.
func TestSessionStateStaysBounded(t *testing.T) {
	be := &countingBackend{vocab: 64}
	e, err := NewEngine(Config{MaxModelLen: 64, BlockSize: 4, NumBlocks: 64, MaxNumSeqs: 8, MaxNumBatchedTokens: 64,
		EnablePrefixCaching: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, be)
	if err != nil {
		t.Fatal(err)
	}
	e.PublishTo("tcp://engine:5556", true)
	now := time.Unix(1000, 0)
	e.Handle(now, "fe", &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"})
	sp := wire.DefaultSamplingParams()
	sp.Temperature, sp.MaxTokens = 0, 1
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	const n = 100_000
	for i := range n {
		if i == n/10 {
			base = heap()
		}
		now = now.Add(10 * time.Millisecond)
		id := fmt.Sprintf("session-%06d", i)
		e.Handle(now, "fe", &wire.EngineCoreRequest{RequestID: "r" + id, PromptTokenIDs: []int32{int32(i % 60), 1, 2, 3, 4}, SamplingParams: sp, SessionID: id})
		for e.HasWork() {
			if _, err := e.Step(context.Background(), now); err != nil {
				t.Fatal(err)
			}
		}
		e.Publish(now)
	}
	grown := int64(heap()) - int64(base)
	t.Logf("after %d sessions: %d records, %d KV sessions, %d publisher entries, heap %+d bytes since %d", n,
		e.sessions.len(), e.kv.NumSessions(), len(e.ev.held), grown, n/10)
	if e.sessions.len() > 64 || e.kv.NumSessions() > 64 {
		t.Errorf("%d session records and %d KV sessions for a 64-block cache: not bounded by it", e.sessions.len(), e.kv.NumSessions())
	}
	if len(e.ev.held) > 200 {
		t.Errorf("the publisher tracks %d sessions", len(e.ev.held))
	}
	if grown > 5<<20 {
		t.Errorf("heap grew %d bytes over %d sessions", grown, n-n/10)
	}
}
