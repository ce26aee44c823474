package enginecore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/enginecore/drafter"
	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/enginecore/structured"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// Config is one engine core's settings.
type Config struct {
	EngineIndex         int    // data-parallel rank, reported in every message
	Model               string // what --model named (a path or "dummy")
	ServedModelName     string
	MaxModelLen         int // tokens per request, prompt + output
	BlockSize           int // tokens per KV block
	NumBlocks           int // KV blocks in the pool
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// LongPrefillTokenThreshold caps one request's tokens per step (vLLM's
	// --long-prefill-token-threshold); 0 = no cap.
	LongPrefillTokenThreshold int
	// StepTarget is the step time the token budget is paced to (see
	// sched.Pace; the shell reports each step's time with StepTook);
	// 0 = every step may compute MaxNumBatchedTokens.
	StepTarget          time.Duration
	EnablePrefixCaching bool
	HeartbeatInterval   time.Duration  // how often to send heartbeats
	ReportInterval      time.Duration  // how often to send frontends the load (a HEARTBEAT); default 100 ms
	HeartbeatTimeout    time.Duration  // a frontend silent this long is gone
	MaxSessionRecords   int            // session records kept at most (LRU); default 16384
	KVEvents            KVEventsConfig // the KV-events PUB socket's topic, layout and buffers
	// SleepIdle puts the engine to sleep (level 2, see sleep.go) after
	// this long without requests (llama-server's --sleep-idle-seconds);
	// 0 = never.
	SleepIdle time.Duration
	// MaxLogprobs caps logprobs and prompt_logprobs per token (vLLM's
	// --max-logprobs); -1 = the whole vocabulary; nil = 20, vLLM's default.
	MaxLogprobs *int
	// Vocab is what each token id stands for, for structured outputs
	// (enginecore/structured); nil: requests with a constraint are refused.
	Vocab *gguf.Vocab
	// Speculative turns on speculative decoding (vLLM's
	// --speculative-config); nil = off. Its draft_model method drafts
	// with DraftBackend, the draft model loaded (its KV cache is the
	// engine's to allocate).
	Speculative  *spec.Config
	DraftBackend runner.Backend
	// Pooling is how an embedding request that names no pooling type
	// pools its hidden states (vLLM's --pooler-config pooling_type,
	// llama-server's --pooling): wire.PoolingLast, Mean, CLS or None;
	// "" = the model file's pooling_type, else LAST.
	Pooling string
	// LoadLoRA loads a LoRA adapter file a request names; nil: the
	// backend's LoadLoRA (with MaxLoRARank) if it has one, else requests
	// naming adapters are refused.
	LoadLoRA func(path string) (*lora.Adapter, error)
	// MaxLoRARank refuses adapters of a higher rank (vLLM's
	// --max-lora-rank); 0: any.
	MaxLoRARank int
	// MaxLoRAs is how many adapters stay loaded (least recently used
	// dropped first; vLLM's --max-cpu-loras); 0: DefaultMaxLoRAs.
	MaxLoRAs int
	Version  string
	Logger   *slog.Logger
}

