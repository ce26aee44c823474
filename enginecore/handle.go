package enginecore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/wire"
)

// Handle applies one decoded message from a frontend (its ZMQ identity is
// client) and returns the replies. Heartbeats are the shell's: they do not
// come here.
func (e *Engine) Handle(now time.Time, client string, msg any) []Out {
	e.clock = now
	switch p := msg.(type) {
	case *wire.Hello:
		e.clients.hello(client)
		return e.hello(client, p)
	case *wire.EngineCoreRequest:
		e.clients.added(client)
		return e.add(now, client, p)
	case *wire.Abort:
		if !e.clients.ready(client) {
			e.log.Debug("ignoring ABORT from a frontend without HELLO", "client", fmt.Sprintf("%x", client))
			return nil
		}
		e.abort(now, e.own(client, p.RequestIDs))
	case *wire.Utility:
		if !e.clients.ready(client) {
			return []Out{{Client: client, Type: wire.MsgUtilityResult, Payload: &wire.UtilityResult{CallID: p.CallID,
				FailureMessage: "unknown frontend: send HELLO first"}}}
		}
		return e.utility(client, p)
	default:
		e.log.Warn("unexpected message from frontend", "type", fmt.Sprintf("%T", msg))
	}
	return nil
}

func (e *Engine) hello(client string, h *wire.Hello) []Out {
	ready := &wire.Ready{
		ProtocolVersion:  wire.ProtocolVersion,
		EngineIndex:      e.cfg.EngineIndex,
		Model:            e.cfg.Model,
		ServedModelName:  e.cfg.ServedModelName,
		MaxModelLen:      e.cfg.MaxModelLen,
		VocabSize:        e.be.Model().VocabSize,
		BlockSize:        e.cfg.BlockSize,
		NumBlocks:        e.cfg.NumBlocks,
		EOSTokenIDs:      e.eos,
		EngineID:         e.engineID,
		PID:              e.pid,
		Version:          e.cfg.Version,
		MaxLogprobs:      *e.cfg.MaxLogprobs,
		MaxNumSeqs:       e.cfg.MaxNumSeqs,
		Pooling:          cmp.Or(e.cfg.Pooling, e.be.Model().Pooling),
		ClassifierLabels: classifierLabels(e.be.Model().Classifier),
	}
	if e.loras.load != nil {
		ready.MaxLoRAs = e.loras.max
	}
	if sc := e.cfg.Speculative; sc != nil {
		typ := sc.Method
		if typ == spec.MethodDraftModel {
			typ = "draft-simple" // llama.cpp's name; the others are already theirs
		}
		ready.Speculative = &wire.SpecInfo{NMax: sc.NumSpeculativeTokens, NMin: sc.MinDraft, PMin: sc.PMin, Type: typ}
	}
	if h.ProtocolVersion != wire.ProtocolVersion {
		ready.Error = fmt.Sprintf("protocol version mismatch: frontend speaks %d, engine speaks %d", h.ProtocolVersion, wire.ProtocolVersion)
		e.log.Error("refusing frontend", "frontend", h.FrontendID, "err", ready.Error)
	} else if e.clients.accept(client, h.FrontendID) {
		e.log.Info("frontend connected", "frontend", h.FrontendID, "pid", h.PID)
	}
	return []Out{{Client: client, Type: wire.MsgReady, Payload: ready}}
}

// add validates and queues a request; a bad one finishes at once with
// FinishError and the reason in stop_reason. A request whose constraint
// must be compiled first waits in the holding area (compile.go) and
// reaches the scheduler, or its error, through Compiled.
func (e *Engine) add(now time.Time, client string, r *wire.EngineCoreRequest) []Out {
	fail := func(format string, args ...any) []Out {
		return []Out{e.reject(now, client, r.RequestID, wire.CodeInvalidRequest, fmt.Sprintf(format, args...))}
	}
	if !e.clients.ready(client) {
		return []Out{e.reject(now, client, r.RequestID, wire.CodeUnknownFrontend, "unknown frontend: send HELLO first")}
	}
	if r.Pooling != nil {
		p, err := e.pooling(r.Pooling)
		if err != nil {
			return fail("%v", err)
		}
		// An embedding samples nothing: its sampling parameters are
		// the defaults, whatever the peer sent.
		r.Pooling, r.SamplingParams = p, wire.DefaultSamplingParams()
		r.SamplingParams.MaxTokens = 1
	}
	if err := validateRequest(r, int32(e.be.Model().VocabSize), *e.cfg.MaxLogprobs); err != nil {
		return fail("%v", err)
	}
	uses, err := e.loras.resolve(r.LoRA)
	if err != nil {
		return fail("%v", err)
	}
	e.slp.lastActive = now
	if e.slp.idle { // asleep idle: the first request wakes the engine
		if _, err := e.wakeUp(nil); err != nil {
			e.log.Error("waking up for a request", "err", err)
		}
	}
	req := sched.NewRequest(r, client, e.eos)
	req.ID = requestKey(client, r.RequestID) // each frontend's ids are its own
	if len(uses) > 0 {
		req.LoRA, req.CacheSalt, req.Adapter = uses, wire.LoRASalt(r.CacheSalt, r.LoRA), eventAdapter(r.LoRA)
	}
	so := r.SamplingParams.StructuredOutputs
	if so == nil {
		return e.admitted(now, req, nil)
	}
	k, err := e.constraintFor(so)
	if err != nil {
		return fail("%v", err)
	}
	if m, hit := e.compiled.Get(k); hit {
		return e.admitted(now, req, e.newConstraint(m))
	}
	if e.holding.reqs[req.ID] != nil || e.sched.Get(req.ID) != nil {
		return fail("%v: duplicate request id %q", sched.ErrRejected, r.RequestID)
	}
	e.holding.hold(req, k)
	return nil
}

