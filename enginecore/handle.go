package enginecore

import (
	"context"
	"fmt"
	"time"

	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/wire"
)

// handle applies one message from a frontend. Core goroutine only.
func (c *Core) handle(m inMsg) {
	switch p := m.payload.(type) {
	case *wire.Hello:
		c.hello(m.client, p)
	case *wire.EngineCoreRequest:
		c.add(m.client, p)
	case *wire.Abort:
		c.abort(p.RequestIDs)
	case *wire.Utility:
		c.utility(m.client, p)
	default:
		c.log.Warn("unexpected message from frontend", "type", m.t)
	}
}

func (c *Core) hello(client string, h *wire.Hello) {
	ready := &wire.Ready{
		ProtocolVersion: wire.ProtocolVersion,
		EngineIndex:     c.cfg.EngineIndex,
		Model:           c.cfg.Model,
		ServedModelName: c.cfg.ServedModelName,
		MaxModelLen:     c.cfg.MaxModelLen,
		VocabSize:       c.be.Model().VocabSize,
		BlockSize:       c.cfg.BlockSize,
		NumBlocks:       c.cfg.NumBlocks,
		EOSTokenIDs:     c.eos,
		EngineID:        c.engineID,
		PID:             pid(),
		Version:         c.cfg.Version,
	}
	if h.ProtocolVersion != wire.ProtocolVersion {
		ready.Error = fmt.Sprintf("protocol version mismatch: frontend speaks %d, engine speaks %d", h.ProtocolVersion, wire.ProtocolVersion)
		c.log.Error("refusing frontend", "frontend", h.FrontendID, "err", ready.Error)
	} else {
		if c.clients.accept(client, h.FrontendID, time.Now()) {
			c.log.Info("frontend connected", "frontend", h.FrontendID, "pid", h.PID)
		}
	}
	c.out <- outMsg{client: client, t: wire.MsgReady, payload: ready}
}

// add validates and queues a request; a bad one finishes at once with
// FinishError and the reason in stop_reason.
func (c *Core) add(client string, r *wire.EngineCoreRequest) {
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		c.log.Warn("rejecting request", "request_id", r.RequestID, "reason", msg)
		c.send(client, []wire.EngineCoreOutput{{RequestID: r.RequestID, FinishReason: wire.FinishError, StopReason: msg}}, []string{r.RequestID})
	}
	if !c.clients.seen(client, time.Now()) {
		fail("unknown frontend: send HELLO first")
		return
	}
	vocab := int32(c.be.Model().VocabSize)
	for _, t := range r.PromptTokenIDs {
		if t < 0 || t >= vocab {
			fail("prompt token id %d out of range [0, %d)", t, vocab)
			return
		}
	}
	req := sched.NewRequest(r, client, c.eos)
	if err := c.sched.Add(req); err != nil {
		fail("%v", err)
		return
	}
	if req.SessionID != "" {
		c.sessions.add(req.SessionID, req.ID, req.NumPromptTokens(), now())
		c.noteSession(req.SessionID)
	}
	c.publishCounts()
}

// step runs one schedule → execute → update round and sends the outputs.
func (c *Core) step(ctx context.Context) error {
	b := c.sched.Schedule()
	if len(b.Items) == 0 {
		c.publishCounts()
		return nil
	}
	res, err := c.run.Execute(ctx, b)
	if err != nil {
		return fmt.Errorf("%w: step %d: %w", ErrFatal, b.StepCounter, err)
	}
	outs := c.sched.Update(b, res)
	c.publishCounts()
	if len(outs) == 0 {
		return nil
	}
	t := now()
	byClient := map[string][]wire.EngineCoreOutput{}
	finished := map[string][]string{}
	for _, o := range outs {
		r := o.Req
		eo := wire.EngineCoreOutput{
			RequestID:       r.ID,
			NewTokenIDs:     o.NewTokens,
			NewLogprobs:     o.Logprobs,
			NumCachedTokens: r.NumCachedTokens(),
		}
		if r.SessionID != "" {
			c.sessions.generated(r.SessionID, len(o.NewTokens), t)
		}
		if o.Finished {
			eo.FinishReason = r.FinishReason
			eo.StopReason = r.StopReason
			finished[r.Client] = append(finished[r.Client], r.ID)
			c.run.Forget(r.ID)
			if r.SessionID != "" {
				c.sessions.finished(r.SessionID, t)
			}
		}
		byClient[r.Client] = append(byClient[r.Client], eo)
	}
	for client, eos := range byClient {
		c.send(client, eos, finished[client])
	}
	return nil
}