// Engine is the engine core's logic as a state machine (etcd-raft's
// RawNode, vLLM's EngineCore): it owns the scheduler, the KV-cache
// manager, the model runner, the session records, the frontends'
// handshakes and the event publisher's state. It has no goroutines,
// channels, atomics, timers or sockets and never reads the clock: time
// comes in as an argument, and what it would send comes back as data
// (Out for a frontend, Pub for the PUB socket or every frontend). One goroutine at a time
// calls it; proc.go's Core is that goroutine. (Core also lends it a way
// to fill structured-output masks on a goroutine while the forward pass
// runs, joined before sampling; see forward.)
type Engine struct {
	cfg      Config
	log      *slog.Logger
	be       runner.Backend
	run      *runner.Runner
	kv       *kvcache.Manager
	sched    *sched.Scheduler
	sessions *sessions
	life     *lifecycles // each request's events for its next output
	clients  *clients
	ev       *eventState
	engineID string
	pid      int
	eos      []int32
	clock    time.Time // the time of the call being handled: the KV manager's clock

	lastStepTokens int // tokens the last Step computed, for StepTook

	propose spec.Proposer    // an n-gram method's; nil: none
	drafter *drafter.Drafter // a draft model's; nil: none

	slp sleepState // sleep mode (sleep.go)

	loras *loras // the LoRA adapters requests named (loras.go)

	// overlap, set by the shell, runs fn alongside the caller and returns
	// the wait for it (forward fills masks with it during the forward
	// pass); nil runs the fill in line, as the datadriven scripts do.
	overlap func(fn func()) (wait func())

	vocab       *structured.Vocab      // nil: no structured outputs
	compiler    Compiler               // what compile jobs run: vocab (or a test's)
	compiled    *structured.Cache      // recently compiled constraints (of vocab)
	holding     *holding               // requests waiting for their constraint to compile
	constraints map[string]*constraint // by request key
	failed      map[string]error       // requests whose matcher failed this step
	// thinking are the answers followed through their think block (a
	// constraint waits, or a budget bounds it: think.go), by request key.
	thinking map[string]*thinking
	// byFirstByte lists the token ids by their first byte (firstBytes),
	// built on first use: where think tags and forced bytes are looked up.
	byFirstByte *[256][]int32

	// publishing: session reports are built (PublishTo was called); kvPub:
	// KV events too (there is a PUB socket); events is its endpoint, for
	// get_events_endpoint ("" when unnamed).
	publishing, kvPub bool
	events            string
	replayAt          string // the replay socket's endpoint, for get_replay_endpoint ("" when none)
}

// Out is a message for one frontend.
type Out struct {
	Client  string // the frontend's ZMQ identity
	Type    wire.MsgType
	Payload any
}

// ServedName is the model's name in the API: name when set, else "dummy"
// for the dummy model, else model's base name without ".gguf".
func ServedName(name, model string) string {
	if name != "" {
		return name
	}
	if model == "dummy" {
		return "dummy"
	}
	return strings.TrimSuffix(filepath.Base(filepath.Clean(model)), ".gguf")
}

// ErrFatal marks errors after which the engine cannot continue.
var ErrFatal = errors.New("enginecore: fatal")

// NewEngine builds an engine over be, allocating its KV cache. It builds
// no KV or session events until PublishTo says where they go.
func NewEngine(cfg Config, be runner.Backend) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.ServedModelName = ServedName(cfg.ServedModelName, cfg.Model)
	if cfg.BlockSize <= 0 || cfg.NumBlocks <= 0 {
		return nil, fmt.Errorf("enginecore: block size %d and block count %d must be positive", cfg.BlockSize, cfg.NumBlocks)
	}
	if cfg.MaxLogprobs == nil {
		n := wire.DefaultMaxLogprobs
		cfg.MaxLogprobs = &n
	} else if *cfg.MaxLogprobs < -1 {
		return nil, fmt.Errorf("enginecore: max logprobs %d: want -1 (the whole vocabulary) or ≥ 0", *cfg.MaxLogprobs)
	}
	if cfg.LongPrefillTokenThreshold < 0 || cfg.StepTarget < 0 {
		return nil, fmt.Errorf("enginecore: long-prefill-token-threshold %d and target-step-time %v must not be negative", cfg.LongPrefillTokenThreshold, cfg.StepTarget)
	}
	if err := be.AllocateKV(cfg.NumBlocks, cfg.BlockSize); err != nil {
		return nil, fmt.Errorf("enginecore: allocate KV cache: %w", err)
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	e := &Engine{
		cfg:      cfg,
		log:      cfg.Logger.With("engine", cfg.EngineIndex),
		be:       be,
		run:      runner.New(be, cfg.BlockSize),
		sessions: newSessions(cfg.MaxSessionRecords),
		life:     newLifecycles(),
		clients:  newClients(),
		ev:       newEventState(),
		engineID: hex.EncodeToString(idb[:]),
		pid:      os.Getpid(),
		eos:      be.Model().EOSTokenIDs,
	}
	e.constraints, e.failed, e.holding = map[string]*constraint{}, map[string]error{}, newHolding()
	e.thinking = map[string]*thinking{}
	e.loras = newLoras(cfg, be, e.log)
	if v := cfg.Vocab; v != nil {
		sv, err := structured.NewVocab(v.Pieces, v.Special, e.eos)
		if err != nil {
			return nil, fmt.Errorf("enginecore: %w", err)
		}
		e.vocab, e.compiler, e.compiled = sv, sv, structured.NewCache(sv, compiledConstraints)
	}
	kv, err := kvcache.New(kvcache.Config{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, EnablePrefixCaching: cfg.EnablePrefixCaching,
		EnableEvents: cfg.EnablePrefixCaching, ReportGoneSessions: true, Now: func() time.Time { return e.clock }})
	if err != nil {
		return nil, fmt.Errorf("enginecore: %w", err)
	}
	e.kv = kv
	numSpec := 0
	if sc := cfg.Speculative; sc != nil {
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("enginecore: %w", err)
		}
		numSpec, e.propose = sc.NumSpeculativeTokens, sc.Proposer()
		if len(sc.SynthRates) > 0 {
			e.run.SetSynthRates(sc.SynthRates)
			e.log.Warn("synthetic speculative acceptance is on, for benchmarking: the output is not the model's", "rates", sc.SynthRates)
		}
		if sc.Method == spec.MethodDraftModel {
			if e.drafter, err = newDrafter(cfg, be); err != nil {
				return nil, fmt.Errorf("enginecore: %w", err)
			}
		}
	}
	e.sched = sched.New(sched.Config{
		MaxNumSeqs:          cfg.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens,
		MaxModelLen:         cfg.MaxModelLen,
		BlockSize:           cfg.BlockSize,

		LongPrefillTokenThreshold: cfg.LongPrefillTokenThreshold,
		StepTarget:                cfg.StepTarget,
		PromptLogprobsChunk:       promptLogprobsChunk(be.Model().VocabSize),
		NumSpeculativeTokens:      numSpec,
		MinDraft:                  minDraft(cfg.Speculative),
	}, kv)
	return e, nil
}

