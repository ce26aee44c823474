package engineclient

import (
	"strconv"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// reader handles everything engine i sends. One goroutine per engine.
func (c *Client) reader(i int) {
	defer c.wg.Done()
	for frames := range c.conns[i].Recv() {
		t, payload, err := wire.Decode(frames)
		if err != nil {
			c.log.Warn("dropping malformed message from engine", "engine", i, "err", err)
			continue
		}
		c.mu.Lock()
		c.engines[i].LastSeen = time.Now()
		c.mu.Unlock()
		switch p := payload.(type) {
		case *wire.Ready:
			c.ready(i, p)
		case *wire.Heartbeat:
			c.mu.Lock()
			c.engines[i].NumRunning, c.engines[i].NumWaiting = p.NumRunning, p.NumWaiting
			if p.SchedulerStats != nil {
				c.engines[i].Stats = *p.SchedulerStats
			}
			c.mu.Unlock()
		case *wire.EngineCoreOutputs:
			c.outputs(i, p)
		case *wire.UtilityResult:
			c.mu.Lock()
			ch, ok := c.calls[p.CallID]
			delete(c.calls, p.CallID)
			c.mu.Unlock()
			if ok {
				ch <- p
			}
		case *wire.EngineDead:
			c.log.Error("engine core reported ENGINE_DEAD", "engine", i, "reason", p.Reason)
			c.mu.Lock()
			c.engines[i].Ready = false
			c.engines[i].Err = p.Reason
			c.mu.Unlock()
			c.failEngine(i, p.Reason)
		default:
			c.log.Warn("unexpected message from engine", "engine", i, "type", t)
		}
	}
}

func (c *Client) ready(i int, r *wire.Ready) {
	c.mu.Lock()
	e := c.engines[i]
	wasReady := e.Ready
	restarted := e.Info.EngineID != "" && e.Info.EngineID != r.EngineID
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
	close(c.readyCh)
	c.readyCh = make(chan struct{})
	refusal := e.Err
	c.mu.Unlock()
	if refusal != "" {
		c.log.Error("engine core refused this frontend", "engine", i, "err", refusal)
	} else if !wasReady || restarted {
		c.log.Info("engine core ready", "engine", i, "model", r.ServedModelName, "max_model_len", r.MaxModelLen, "num_blocks", r.NumBlocks, "pid", r.PID)
	}
	if restarted {
		c.failEngine(i, "engine core restarted")
	}
}

// outputs routes each output to its stream.
func (c *Client) outputs(i int, o *wire.EngineCoreOutputs) {
	if st := o.SchedulerStats; st != nil {
		c.mu.Lock()
		c.engines[i].NumRunning, c.engines[i].NumWaiting = st.NumRunningReqs, st.NumWaitingReqs
		c.engines[i].Stats = *st
		c.mu.Unlock()
	}
	for _, out := range o.Outputs {
		c.mu.Lock()
		s, ok := c.streams[out.RequestID]
		c.mu.Unlock()
		if !ok {
			continue // aborted here already
		}
		if s.push(out) {
			c.mu.Lock()
			if c.streams[out.RequestID] == s {
				delete(c.streams, out.RequestID)
				c.engines[i].NumInFlight--
			}
			c.mu.Unlock()
		}
	}
}
