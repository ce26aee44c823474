package engineclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// Errors reported to callers.
var (
	ErrEngineDead = errors.New("engineclient: engine core is not available")
	ErrNoEngine   = errors.New("engineclient: no engine core is ready")
	ErrClosed     = errors.New("engineclient: client closed")
	ErrRefused    = errors.New("engineclient: engine refused the handshake")
)

// Config is a client's settings.
type Config struct {
	Endpoints         []string      // one ROUTER endpoint per engine core
	FrontendID        string        // name sent in HELLO (default: random)
	HeartbeatInterval time.Duration // default 1 s
	HeartbeatTimeout  time.Duration // an engine silent this long is dead; default 5 s
	Logger            *slog.Logger
	// Pick chooses the engine for a request among the ready ones; nil
	// uses DefaultPick.
	Pick func(req *wire.EngineCoreRequest, engines []EngineState) int
}

// EngineState is what the client knows of one engine.
type EngineState struct {
	Index       int // position in Config.Endpoints
	Endpoint    string
	Ready       bool       // handshake done and heartbeats flowing
	Info        wire.Ready // the engine's READY (zero until the first one)
	NumRunning  int        // from the engine's last heartbeat
	NumWaiting  int        // from the engine's last heartbeat
	NumInFlight int        // this frontend's unfinished requests on it
	LastSeen    time.Time
	Stats       wire.SchedulerStats // the engine's latest counters
	Err         string              // why it is not ready, if known
}

// Client talks to a set of engine cores. Safe for concurrent use.
type Client struct {
	cfg   Config
	log   *slog.Logger
	conns []*zmq.Conn

	mu       sync.Mutex // mu guards the fields below
	engines  []*EngineState
	streams  map[string]*Stream // by internal request id
	calls    map[uint64]chan *wire.UtilityResult
	nextCall uint64
	closed   bool
	readyCh  chan struct{} // closed and replaced on every READY

	stop chan struct{}
	wg   sync.WaitGroup
}

// Dial connects to every endpoint and starts the handshake. It does not
// wait for engines: use WaitReady.
func Dial(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("engineclient: no engine endpoints")
	}
	if cfg.FrontendID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		host, _ := os.Hostname()
		cfg.FrontendID = fmt.Sprintf("frontend-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Pick == nil {
		cfg.Pick = DefaultPick
	}
	c := &Client{
		cfg:     cfg,
		log:     cfg.Logger,
		streams: map[string]*Stream{},
		calls:   map[uint64]chan *wire.UtilityResult{},
		readyCh: make(chan struct{}),
		stop:    make(chan struct{}),
	}
	for i, ep := range cfg.Endpoints {
		conn, err := zmq.DialDealer(ep)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("engineclient: connect %s: %w", ep, err)
		}
		c.conns = append(c.conns, conn)
		c.engines = append(c.engines, &EngineState{Index: i, Endpoint: ep})
	}
	for i := range c.conns {
		c.wg.Add(1)
		go c.reader(i)
	}
	c.wg.Add(1)
	go c.ticker()
	for i := range c.conns {
		c.hello(i)
	}
	return c, nil
}

func (c *Client) closeConns() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// Close fails every open stream with ErrClosed and disconnects.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	streams := c.streams
	c.streams = map[string]*Stream{}
	c.mu.Unlock()
	for _, s := range streams {
		c.sendTo(s.engine, wire.MsgAbort, &wire.Abort{RequestIDs: []string{s.id}})
		s.fail(ErrClosed)
	}
	close(c.stop)
	c.closeConns()
	c.wg.Wait()
	return nil
}

// WaitReady blocks until at least one engine completed the handshake.
func (c *Client) WaitReady(ctx context.Context) error {
	for {
		c.mu.Lock()
		for _, e := range c.engines {
			if e.Ready {
				c.mu.Unlock()
				return nil
			}
		}
		ch := c.readyCh
		var refusals []string
		for _, e := range c.engines {
			if e.Err != "" && e.Info.Error != "" {
				refusals = append(refusals, e.Err)
			}
		}
		c.mu.Unlock()
		if len(refusals) == len(c.engines) {
			return fmt.Errorf("%w: %v", ErrRefused, refusals)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("engineclient: waiting for engines %v: %w", c.cfg.Endpoints, ctx.Err())
		}
	}
}

// Engines returns a snapshot of every engine's state.
func (c *Client) Engines() []EngineState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]EngineState, len(c.engines))
	for i, e := range c.engines {
		out[i] = *e
	}
	return out
}

// Info returns the READY of the first ready engine.
func (c *Client) Info() (wire.Ready, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.engines {
		if e.Ready {
			return e.Info, true
		}
	}
	return wire.Ready{}, false
}

func (c *Client) sendTo(i int, t wire.MsgType, payload any) error {
	frames, err := wire.Encode(t, payload)
	if err != nil {
		return fmt.Errorf("engineclient: encode %v: %w", t, err)
	}
	if err := c.conns[i].Send(frames); err != nil {
		return fmt.Errorf("engineclient: send to engine %d: %w", i, err)
	}
	return nil
}

func (c *Client) hello(i int) {
	_ = c.sendTo(i, wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: c.cfg.FrontendID, PID: os.Getpid()})
}

// ticker sends heartbeats to ready engines, repeats HELLO to the others,
// and declares silent engines dead.
func (c *Client) ticker() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var dead []int
		var notReady []int
		c.mu.Lock()
		for i, e := range c.engines {
			if e.Ready && now.Sub(e.LastSeen) > c.cfg.HeartbeatTimeout {
				e.Ready = false
				e.Err = fmt.Sprintf("no heartbeat for %s", now.Sub(e.LastSeen).Round(time.Millisecond))
				dead = append(dead, i)
			}
			if !e.Ready {
				notReady = append(notReady, i)
			}
		}
		c.mu.Unlock()
		for _, i := range dead {
			c.log.Error("engine core went silent", "engine", i, "endpoint", c.cfg.Endpoints[i])
			c.failEngine(i, "heartbeat timeout")
		}
		for i := range c.conns {
			if slicesContains(notReady, i) {
				c.hello(i)
			} else {
				_ = c.sendTo(i, wire.MsgHeartbeat, &wire.Heartbeat{Timestamp: float64(now.UnixNano()) / 1e9})
			}
		}
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// failEngine fails every in-flight stream of engine i.
func (c *Client) failEngine(i int, reason string) {
	c.mu.Lock()
	var victims []*Stream
	for id, s := range c.streams {
		if s.engine == i {
			victims = append(victims, s)
			delete(c.streams, id)
		}
	}
	c.engines[i].NumInFlight = 0
	c.mu.Unlock()
	for _, s := range victims {
		s.fail(fmt.Errorf("%w: engine %d: %s", ErrEngineDead, i, reason))
	}
}