func (c *Core) send(client string, outs []wire.EngineCoreOutput, finished []string) {
	st := c.stats()
	c.out <- outMsg{client: client, t: wire.MsgOutputs, payload: &wire.EngineCoreOutputs{
		EngineIndex:      c.cfg.EngineIndex,
		Outputs:          outs,
		SchedulerStats:   &st,
		Timestamp:        now(),
		FinishedRequests: finished,
	}}
}

func (c *Core) stats() wire.SchedulerStats {
	kv := c.kv.Stats()
	return wire.SchedulerStats{
		NumRunningReqs:     c.sched.NumRunning(),
		NumWaitingReqs:     c.sched.NumWaiting(),
		KVCacheUsage:       kv.Usage,
		NumFreeBlocks:      kv.NumFreeBlocks,
		NumTotalBlocks:     kv.NumBlocks,
		StepCounter:        c.sched.NumSteps(),
		PrefixCacheQueries: kv.PrefixQueries,
		PrefixCacheHits:    kv.PrefixHits,
		NumPreemptions:     c.sched.NumPreemptions(),
		NumSessions:        c.kv.NumSessions(),
	}
}

// utility answers a named call. Methods: get_session [id], end_session
// [id], get_stats [], list_requests [], get_events_endpoint [] (the PUB
// endpoint, "" if none), get_sessions [] (the sessions held, as in a
// session snapshot).
func (c *Core) utility(client string, u *wire.Utility) {
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
		if info, found := c.sessions.get(id); found {
			info.EngineIndex = c.cfg.EngineIndex
			info.NumCachedTokens = int64(c.kv.SessionCachedTokens(id))
			v = &info
		}
	case "end_session":
		id, ok := stringArg(u.Args)
		if !ok {
			err = fmt.Errorf("end_session takes one string argument")
			break
		}
		c.kv.EndSession(id)
		v = c.sessions.remove(id)
	case "get_events_endpoint":
		v = c.pubEndpoint
	case "get_sessions":
		v = c.heldSessions()
	case "get_stats":
		st := c.stats()
		v = &st
	case "list_requests":
		var reqs []any
		c.sched.Requests(func(r *sched.Request) {
			reqs = append(reqs, map[string]any{"request_id": r.ID, "session_id": r.SessionID, "client": fmt.Sprintf("%x", r.Client)})
		})
		v = reqs
	default:
		err = fmt.Errorf("unknown utility method %q", u.Method)
	}
	if err == nil && v != nil {
		res.Result, err = wire.Marshal(v)
	}
	if err != nil {
		res.FailureMessage = err.Error()
	}
	c.out <- outMsg{client: client, t: wire.MsgUtilityResult, payload: res}
}

func stringArg(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// publishLoad sends a load report on the PUB socket. Output goroutine only.
func (c *Core) publishLoad(pub Publisher) {
	if pub == nil {
		return
	}
	free := c.numFreeBlocks.Load()
	rep := &wire.LoadReport{
		EngineIndex:    c.cfg.EngineIndex,
		Timestamp:      now(),
		NumWaiting:     int(c.numWaiting.Load()),
		NumRunning:     int(c.numRunning.Load()),
		NumFreeBlocks:  int(free),
		NumTotalBlocks: c.cfg.NumBlocks,
		KVCacheUsage:   1 - float64(free)/float64(c.cfg.NumBlocks),
	}
	payload, err := wire.Marshal(rep)
	if err != nil {
		return
	}
	_ = pub.Send(wire.PubFrames(wire.TopicLoad, c.reportSeq, payload))
	c.reportSeq++
}
