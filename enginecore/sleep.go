package enginecore

import (
	"fmt"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/wire"
)

// Sleep mode, as vLLM's sleep, wake_up and is_sleeping utilities and
// llama-server's --sleep-idle-seconds: an engine that sleeps schedules
// nothing and gives memory back until it wakes.
//
//   - Level 0 pauses scheduling only.
//   - Level 1 also drops the prefix cache and frees the KV cache's memory
//     (vLLM offloads the weights to host memory; on the CPU they already
//     are there, so they stay resident and waking is quick).
//   - Level 2 also drops the resident pages of the weights that can be
//     read back from their files (the model file and the pack cache; they
//     fault back in on the first step).
//
// The mode says what happens to the requests the engine holds: abort
// finishes them with ABORT; wait lets them finish first (requests that
// arrive meanwhile are parked and wait for the wake), and the utility's
// answer comes when it is done; keep freezes them (at level 1 and up the
// running ones are preempted, and recompute after the wake). Requests
// that arrive while the engine sleeps wait, except after an idle sleep,
// which the first request (or a touch) ends.

// memoryReleaser is a backend that can give memory back while the engine
// sleeps (cpu.Backend). AllocateKV makes a new KV cache after ReleaseKV.
type memoryReleaser interface {
	ReleaseKV()
	ReleaseWeights()
}

// sleepState is the engine's sleep: what is paused and released.
type sleepState struct {
	paused     bool // scheduling paused
	kv         bool // KV cache memory released
	weights    bool // weights' resident pages released
	idle       bool // fell asleep idle: the next request wakes it
	lastActive time.Time

	// A sleep with mode wait waiting for the requests in flight: its
	// level, the callers to answer, and the requests that came meanwhile.
	draining   bool
	drainLevel int
	waiters    []sleepWaiter
	parked     []parkedReq
}

// parkedReq is a request that came while a sleep waited for the requests
// in flight, with its constraint (nil if none).
type parkedReq struct {
	req *sched.Request
	c   *constraint
}

type sleepWaiter struct {
	client string
	callID uint64
}

// Sleeping reports whether the engine sleeps at any level.
func (s *sleepState) sleeping() bool { return s.paused || s.kv || s.weights }

// level is the sleep's level by what is released: 2 the weights, 1 the
// KV cache, else 0 (a pause, or awake).
func (s *sleepState) level() int {
	switch {
	case s.weights:
		return 2
	case s.kv:
		return 1
	}
	return 0
}

// pauseModes are vLLM's PauseMode values.
var pauseModes = []string{"abort", "wait", "keep"}

// sleepCall answers the sleep utility: [level int (0–2, default 1), mode
// str (abort, wait or keep; default abort)]. The answer is nil, at once
// or (mode wait) once the requests in flight have finished.
func (e *Engine) sleepCall(client string, u *wire.Utility) []Out {
	res := &wire.UtilityResult{CallID: u.CallID}
	fail := func(format string, args ...any) []Out {
		res.FailureMessage = fmt.Sprintf(format, args...)
		return []Out{{Client: client, Type: wire.MsgUtilityResult, Payload: res}}
	}
	level, mode := 1, "abort"
	if len(u.Args) > 2 {
		return fail("sleep takes at most two arguments (level, mode)")
	}
	if len(u.Args) > 0 && u.Args[0] != nil {
		n, ok := intArg(u.Args[0])
		if !ok || n < 0 || n > 2 {
			return fail("sleep: level must be 0, 1 or 2, not %v", u.Args[0])
		}
		level = n
	}
	if len(u.Args) > 1 && u.Args[1] != nil {
		m, ok := u.Args[1].(string)
		if !ok || !slices.Contains(pauseModes, m) {
			return fail("sleep: mode must be one of abort, wait, keep, not %v", u.Args[1])
		}
		mode = m
	}
	if e.slp.draining { // a second wait joins the first; the deeper level wins
		e.slp.drainLevel = max(e.slp.drainLevel, level)
		e.slp.waiters = append(e.slp.waiters, sleepWaiter{client, u.CallID})
		if mode == "abort" {
			return e.finishDrain(e.abortAll())
		}
		return nil
	}
	var outs []Out
	switch mode {
	case "abort":
		outs = e.abortAll()
	case "wait":
		if e.inFlight() && !e.slp.paused {
			e.slp.draining, e.slp.drainLevel = true, level
			e.slp.waiters = []sleepWaiter{{client, u.CallID}}
			e.log.Info("sleep: waiting for the requests in flight", "level", level)
			return nil
		}
	}
	if err := e.sleep(level, false); err != nil {
		return append(outs, fail("sleep: %v", err)...)
	}
	return append(outs, Out{Client: client, Type: wire.MsgUtilityResult, Payload: res})
}