// promptLogprobsRowBytes bounds the logits one step of a request with
// prompt_logprobs asks for (a row of V float32 per token): 64 MiB, 341
// tokens of a 49,152-token vocabulary.
const promptLogprobsRowBytes = 64 << 20

func promptLogprobsChunk(vocab int) int {
	return max(16, promptLogprobsRowBytes/(4*max(vocab, 1)))
}

// Step runs one schedule → execute → update round and returns the outputs
// for the frontends. A step with nothing scheduled returns none.
func (e *Engine) Step(ctx context.Context, now time.Time) ([]Out, error) {
	e.clock = now
	defer e.tidySessions()
	if e.slp.paused {
		return nil, nil
	}
	e.slp.lastActive = now
	b := e.sched.Schedule()
	e.lastStepTokens = b.NumTokens
	if len(b.Items) == 0 {
		return nil, nil
	}
	e.life.scheduled(e.sched, b, unixSeconds(now))
	if err := e.forward(ctx, b); err != nil {
		return nil, fmt.Errorf("%w: step %d: %w", ErrFatal, b.StepCounter, err)
	}
	res := e.run.Sample(b)
	e.advance(b, res)
	outs := append(e.outputs(now, e.sched.Update(b, res)), e.failConstrained(now)...)
	e.draft(ctx)
	return e.finishDrain(outs), nil
}

// StepTook tells the scheduler's pace how long the last Step took.
func (e *Engine) StepTook(d time.Duration) { e.sched.Observe(e.lastStepTokens, d) }

// PublishTo makes Publish build session reports for the frontends and,
// with kv, KV events for the subscribers of endpoint (what
// get_events_endpoint answers; "" when unnamed).
func (e *Engine) PublishTo(endpoint string, kv bool) {
	e.publishing, e.kvPub, e.events = true, kv, endpoint
}

// ReplayAt makes get_replay_endpoint answer endpoint, where the replay
// and snapshot socket listens (Core.ServeReplay).
func (e *Engine) ReplayAt(endpoint string) { e.replayAt = endpoint }

// HasWork reports whether a step would schedule anything.
func (e *Engine) HasWork() bool { return !e.slp.paused && e.sched.HasWork() }

// Clients are the frontends that completed HELLO (for heartbeats and
// ENGINE_DEAD).
func (e *Engine) Clients() []string { return e.clients.readyIDs() }

// AddsSeen is, for each frontend that completed HELLO, the ADDs it sent
// since that HELLO which Load's figures include (read-only: a copy made
// when a count changes, shared until the next change).
func (e *Engine) AddsSeen() map[string]int64 { return e.clients.allAdds() }

