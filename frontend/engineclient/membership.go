package engineclient

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// dnsScheme marks an endpoint that names every A record of a host.
const dnsScheme = "dns+tcp://"

// splitEndpoints separates plain endpoints from dns+tcp ones (returned as
// host:port).
func splitEndpoints(eps []string) (static, names []string) {
	for _, ep := range eps {
		ep = strings.TrimSpace(ep)
		if ep == "" {
			continue
		}
		if name, ok := strings.CutPrefix(ep, dnsScheme); ok {
			names = append(names, name)
		} else {
			static = append(static, ep)
		}
	}
	return static, names
}

// AddEngine connects to one more engine (an engine joining while serving)
// and returns its index. Adding an endpoint already connected returns its
// index.
func (c *Client) AddEngine(endpoint string) (int, error) {
	return c.addEngine(endpoint, false)
}

func (c *Client) addEngine(endpoint string, dynamic bool) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, ErrClosed
	}
	for i, sl := range c.slots {
		if !sl.removed && sl.state.Endpoint == endpoint {
			c.mu.Unlock()
			return i, nil
		}
	}
	c.mu.Unlock()
	conn, err := zmq.DialDealer(endpoint, c.cfg.DialOptions...)
	if err != nil {
		return 0, fmt.Errorf("engineclient: connect %s: %w", endpoint, err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		return 0, ErrClosed
	}
	i := len(c.slots)
	c.slots = append(c.slots, &slot{state: EngineState{Index: i, Endpoint: endpoint}, conn: conn, dynamic: dynamic})
	c.wg.Add(1)
	c.mu.Unlock()
	go c.reader(i, conn)
	c.hello(i)
	c.log.Info("engine core added", "engine", i, "endpoint", endpoint)
	return i, nil
}

// RemoveEngine disconnects from an engine (an engine leaving): its
// requests that have produced no output move to other engines, the others
// fail. It reports whether the endpoint was connected.
func (c *Client) RemoveEngine(endpoint string) bool {
	c.mu.Lock()
	idx := -1
	for i, sl := range c.slots {
		if !sl.removed && sl.state.Endpoint == endpoint {
			idx = i
		}
	}
	if idx < 0 {
		c.mu.Unlock()
		return false
	}
	sl := c.slots[idx]
	wasReady := sl.state.Ready
	c.downLocked(idx, "removed")
	c.mu.Unlock()
	c.failEngine(idx, "engine left")
	c.mu.Lock()
	sl.removed = true
	closeSlot(sl)
	c.mu.Unlock()
	c.log.Info("engine core removed", "engine", idx, "endpoint", endpoint, "was_ready", wasReady)
	return true
}

// resolveLoop re-resolves the dns+tcp names until Close.
func (c *Client) resolveLoop(names []string) {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.ResolveInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.resolve(names)
		}
	}
}

// resolve looks up every name and adds and removes engines to match. A
// name that fails to resolve keeps its engines (a transient DNS error must
// not drop the cluster).
func (c *Client) resolve(names []string) {
	want := map[string]bool{}
	failed := false
	for _, name := range names {
		host, port, err := net.SplitHostPort(name)
		if err != nil {
			c.log.Error("bad dns+tcp endpoint", "endpoint", dnsScheme+name, "err", err)
			failed = true
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ips, err := c.cfg.LookupIP4(ctx, host)
		cancel()
		if err != nil {
			c.log.Warn("resolving engines", "name", host, "err", err)
			failed = true
			continue
		}
		for _, ip := range ips {
			want["tcp://"+net.JoinHostPort(ip.String(), port)] = true
		}
	}
	c.mu.Lock()
	var gone []string
	have := map[string]bool{}
	for _, sl := range c.slots {
		if sl.removed || !sl.dynamic {
			continue
		}
		have[sl.state.Endpoint] = true
		if !want[sl.state.Endpoint] {
			gone = append(gone, sl.state.Endpoint)
		}
	}
	c.mu.Unlock()
	for _, ep := range slices.Sorted(maps.Keys(want)) {
		if !have[ep] {
			if _, err := c.addEngine(ep, true); err != nil {
				c.log.Error("adding engine", "endpoint", ep, "err", err)
			}
		}
	}
	if failed {
		return
	}
	for _, ep := range gone {
		c.RemoveEngine(ep)
	}
}
