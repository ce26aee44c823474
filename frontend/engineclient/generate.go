package engineclient

import (
	"context"
	"fmt"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// Option adjusts one request built by Generate.
type Option func(*wire.EngineCoreRequest)

// WithSessionID sets the request's session_id ("" = none), like vLLM's
// AsyncLLM.generate(..., session_id=).
func WithSessionID(id string) Option { return func(r *wire.EngineCoreRequest) { r.SessionID = id } }

// WithCacheSalt isolates the request's prefix-cache entries.
func WithCacheSalt(salt string) Option { return func(r *wire.EngineCoreRequest) { r.CacheSalt = salt } }

// WithPriority sets the scheduling priority (lower runs earlier).
func WithPriority(p int) Option { return func(r *wire.EngineCoreRequest) { r.Priority = p } }

// WithDataParallelRank pins the request to engine rank.
func WithDataParallelRank(rank int) Option {
	return func(r *wire.EngineCoreRequest) { r.DataParallelRank = &rank }
}

// WithExternalID sets the user-visible request id.
func WithExternalID(id string) Option {
	return func(r *wire.EngineCoreRequest) { r.ExternalReqID = id }
}

// Generate submits prompt token ids under requestID (unique among this
// client's open requests) and returns its samples: params.N of them
// (parallel sampling, see Children), each a Stream, all sharing the
// request's options (its session among them).
func (c *Client) Generate(ctx context.Context, prompt []int32, params wire.SamplingParams, requestID string, opts ...Option) (*Generation, error) {
	req := &wire.EngineCoreRequest{
		RequestID:      requestID,
		PromptTokenIDs: prompt,
		SamplingParams: params,
		ArrivalTime:    float64(time.Now().UnixNano()) / 1e9,
	}
	for _, o := range opts {
		o(req)
	}
	return c.SubmitN(ctx, req)
}

// Submit routes req to an engine and sends it. The stream must be read to
// its end or closed. If the engine fails before the request produced any
// output, the stream carries on transparently on another engine.
func (c *Client) Submit(ctx context.Context, req *wire.EngineCoreRequest) (*Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Stream{id: req.RequestID, req: req, c: c, notify: make(chan struct{}, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if _, dup := c.streams[req.RequestID]; dup {
		c.mu.Unlock()
		return nil, fmt.Errorf("engineclient: duplicate request id %q", req.RequestID)
	}
	i, d, err := c.route(req, -1)
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.place(s, i)
	c.mu.Unlock()
	c.observe(d)
	c.log.Debug("routed", "request_id", req.RequestID, "engine", i, "policy", d.Policy, "outcome", d.Outcome, "expected_cached_tokens", d.CachedTokens)
	if err := c.sendTo(i, wire.MsgAdd, req); err != nil {
		c.release(s, false)
		return nil, err
	}
	return s, nil
}

// release forgets a stream; abort says whether the engine must be told.
func (c *Client) release(s *Stream, abort bool) {
	c.mu.Lock()
	owned := c.streams[s.id] == s
	i := s.EngineIndex()
	if owned {
		delete(c.streams, s.id)
		c.settle(s)
	}
	c.mu.Unlock()
	if owned && abort {
		_ = c.sendTo(i, wire.MsgAbort, &wire.Abort{RequestIDs: []string{s.id}})
	}
}

// Abort stops requests by internal id, wherever they run.
func (c *Client) Abort(ids ...string) {
	for _, id := range ids {
		c.mu.Lock()
		s, ok := c.streams[id]
		c.mu.Unlock()
		if ok {
			s.Close()
		}
	}
}

// Call runs a utility method on engine i and returns its raw result.
func (c *Client) Call(ctx context.Context, i int, method string, args ...any) (wire.Raw, error) {
	c.mu.Lock()
	if i < 0 || i >= len(c.slots) || c.slots[i].removed {
		c.mu.Unlock()
		return nil, fmt.Errorf("engineclient: no engine %d", i)
	}
	if !c.slots[i].state.Ready {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: engine %d", ErrEngineDead, i)
	}
	c.nextCall++
	id := c.nextCall
	ch := make(chan *wire.UtilityResult, 1)
	c.calls[id] = pendingCall{ch: ch, engine: i}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()
	if args == nil {
		args = []any{}
	}
	if err := c.sendTo(i, wire.MsgUtility, &wire.Utility{CallID: id, Method: method, Args: args}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.FailureMessage != "" {
			return nil, fmt.Errorf("engineclient: engine %d: %s: %s", i, method, r.FailureMessage)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("engineclient: engine %d: %s: %w", i, method, ctx.Err())
	case <-c.stop:
		return nil, ErrClosed
	}
}

// Session asks every ready engine what it knows of a session and returns
// the records of the engines that know it.
func (c *Client) Session(ctx context.Context, id string) ([]wire.SessionInfo, error) {
	var out []wire.SessionInfo
	var firstErr error
	for _, e := range c.Engines() {
		if !e.Ready {
			continue
		}
		raw, err := c.Call(ctx, e.Index, "get_session", id)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if raw.IsNil() {
			continue // msgpack nil: this engine does not know the session
		}
		var info wire.SessionInfo
		if err := wire.Unmarshal(raw, &info); err != nil {
			return nil, fmt.Errorf("engineclient: get_session from engine %d: %w", e.Index, err)
		}
		out = append(out, info)
	}
	if out == nil && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// EndSession ends a session on every ready engine and reports whether any
// engine knew it.
func (c *Client) EndSession(ctx context.Context, id string) (bool, error) {
	known := false
	for _, e := range c.Engines() {
		if !e.Ready {
			continue
		}
		raw, err := c.Call(ctx, e.Index, "end_session", id)
		if err != nil {
			return known, err
		}
		var ok bool
		if err := wire.Unmarshal(raw, &ok); err != nil {
			return known, fmt.Errorf("engineclient: end_session from engine %d: %w", e.Index, err)
		}
		known = known || ok
	}
	return known, nil
}