// Drop forgets frontends that went silent and aborts their requests, so a
// dead frontend never leaks KV blocks.
func (e *Engine) Drop(now time.Time, clients ...string) {
	e.clock = now
	for _, id := range clients {
		name, known := e.clients.drop(id)
		var ids []string
		e.requests(func(r *sched.Request) {
			if r.Client == id {
				ids = append(ids, r.ID)
			}
		})
		if known || len(ids) > 0 {
			e.log.Warn("frontend went silent; aborting its requests", "frontend", name, "requests", len(ids))
		}
		e.abort(now, ids)
	}
}

// Load is the scheduler's and KV cache's figures now (heartbeats, load
// reports, every OUTPUTS).
func (e *Engine) Load() wire.SchedulerStats {
	kv := e.kv.Stats()
	return wire.SchedulerStats{
		NumRunningReqs:     e.sched.NumRunning(),
		NumWaitingReqs:     e.sched.NumWaiting() + e.NumCompiling(),
		KVCacheUsage:       kv.Usage,
		NumFreeBlocks:      kv.NumFreeBlocks,
		NumTotalBlocks:     kv.NumBlocks,
		StepCounter:        e.sched.NumSteps(),
		PrefixCacheQueries: kv.PrefixQueries,
		PrefixCacheHits:    kv.PrefixHits,
		NumPreemptions:     e.sched.NumPreemptions(),
		NumSessions:        e.kv.NumSessions(),

		NumSkippedWaitingReqs: e.NumCompiling(),
		Sleeping:              e.slp.sleeping(),
		SleepLevel:            e.slp.level(),
		SpecDecoding:          e.specStats(),
	}
}

// specStats is Load's speculative decoding figures, nil when off.
func (e *Engine) specStats() *wire.SpecDecodingStats {
	if e.cfg.Speculative == nil {
		return nil
	}
	st := e.sched.SpecStats() // AcceptedPerPos is a copy, as long as the longest draft so far
	k := e.cfg.Speculative.NumSpeculativeTokens
	per := append(st.AcceptedPerPos, make([]int64, max(k-len(st.AcceptedPerPos), 0))...)
	return &wire.SpecDecodingStats{NumSpecTokens: k, NumDrafts: st.NumDrafts, NumDraftTokens: st.NumDraftTokens,
		NumAcceptedTokens: st.NumAcceptedTokens, NumAcceptedTokensPerPos: per}
}

// outputs turns a step's results into one OUTPUTS per frontend, and keeps
// the session records and the runner's per-request state in step.
func (e *Engine) outputs(now time.Time, outs []sched.Output) []Out {
	if len(outs) == 0 {
		return nil
	}
	t := unixSeconds(now)
	var order []string // clients, in the order their first output came
	byClient := map[string][]wire.EngineCoreOutput{}
	finished := map[string][]string{}
	for _, o := range outs {
		r := o.Req
		eo := wire.EngineCoreOutput{
			RequestID:         r.WireID,
			NewTokenIDs:       o.NewTokens,
			NewLogprobs:       o.Logprobs,
			NewPromptLogprobs: o.PromptLogprobs,
			NumCachedTokens:   r.NumCachedTokens(),
			Events:            e.life.take(r.ID),
			PromptProgress:    o.PromptProgress,
			PoolingOutput:     o.Pooled,
		}
		if o.Drafted > 0 {
			eo.SpecDecode = &wire.SpecDecodeStep{NumSpecTokens: e.cfg.Speculative.NumSpeculativeTokens, NumDraftTokens: o.Drafted, NumAcceptedTokens: o.Accepted}
		}
		if r.SessionID != "" {
			e.sessions.generated(r.SessionID, len(o.NewTokens), t)
		}
		if o.Finished {
			eo.FinishReason = r.FinishReason
			eo.StopReason = r.StopReason
			finished[r.Client] = append(finished[r.Client], r.WireID)
			e.forget(r.ID)
			e.sessionFinished(r.SessionID, t)
		}
		if _, ok := byClient[r.Client]; !ok {
			order = append(order, r.Client)
		}
		byClient[r.Client] = append(byClient[r.Client], eo)
	}
	msgs := make([]Out, 0, len(order))
	for _, client := range order {
		msgs = append(msgs, e.outputsFor(now, client, byClient[client], finished[client]))
	}
	return msgs
}