// admitted is admit's reply to an ADD: none, or the refusal.
func (e *Engine) admitted(now time.Time, req *sched.Request, c *constraint) []Out {
	if out, refused := e.admit(now, req, c); refused {
		return []Out{out}
	}
	return nil
}

// admit hands req, with its constraint c (nil if none), to the scheduler;
// refused says the scheduler would not take it, and out is the error
// output to send.
func (e *Engine) admit(now time.Time, req *sched.Request, c *constraint) (out Out, refused bool) {
	if e.slp.draining && !slices.ContainsFunc(e.slp.parked, func(p parkedReq) bool { return p.req.ID == req.ID }) &&
		e.sched.Get(req.ID) == nil && e.holding.reqs[req.ID] == nil {
		e.slp.parked = append(e.slp.parked, parkedReq{req, c}) // until the sleep it waits for
		return Out{}, false
	}
	if e.holding.reqs[req.ID] != nil {
		if c != nil {
			c.m.Close()
		}
		return e.reject(now, req.Client, req.WireID, wire.CodeInvalidRequest,
			fmt.Sprintf("%v: duplicate request id %q", sched.ErrRejected, req.WireID)), true
	}
	if c != nil && req.Params.ConstraintPrefix > 0 {
		// The prompt's last tokens are an answer so far (a beam): the
		// constraint takes them first, as if generated.
		n := req.NumPromptTokens()
		for i, tok := range req.PromptTokenIDs()[n-req.Params.ConstraintPrefix:] {
			if err := c.m.Accept(tok); err != nil {
				c.m.Close()
				return e.reject(now, req.Client, req.WireID, wire.CodeInvalidRequest,
					fmt.Sprintf("the constraint refuses token %d of the answer so far (_tandem_constraint_prefix): %v", i, err)), true
			}
		}
	}
	if err := e.sched.Add(req); err != nil {
		if c != nil {
			c.m.Close()
		}
		return e.reject(now, req.Client, req.WireID, wire.CodeInvalidRequest, err.Error()), true
	}
	e.life.queued(req.ID, unixSeconds(now))
	if c != nil {
		e.constraints[req.ID] = c
	}
	if e.cfg.Vocab != nil {
		if th := newThinking(&req.Params, c != nil, e.tokenOf); th != nil {
			e.thinking[req.ID] = th
		}
	}
	if req.SessionID != "" {
		e.sessions.add(req.SessionID, req.WireID, req.NumPromptTokens(), unixSeconds(now))
		e.noteSession(req.SessionID)
	}
	return Out{}, false
}

// reject is the output that finishes request id of client with
// FinishError, msg in stop_reason.
func (e *Engine) reject(now time.Time, client, id string, code wire.ErrorCode, msg string) Out {
	e.log.Warn("rejecting request", "request_id", id, "reason", msg)
	return e.outputsFor(now, client, []wire.EngineCoreOutput{{RequestID: id, FinishReason: wire.FinishError,
		StopReason: msg, ErrorCode: code}}, []string{id})
}

