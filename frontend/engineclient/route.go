package engineclient

import (
	"errors"
	"fmt"
	"time"

	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/wire"
)

// errUnknownFrontend: the engine answered a request with "unknown
// frontend" (it restarted and lost our HELLO).
var errUnknownFrontend = fmt.Errorf("%w: the engine restarted and did not know this frontend", ErrEngineDead)

// route picks the engine for req among the ready ones other than exclude
// (-1: none) with the router. c.mu is held.
func (c *Client) route(req *wire.EngineCoreRequest, exclude int) (int, router.Decision, error) {
	synced := false // some candidate's reports flow: skip those still syncing
	for i, sl := range c.slots {
		if !sl.removed && sl.state.Ready && !sl.state.Syncing && i != exclude {
			synced = true
		}
	}
	engines := make([]router.Engine, 0, len(c.slots))
	for i, sl := range c.slots {
		e := &sl.state
		if sl.removed || !e.Ready || i == exclude || (synced && e.Syncing) {
			continue
		}
		engines = append(engines, router.Engine{
			ID: i, Name: e.Endpoint, Rank: e.Info.EngineIndex, BlockSize: e.Info.BlockSize,
			Waiting: e.NumWaiting, Running: max(e.NumRunning-e.Finished, 0), UsedBlocks: max(e.UsedBlocks-e.FinishedBlocks, 0),
			Pending: e.Pending, PendingBlocks: e.PendingBlocks,
		})
	}
	d, err := c.router.Route(router.Request{
		SessionID: req.SessionID, TokenIDs: req.PromptTokenIDs, CacheSalt: wire.LoRASalt(req.CacheSalt, req.LoRA), Rank: req.DataParallelRank,
	}, engines)
	if err != nil {
		return 0, d, c.noEngine(req)
	}
	return d.Engine, d, nil
}

func (c *Client) noEngine(req *wire.EngineCoreRequest) error {
	if req.DataParallelRank != nil {
		return fmt.Errorf("%w: engine rank %d is not ready", ErrEngineDead, *req.DataParallelRank)
	}
	return ErrNoEngine
}

// placement is one send of a stream to an engine: load the router counts
// on that engine until the engine's figures include it.
type placement struct {
	seq      uint64 // the ADD's number on its engine's connection, from 1 after HELLO
	blocks   int    // KV blocks of the prompt
	included bool   // a report from the engine counts it
	settled  bool   // it finished (or moved) before one did
}

// place records s as running on engine i. c.mu is held.
func (c *Client) place(s *Stream, i int) {
	s.engine.Store(int64(i))
	c.streams[s.id] = s
	sl := c.slots[i]
	s.incarnation = sl.incarnation
	s.placedAt(time.Now())
	sl.sent++
	p := &placement{seq: sl.sent}
	if bs := sl.state.Info.BlockSize; bs > 0 {
		p.blocks = (len(s.req.PromptTokenIDs) + bs - 1) / bs
	}
	s.pl = p
	sl.unseen = append(sl.unseen, p)
	sl.state.NumInFlight++
	sl.state.Pending++
	sl.state.PendingBlocks += p.blocks
}

// settle accounts for the end of s on its engine. c.mu is held.
func (c *Client) settle(s *Stream) {
	sl := c.slots[s.EngineIndex()]
	e := &sl.state
	e.NumInFlight = max(e.NumInFlight-1, 0)
	p := s.pl
	if !p.included { // no report counts it yet
		p.settled = true
		e.Pending = max(e.Pending-1, 0)
		e.PendingBlocks = max(e.PendingBlocks-p.blocks, 0)
		return
	}
	e.Finished++
	e.FinishedBlocks += p.blocks
}

// report records fresh load figures of engine i (a load report, a
// heartbeat, or the stats of an outputs message). seen is how many of
// this client's ADDs since its HELLO the figures include; nil (an engine
// that does not say) takes them to include every ADD sent. c.mu is held.
func (c *Client) report(i, waiting, running, usedBlocks int, seen *int64) {
	sl := c.slots[i]
	e := &sl.state
	e.NumWaiting, e.NumRunning, e.UsedBlocks = waiting, running, usedBlocks
	e.Finished, e.FinishedBlocks = 0, 0
	n := sl.sent
	if seen != nil {
		sl.countsAdds = true
		n = min(uint64(max(*seen, 0)), sl.sent)
	}
	c.include(sl, n)
}

// include marks the placements on sl up to ADD number n as counted by the
// engine's figures. c.mu is held.
func (c *Client) include(sl *slot, n uint64) {
	k := 0
	for ; k < len(sl.unseen) && sl.unseen[k].seq <= n; k++ {
		if p := sl.unseen[k]; !p.settled {
			p.included = true
			sl.state.Pending = max(sl.state.Pending-1, 0)
			sl.state.PendingBlocks = max(sl.state.PendingBlocks-p.blocks, 0)
		}
	}
	sl.unseen = append(sl.unseen[:0], sl.unseen[k:]...)
}

func (c *Client) observe(d router.Decision) {
	if c.cfg.OnRoute != nil && d.Outcome != "" {
		c.cfg.OnRoute(string(d.Policy), d.Outcome)
	}
}

// retryOrFail sends s, which the caller already removed from the streams
// of engine failed, to another engine if it has produced no output and
// has retries left; otherwise it fails s with err. When no engine is
// ready (the only one is restarting), it waits up to twice the heartbeat
// timeout for one, off the caller's goroutine.
func (c *Client) retryOrFail(s *Stream, failed int, err error) {
	if s.hasOutput() || s.attempts >= c.cfg.MaxRetries || s.isClosed() {
		s.fail(err)
		return
	}
	if c.resubmit(s, failed, err) {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.fail(err)
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		deadline := time.NewTimer(2 * c.cfg.HeartbeatTimeout)
		defer deadline.Stop()
		for {
			c.mu.Lock()
			ch := c.readyCh
			c.mu.Unlock()
			select {
			case <-ch:
				if c.resubmit(s, failed, err) {
					return
				}
			case <-deadline.C:
				s.fail(fmt.Errorf("%w (no engine to retry on within %s)", err, 2*c.cfg.HeartbeatTimeout))
				return
			case <-c.stop:
				s.fail(ErrClosed)
				return
			}
		}
	}()
}

// resubmit routes s anew, preferring engines other than failed, and sends
// it. It reports false, doing nothing, when no engine is ready; s is
// failed (and true returned) when it can no longer run.
func (c *Client) resubmit(s *Stream, failed int, err error) bool {
	c.mu.Lock()
	if c.closed || s.isClosed() {
		c.mu.Unlock()
		s.fail(err)
		return true
	}
	if _, taken := c.streams[s.id]; taken {
		c.mu.Unlock()
		s.fail(err)
		return true
	}
	i, d, rerr := c.route(s.req, failed)
	if rerr != nil {
		i, d, rerr = c.route(s.req, -1) // the failed engine is back (it restarted)
	}
	if rerr != nil {
		c.mu.Unlock()
		if s.req.DataParallelRank != nil {
			s.fail(fmt.Errorf("%w (pinned: %w)", err, rerr))
			return true
		}
		return false
	}
	s.attempts++
	c.place(s, i)
	c.mu.Unlock()
	c.observe(d)
	c.log.Warn("engine failed before the request produced output; retrying",
		"request_id", s.id, "failed_engine", failed, "engine", i, "attempt", s.attempts, "reason", err)
	if serr := c.sendTo(i, wire.MsgAdd, s.req); serr != nil {
		c.release(s, false)
		s.fail(errors.Join(err, serr))
	}
	return true
}