// outputsFor is one OUTPUTS message.
func (e *Engine) outputsFor(now time.Time, client string, outs []wire.EngineCoreOutput, finished []string) Out {
	st := e.Load()
	seen := e.clients.addsSeen(client)
	st.AddsSeen = &seen
	return Out{Client: client, Type: wire.MsgOutputs, Payload: &wire.EngineCoreOutputs{
		EngineIndex:      e.cfg.EngineIndex,
		Outputs:          outs,
		SchedulerStats:   &st,
		Timestamp:        unixSeconds(now),
		FinishedRequests: finished,
	}}
}

func (e *Engine) abort(now time.Time, ids []string) {
	e.unpark(ids)
	for _, id := range ids {
		e.holding.release(id) // not in the scheduler yet: nothing else to free
	}
	for _, r := range e.sched.Abort(ids...) {
		e.forget(r.ID)
		e.sessionFinished(r.SessionID, unixSeconds(now))
	}
	e.tidySessions()
}

// forget drops a finished request's state outside the scheduler.
func (e *Engine) forget(id string) {
	e.run.Forget(id)
	e.life.forget(id)
	e.dropConstraint(id)
	if e.drafter != nil {
		e.drafter.Forget(id)
	}
}

// requests calls f with every request the engine holds: the scheduler's
// and those waiting for a compile.
func (e *Engine) requests(f func(*sched.Request)) {
	e.sched.Requests(f)
	for _, key := range slices.Sorted(maps.Keys(e.holding.reqs)) {
		f(e.holding.reqs[key].req)
	}
	for _, p := range e.slp.parked {
		f(p.req)
	}
}

// sessionFinished records that a request of session id left the engine.
// Its record goes with the session's last KV block: tidySessions drops it
// once the KV manager forgets the session (at the end of the step or
// abort that freed it).
func (e *Engine) sessionFinished(id string, now float64) {
	if id != "" {
		e.sessions.finished(id, now)
	}
}

// tidySessions drops the records of the sessions the KV manager forgot:
// their last request ended and their last cached block was evicted.
func (e *Engine) tidySessions() {
	for _, id := range e.kv.DrainGoneSessions() {
		e.sessions.dropIdle(id)
	}
}

// unixSeconds is t as the wire's float seconds.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// warmUpClient is the frontend identity WarmUp's request comes from: no
// ZMQ identity starts with a zero byte (libzmq generates them so).
const warmUpClient = "\x00warm-up"

// WarmUp serves one request of n BOS tokens and one output token before
// the engine takes real ones, so the first of those does not pay for
// faulting in mmapped weights and growing the runner's and backend's
// buffers. Then it forgets it: the prefix cache is cleared and its events
// are dropped (the step counter and prefix-cache queries still count it).
func (e *Engine) WarmUp(ctx context.Context, now time.Time, n int) error {
	n = min(n, e.cfg.NumBlocks*e.cfg.BlockSize-1, e.cfg.MaxModelLen-1, max(e.cfg.MaxNumBatchedTokens, 1))
	if n < 1 {
		return nil
	}
	e.clients.accept(warmUpClient, "warm-up") // a HELLO without the log line
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = e.be.Model().BOSTokenID
	}
	sp := wire.DefaultSamplingParams()
	sp.Temperature, sp.MaxTokens, sp.IgnoreEOS = 0, 1, true
	for _, o := range e.Handle(now, warmUpClient, &wire.EngineCoreRequest{RequestID: "warm-up", PromptTokenIDs: prompt, SamplingParams: sp}) {
		if out, ok := o.Payload.(*wire.EngineCoreOutputs); ok && len(out.Outputs) > 0 {
			return fmt.Errorf("enginecore: warm-up: %v", out.Outputs[0].StopReason)
		}
	}
	for e.HasWork() {
		if _, err := e.Step(ctx, now); err != nil {
			return fmt.Errorf("enginecore: warm-up: %w", err)
		}
	}
	e.clients.drop(warmUpClient)
	e.kv.ResetPrefixCache()
	e.kv.DrainEvents()
	return nil
}
