package engineclient

import (
	"slices"
	"strconv"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// reader handles everything engine i sends. One goroutine per engine.
func (c *Client) reader(i int, conn *zmq.Conn) {
	defer c.wg.Done()
	var scratch []routed // outputs' scratch, reused across OUTPUTS
	for frames := range conn.Recv() {
		t, payload, err := wire.Decode(frames)
		if err != nil {
			c.log.Warn("dropping malformed message from engine", "engine", i, "err", err)
			continue
		}
		c.mu.Lock()
		c.slots[i].state.LastSeen = time.Now()
		c.mu.Unlock()
		switch p := payload.(type) {
		case *wire.Ready:
			c.ready(i, p)
		case *wire.Heartbeat:
			c.mu.Lock()
			used := c.slots[i].state.UsedBlocks
			var seen *int64
			if st := p.SchedulerStats; st != nil {
				c.slots[i].state.Stats = *st
				used = st.NumTotalBlocks - st.NumFreeBlocks
				seen = st.AddsSeen
			}
			c.report(i, p.NumWaiting, p.NumRunning, used, seen)
			c.mu.Unlock()
			if p.Sessions != nil {
				c.router.ApplySessions(i, p.Sessions)
			}
		case *wire.EngineCoreOutputs:
			scratch = c.outputs(i, p, scratch)
		case *wire.UtilityResult:
			c.mu.Lock()
			pc, ok := c.calls[p.CallID]
			delete(c.calls, p.CallID)
			c.mu.Unlock()
			if ok {
				pc.ch <- p
			}
		case *wire.EngineDead:
			c.log.Error("engine core reported ENGINE_DEAD", "engine", i, "reason", p.Reason)
			c.mu.Lock()
			c.downLocked(i, p.Reason)
			c.mu.Unlock()
			c.failEngine(i, p.Reason)
		default:
			c.log.Warn("unexpected message from engine", "engine", i, "type", t)
		}
	}
}

func (c *Client) ready(i int, r *wire.Ready) {
	c.mu.Lock()
	e := &c.slots[i].state
	wasReady := e.Ready
	restarted := e.Info.EngineID != "" && e.Info.EngineID != r.EngineID
	sl := c.slots[i]
	if restarted {
		c.router.ResetEngine(i) // its reports were of the old process
		if !sl.noticed {
			sl.incarnation++
		}
	}
	// Restarted, or the same process answered "unknown frontend" (it had
	// expired us): either way it runs nothing we sent before.
	lost := restarted || sl.noticed
	if r.Error == "" {
		sl.noticed = false
	}
	inc := sl.incarnation
	e.Info = *r
	switch {
	case r.ProtocolVersion != wire.ProtocolVersion:
		e.Ready = false
		e.Err = "protocol version mismatch: engine speaks " + strconv.Itoa(r.ProtocolVersion) + ", frontend speaks " + strconv.Itoa(wire.ProtocolVersion)
		e.Info.Error = e.Err
	case r.Error != "":
		e.Ready = false
		e.Err = r.Error
	default:
		e.Ready = true
		e.Err = ""
	}
	refusal := e.Err
	// An accepted engine is routed to once its reports flow (sync); a
	// duplicate READY (answering a repeated HELLO) changes nothing.
	start := refusal == "" && (!wasReady || restarted) && !e.Syncing
	if start {
		e.Syncing = true
		c.wg.Add(1)
	}
	close(c.readyCh)
	c.readyCh = make(chan struct{})
	c.mu.Unlock()
	if refusal != "" {
		c.log.Error("engine core refused this frontend", "engine", i, "err", refusal)
	}
	switch {
	case restarted:
		c.failEngineBefore(i, inc, "engine core restarted")
	case lost:
		c.failEngineBefore(i, inc, "engine core dropped this frontend (silent past its heartbeat timeout)")
	}
	if start {
		go c.sync(i)
	}
}

// routed is an output of an OUTPUTS and the stream it goes to.
type routed struct {
	s     *Stream
	out   int  // index in Outputs
	first bool // the stream's first output
}

// firstsFirst orders outputs for delivery: the requests' first outputs,
// then the rest, each in the engine's order. One OUTPUTS carries a token
// for every running request, and the consumers of the streams are woken
// in the order their outputs are pushed; a request that just joined (it
// sits last in the engine's running list) would otherwise wait for
// everyone else's token to be delivered and written before its first.
// Per stream the order is unchanged: first is computed before any output
// is pushed, so all of one stream's outputs are in the same group.
func firstsFirst(rs []routed) {
	slices.SortStableFunc(rs, func(a, b routed) int {
		switch {
		case a.first == b.first:
			return 0
		case a.first:
			return -1
		}
		return 1
	})
}

// outputs routes each output to its stream, first outputs first
// (firstsFirst). scratch is the caller's, returned for reuse.
func (c *Client) outputs(i int, o *wire.EngineCoreOutputs, scratch []routed) []routed {
	if st := o.SchedulerStats; st != nil {
		c.mu.Lock()
		c.slots[i].state.Stats = *st
		c.report(i, st.NumWaitingReqs, st.NumRunningReqs, st.NumTotalBlocks-st.NumFreeBlocks, st.AddsSeen)
		c.mu.Unlock()
	}
	rs := scratch[:0]
	c.mu.Lock()
	for k := range o.Outputs {
		s, ok := c.streams[o.Outputs[k].RequestID]
		if !ok || s.EngineIndex() != i {
			continue // aborted here already, or moved to another engine
		}
		rs = append(rs, routed{s: s, out: k})
	}
	c.mu.Unlock()
	for k := range rs {
		rs[k].first = !rs[k].s.hasOutput()
	}
	firstsFirst(rs)
	tokens := 0 // computed in this step for this frontend: prefills completed + tokens generated
	for _, r := range rs {
		s, out := r.s, o.Outputs[r.out]
		if r.first && lostUs(out) {
			// The engine does not know this frontend: it restarted and got
			// the request before our HELLO. Nothing ran; send it elsewhere.
			c.mu.Lock()
			if c.streams[out.RequestID] == s {
				delete(c.streams, out.RequestID)
				c.settle(s)
			}
			if sl := c.slots[i]; !sl.noticed { // a new process: what is re-sent now runs there
				sl.incarnation++
				sl.noticed = true
			}
			c.mu.Unlock()
			c.hello(i)
			c.retryOrFail(s, i, errUnknownFrontend)
			continue
		}
		if n := len(out.NewTokenIDs); n > 0 || out.PoolingOutput != nil { // an embedding's prompt is computed when its vector comes
			tokens += n
			if s.Timing().NumGenerated == 0 {
				tokens += len(s.req.PromptTokenIDs) - min(out.NumCachedTokens, len(s.req.PromptTokenIDs))
			}
		}
		if s.push(out, o.Timestamp) {
			c.mu.Lock()
			if c.streams[out.RequestID] == s {
				delete(c.streams, out.RequestID)
				c.settle(s)
			}
			c.mu.Unlock()
		}
	}
	if fn := c.onIteration.Load(); fn != nil && tokens > 0 {
		(*fn)(i, tokens)
	}
	clear(rs) // drop the streams
	return rs[:0]
}

// lostUs reports whether an output is the engine's refusal of a request
// from a frontend it has no HELLO from.
func lostUs(o wire.EngineCoreOutput) bool {
	return o.FinishReason == wire.FinishError && o.ErrorCode == wire.CodeUnknownFrontend
}