// utility answers a named call. Methods: get_session [id], end_session
// [id], get_stats [], list_requests [] (the caller's own requests),
// get_events_endpoint [] (the PUB endpoint, "" if none),
// get_replay_endpoint [] (the replay and snapshot socket, "" if none; a
// frontend that joins late loads the cached blocks there), get_sessions []
// (the sessions held, as in a session snapshot), reset_prefix_cache
// [reset_running_requests, reset_connector] (vLLM's: drop every cached
// prefix hash, true on success, false while requests hold blocks; this
// engine cannot preempt its running requests for it, so with
// reset_running_requests true and blocks held it fails). Only frontends
// that completed HELLO get here. add_lora, list_loras, remove_lora and
// pin_lora are vLLM's (loras.go).
func (e *Engine) utility(client string, u *wire.Utility) []Out {
	res := &wire.UtilityResult{CallID: u.CallID}
	var v any
	var err error
	switch u.Method {
	case "get_session":
		id, ok := stringArg(u.Args)
		if !ok {
			err = fmt.Errorf("get_session takes one string argument")
			break
		}
		v = e.sessionInfo(id)
	case "end_session":
		id, ok := stringArg(u.Args)
		if !ok {
			err = fmt.Errorf("end_session takes one string argument")
			break
		}
		e.kv.EndSession(id)
		v = e.sessions.remove(id)
	case "get_events_endpoint":
		v = e.events
	case "get_replay_endpoint":
		v = e.replayAt
	case "get_sessions":
		v = e.heldSessions()
	case "get_stats":
		st := e.Load()
		v = &st
	case "reset_prefix_cache":
		flags, ok := boolArgs(u.Args, 2)
		switch {
		case !ok:
			err = fmt.Errorf("reset_prefix_cache takes at most two bool arguments (reset_running_requests, reset_connector)")
		case len(flags) > 1 && flags[1]:
			err = fmt.Errorf("reset_prefix_cache: reset_connector: this engine has no KV connector")
		default:
			done := e.kv.ResetPrefixCache()
			if !done && len(flags) > 0 && flags[0] {
				err = fmt.Errorf("reset_prefix_cache: cannot preempt the running requests (reset_running_requests): their blocks are in use")
			}
			v = done
		}
	case "sleep":
		return e.sleepCall(client, u)
	case "wake_up":
		outs := e.cancelDrain()
		v, err = e.wakeCall(u.Args)
		return append(outs, utilityOut(client, res, v, err))
	case "is_sleeping":
		v = e.slp.sleeping()
	case "release_kv_cache_memory":
		v, err = e.releaseKVCall()
	case "touch":
		v = e.touch()
	case "kv_export", "kv_import", "kv_evict":
		v, err = e.kvCall(u.Method, u.Args)
	case "add_lora", "list_loras", "remove_lora", "pin_lora":
		v, err = e.loras.call(u.Method, u.Args)
	case "list_requests": // the caller's own: no other frontend's ids or identity
		reqs := []any{}
		e.requests(func(r *sched.Request) {
			if r.Client == client {
				reqs = append(reqs, map[string]any{"request_id": r.WireID, "session_id": r.SessionID})
			}
		})
		v = reqs
	default:
		err = fmt.Errorf("unknown utility method %q", u.Method)
	}
	return []Out{utilityOut(client, res, v, err)}
}

// utilityOut is the UTILITY_RESULT of a call that returned v (nil: none)
// or failed with err.
func utilityOut(client string, res *wire.UtilityResult, v any, err error) Out {
	if err == nil && v != nil {
		res.Result, err = wire.Marshal(v)
	}
	if err != nil {
		res.FailureMessage = err.Error()
	}
	return Out{Client: client, Type: wire.MsgUtilityResult, Payload: res}
}

// sessionInfo is what get_session answers: the session's record with its
// cached tokens now; for a session whose record the cap evicted while its
// blocks are still cached, what the KV cache knows, marked RecordEvicted;
// nil for a session this engine holds nothing of, or one a DELETE ended.
func (e *Engine) sessionInfo(id string) *wire.SessionInfo {
	info, found := e.sessions.get(id)
	if !found {
		kv, cached := e.kv.Session(id)
		if !cached || kv.Ended { // DELETE ended it: its blocks only linger, first to go
			return nil
		}
		info = wire.SessionInfo{SessionID: id, NumRunning: kv.NumRequests, LastActive: unixSeconds(kv.LastActive), RecordEvicted: true}
	}
	info.EngineIndex = e.cfg.EngineIndex
	info.NumCachedTokens = int64(e.kv.SessionCachedTokens(id))
	return &info
}

// boolArgs reads up to max bool arguments.
func boolArgs(args []any, max int) ([]bool, bool) {
	if len(args) > max {
		return nil, false
	}
	out := make([]bool, len(args))
	for i, a := range args {
		b, ok := a.(bool)
		if !ok {
			return nil, false
		}
		out[i] = b
	}
	return out, true
}

func stringArg(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// own maps the request ids client names to the engine's keys: each
// frontend's ids are a namespace of its own, so another frontend's
// ABORT never reaches its requests (nor can it squat their ids).
func (e *Engine) own(client string, ids []string) []string {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = requestKey(client, id)
	}
	return keys
}

// requestKey is the engine-wide key of request id from client.
func requestKey(client, id string) string {
	return strconv.Itoa(len(client)) + ":" + client + id
}
