package engineclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// ErrRequestLost fails a stream whose engine is alive but no longer has
// its request (it was aborted or dropped there without a final output).
var ErrRequestLost = fmt.Errorf("%w: the engine no longer has the request", ErrEngineDead)

// auditLoop checks, every AuditInterval, that the engines still have the
// requests that have been quiet that long: a stream whose engine lost its
// request without telling (a foreign abort, a frontend expiry the client
// missed) would otherwise wait for outputs forever. A long prefill is not
// quiet in this sense: its request is still listed.
func (c *Client) auditLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.AuditInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		for _, i := range c.quietEngines(time.Now().Add(-c.cfg.AuditInterval)) {
			c.audit(i)
		}
	}
}

// quietEngines lists the ready engines with streams quiet since before.
func (c *Client) quietEngines(before time.Time) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[int]bool{}
	var out []int
	for _, s := range c.streams {
		i := s.EngineIndex()
		if !seen[i] && c.slots[i].state.Ready && s.quietSince(before) {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// audit asks engine i for its list of our requests and fails the streams
// placed there before the call that it does not list. Outputs and the
// call's answer come in order on one socket, so a request that finished
// meanwhile has had its final output pushed before the list arrives.
func (c *Client) audit(i int) {
	asked := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HeartbeatTimeout)
	defer cancel()
	raw, err := c.Call(ctx, i, "list_requests")
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			c.log.Debug("auditing engine requests", "engine", i, "err", err)
		}
		return
	}
	var v any
	if err := wire.Unmarshal(raw, &v); err != nil {
		c.log.Warn("engine's list_requests", "engine", i, "err", err)
		return
	}
	listed := map[string]bool{}
	list, _ := v.([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			if id, ok := m["request_id"].(string); ok {
				listed[id] = true
			}
		}
	}
	c.mu.Lock()
	var lost []*Stream
	for id, s := range c.streams {
		if s.EngineIndex() == i && !listed[id] && s.placedBefore(asked) {
			lost = append(lost, s)
			delete(c.streams, id)
			c.settle(s)
		}
	}
	c.mu.Unlock()
	for _, s := range lost {
		c.log.Warn("engine lost a request", "engine", i, "request_id", s.id)
		s.fail(ErrRequestLost)
	}
}