// inFlight reports whether the engine holds requests (scheduled or
// compiling their constraint).
func (e *Engine) inFlight() bool { return e.sched.HasWork() || len(e.holding.reqs) > 0 }

// abortAll finishes every request the engine holds with ABORT and
// returns their outputs, one OUTPUTS per frontend.
func (e *Engine) abortAll() []Out {
	byClient := map[string][]string{}
	var order, keys []string
	e.requests(func(r *sched.Request) {
		if _, ok := byClient[r.Client]; !ok {
			order = append(order, r.Client)
		}
		byClient[r.Client] = append(byClient[r.Client], r.WireID)
		keys = append(keys, r.ID)
	})
	if len(keys) == 0 {
		return nil
	}
	e.log.Info("sleep: aborting the requests in flight", "requests", len(keys))
	e.abort(e.clock, keys)
	outs := make([]Out, 0, len(order))
	for _, c := range order {
		var eos []wire.EngineCoreOutput
		for _, id := range byClient[c] {
			eos = append(eos, wire.EngineCoreOutput{RequestID: id, FinishReason: wire.FinishAbort})
		}
		outs = append(outs, e.outputsFor(e.clock, c, eos, byClient[c]))
	}
	return outs
}

// sleep pauses scheduling and, from level 1, drops the prefix cache and
// releases memory. Running requests are preempted first (keep).
func (e *Engine) sleep(level int, idle bool) error {
	s := &e.slp
	s.paused, s.idle = true, idle && !s.paused
	if level >= 1 && !s.kv {
		if n := e.sched.PreemptAll(); n > 0 {
			e.log.Info("sleep: preempted the running requests; they recompute after the wake", "requests", n)
		}
		if !e.kv.ResetPrefixCache() {
			return fmt.Errorf("the KV cache's blocks are still in use")
		}
		if r, ok := e.be.(memoryReleaser); ok {
			r.ReleaseKV()
		}
		s.kv = true
	}
	if level >= 2 && !s.weights {
		if r, ok := e.be.(memoryReleaser); ok {
			r.ReleaseWeights()
		}
		s.weights = true
	}
	e.log.Info("engine sleeping", "level", s.level(), "idle", s.idle)
	return nil
}

// wakeUp ends the sleep for tags (weights, kv_cache, scheduling; nil:
// all) and reports whether the engine is fully awake: scheduling resumes
// only then, as vLLM's.
func (e *Engine) wakeUp(tags []string) (bool, error) {
	s := &e.slp
	for _, t := range tags {
		if !slices.Contains([]string{"weights", "kv_cache", "scheduling"}, t) {
			return false, fmt.Errorf("wake_up: unknown tag %q (want weights, kv_cache or scheduling)", t)
		}
	}
	all := tags == nil
	if (all || slices.Contains(tags, "kv_cache")) && s.kv {
		if err := e.be.AllocateKV(e.cfg.NumBlocks, e.cfg.BlockSize); err != nil {
			return false, fmt.Errorf("wake_up: allocate the KV cache: %w", err)
		}
		s.kv = false
	}
	if all || slices.Contains(tags, "weights") {
		s.weights = false // their pages fault back in on use
	}
	if s.kv || s.weights {
		return false, nil
	}
	if s.paused {
		e.log.Info("engine awake", "was_idle", s.idle)
	}
	s.paused, s.idle = false, false
	s.lastActive = e.clock
	return true, nil
}

// wakeCall answers wake_up: [tags [str] | nil].
func (e *Engine) wakeCall(args []any) (any, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("wake_up takes at most one argument (tags)")
	}
	var tags []string
	if len(args) == 1 && args[0] != nil {
		list, ok := args[0].([]any)
		if !ok {
			return nil, fmt.Errorf("wake_up: tags must be a list of strings")
		}
		tags = []string{}
		for _, t := range list {
			s, ok := t.(string)
			if !ok {
				return nil, fmt.Errorf("wake_up: tags must be a list of strings")
			}
			tags = append(tags, s)
		}
	}
	return e.wakeUp(tags)
}

