package engineclient

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// sync makes engine i routable after its READY: it asks the engine where
// it publishes KV events (the get_events_endpoint utility), subscribes
// there (once: SUB sockets reconnect by themselves), loads the blocks the
// engine cached already from its replay socket (get_replay_endpoint;
// replay.go) and the sessions it holds (get_sessions). Session deltas come in the
// engine's heartbeats, on the connection that answers get_sessions, so
// none is missed from READY on. Engines without a PUB socket, or that do
// not know these calls, are ready at once and routed on their heartbeats
// alone.
func (c *Client) sync(i int) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	c.subscribe(ctx, i)
	if raw, err := c.Call(ctx, i, "get_sessions"); err == nil {
		var ids []string
		if err := wire.Unmarshal(raw, &ids); err == nil && len(ids) > 0 {
			// Additive: a delta that overtook this answer must not be undone.
			c.router.ApplySessions(i, &wire.SessionReport{Added: ids})
		}
	}
	c.mu.Lock()
	sl := c.slots[i]
	sl.state.Syncing = false
	r, ready, events := sl.state.Info, sl.state.Ready && !sl.removed, sl.state.EventsEndpoint
	c.mu.Unlock()
	if ready {
		c.log.Info("engine core ready", "engine", i, "model", r.ServedModelName, "max_model_len", r.MaxModelLen,
			"num_blocks", r.NumBlocks, "pid", r.PID, "events", events)
	}
}

// subscribe connects engine i's SUB socket if the engine publishes, and
// reports whether it does.
func (c *Client) subscribe(ctx context.Context, i int) bool {
	raw, err := c.Call(ctx, i, "get_events_endpoint")
	if err != nil {
		c.log.Debug("engine does not say where it publishes", "engine", i, "err", err)
		return false
	}
	var ep string
	if err := wire.Unmarshal(raw, &ep); err != nil || ep == "" {
		return false
	}
	c.mu.Lock()
	sl := c.slots[i]
	ep = publicEndpoint(ep, sl.state.Endpoint)
	if sl.removed || c.closed {
		c.mu.Unlock()
		return false
	}
	if sl.sub != nil && sl.state.EventsEndpoint == ep {
		c.mu.Unlock()
		return true
	}
	old := sl.sub
	sl.sub = nil
	c.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	replay := ""
	if raw, err := c.Call(ctx, i, "get_replay_endpoint"); err == nil { // an engine before 2026-12 has none
		if err := wire.Unmarshal(raw, &replay); err == nil && replay != "" {
			replay = publicEndpoint(replay, sl.state.Endpoint)
		}
	}
	sub, err := zmq.DialSub(ep, []string{""}, c.cfg.DialOptions...) // everything: the socket carries KV events under the engine's topic
	if err != nil {
		c.log.Warn("cannot subscribe to engine events", "engine", i, "endpoint", ep, "err", err)
		return false
	}
	c.mu.Lock()
	if sl.removed || c.closed {
		c.mu.Unlock()
		_ = sub.Close()
		return false
	}
	sl.sub = sub
	sl.state.EventsEndpoint = ep
	c.wg.Add(1)
	c.mu.Unlock()
	cu := c.loadSnapshot(i, replay) // subscribed first, so no batch falls between
	go c.events(i, sub, cu)
	return true
}

// publicEndpoint turns a bound PUB endpoint into one this frontend can
// reach: a wildcard host (tcp://0.0.0.0:p, tcp://*:p, tcp://[::]:p) is
// replaced by the host of the engine's ROUTER endpoint.
func publicEndpoint(pub, router string) string {
	rest, ok := strings.CutPrefix(pub, "tcp://")
	if !ok {
		return pub
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil || (host != "0.0.0.0" && host != "*" && host != "::" && host != "") {
		return pub
	}
	rhost, _, err := net.SplitHostPort(strings.TrimPrefix(router, "tcp://"))
	if err != nil || !strings.HasPrefix(router, "tcp://") {
		rhost = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(rhost, port)
}

// events applies engine i's PUB messages: KV-event batches to the router,
// whatever their topic. An engine from before 2026-12 also publishes its
// load and session reports there, under TopicLoad and TopicSessions.
//
// cu is where the live batches continue after the snapshot loaded when
// subscribing: those before cu.next are in it already.
func (c *Client) events(i int, sub *zmq.Conn, cu catchUp) {
	defer c.wg.Done()
	var seqs wire.PubSeq
	for frames := range sub.Recv() {
		topic, seq, payload, err := wire.ParsePub(frames)
		if err != nil {
			c.log.Warn("dropping malformed PUB message", "engine", i, "err", err)
			continue
		}
		legacy := topic == wire.TopicLoad || topic == wire.TopicSessions
		switch seqs.Observe(topic, seq) {
		case wire.SeqRestart:
			// The engine restarted: what it published before is gone. Its
			// READY handling resets the rest.
			if !legacy {
				c.router.ResetKV(i)
				cu.active = false
			}
		case wire.SeqGap:
			c.log.Debug("missed engine events", "engine", i, "topic", topic)
		}
		if !legacy && !c.admit(i, &cu, seq) {
			continue
		}
		switch topic {
		case wire.TopicLoad:
			var rep wire.LoadReport
			if err := wire.Unmarshal(payload, &rep); err != nil {
				c.log.Warn("bad load report", "engine", i, "err", err)
				continue
			}
			c.mu.Lock()
			if !c.slots[i].countsAdds { // else its heartbeats carry the same figures, and which of our ADDs they include
				c.report(i, rep.NumWaiting, rep.NumRunning, rep.NumTotalBlocks-rep.NumFreeBlocks, nil)
			}
			c.mu.Unlock()
		case wire.TopicSessions:
			var rep wire.SessionReport
			if err := wire.Unmarshal(payload, &rep); err != nil {
				c.log.Warn("bad session report", "engine", i, "err", err)
				continue
			}
			c.router.ApplySessions(i, &rep)
		default:
			var b wire.KVEventBatch
			if err := wire.Unmarshal(payload, &b); err != nil {
				c.log.Warn("bad KV event batch", "engine", i, "topic", topic, "err", err)
				continue
			}
			c.router.ApplyKV(i, &b)
		}
	}
}