// releaseKVCall answers release_kv_cache_memory: vLLM's, after a pause
// (a level-0 sleep): drop the prefix cache and free the KV cache.
func (e *Engine) releaseKVCall() (any, error) {
	if !e.slp.paused {
		return nil, fmt.Errorf("release_kv_cache_memory requires a completed pause first (sleep level 0)")
	}
	return nil, e.sleep(1, false)
}

// touch is activity without a request (the frontend served something for
// the model, a tokenization say): the idle timer restarts, and an engine
// asleep idle wakes. It reports whether the engine is awake.
func (e *Engine) touch() bool {
	e.slp.lastActive = e.clock
	if e.slp.idle {
		e.wakeUp(nil) //nolint:errcheck // reported by the awake answer
	}
	return !e.slp.sleeping()
}

// finishDrain completes a waiting sleep once nothing is in flight (or at
// once, after abortAll): it sleeps, answers the waiting callers and hands
// the parked requests to the (paused) scheduler. outs come first.
func (e *Engine) finishDrain(outs []Out) []Out {
	s := &e.slp
	if !s.draining || e.inFlight() {
		return outs
	}
	s.draining = false
	err := e.sleep(s.drainLevel, false)
	for _, w := range s.waiters {
		res := &wire.UtilityResult{CallID: w.callID}
		if err != nil {
			res.FailureMessage = "sleep: " + err.Error()
		}
		outs = append(outs, Out{Client: w.client, Type: wire.MsgUtilityResult, Payload: res})
	}
	s.waiters = nil
	parked := s.parked
	s.parked = nil
	for _, p := range parked {
		if out, refused := e.admit(e.clock, p.req, p.c); refused {
			outs = append(outs, out)
		}
	}
	return outs
}

// cancelDrain ends a waiting sleep without sleeping (a wake_up came
// first): its callers get an error and the parked requests go on.
func (e *Engine) cancelDrain() []Out {
	s := &e.slp
	if !s.draining {
		return nil
	}
	var outs []Out
	for _, w := range s.waiters {
		outs = append(outs, Out{Client: w.client, Type: wire.MsgUtilityResult, Payload: &wire.UtilityResult{CallID: w.callID,
			FailureMessage: "sleep: cancelled by wake_up before the requests in flight finished"}})
	}
	parked := s.parked
	s.draining, s.waiters, s.parked = false, nil, nil
	for _, p := range parked {
		if out, refused := e.admit(e.clock, p.req, p.c); refused {
			outs = append(outs, out)
		}
	}
	return outs
}

// unpark drops the parked requests with the given keys (an abort).
func (e *Engine) unpark(keys []string) {
	e.slp.parked = slices.DeleteFunc(e.slp.parked, func(p parkedReq) bool {
		if slices.Contains(keys, p.req.ID) {
			if p.c != nil {
				p.c.m.Close()
			}
			return true
		}
		return false
	})
}

// Tick is the shell's periodic call: an engine idle for cfg.SleepIdle
// (llama-server's --sleep-idle-seconds) falls asleep at level 2.
func (e *Engine) Tick(now time.Time) {
	e.clock = now
	s := &e.slp
	if s.lastActive.IsZero() {
		s.lastActive = now
	}
	if e.cfg.SleepIdle <= 0 || s.sleeping() || s.draining || e.inFlight() || now.Sub(s.lastActive) < e.cfg.SleepIdle {
		return
	}
	e.log.Info("sleeping after an idle spell", "idle", now.Sub(s.lastActive).Round(time.Millisecond))
	if err := e.sleep(2, true); err != nil {
		e.log.Warn("idle sleep failed", "err", err)
	}
}

// Sleeping reports whether the engine sleeps (at any level).
func (e *Engine) Sleeping() bool { return e.slp.sleeping() }

// intArg reads a msgpack integer.
func intArg(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), true
	case uint64:
		return int(n), n < 1<<31
	case int:
		return n, true
	}
	return 0, false
}
