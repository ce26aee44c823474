package engineclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-llm/tandem/frontend/router"
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
	// DialOptions are applied to every socket dialled to an engine (e.g.
	// CURVE keys from zmq.WithCurveClient).
	DialOptions []zmq.Option
	// Endpoints are the engines' ROUTER endpoints. An entry
	// dns+tcp://name:port stands for tcp://A:port for every A record of
	// name, re-resolved every ResolveInterval: engines join and leave as
	// the records change (a Kubernetes headless service).
	Endpoints         []string
	FrontendID        string        // name sent in HELLO (default: random)
	HeartbeatInterval time.Duration // default 1 s
	HeartbeatTimeout  time.Duration // an engine silent this long is dead; default 5 s
	Logger            *slog.Logger
	// Routing is the routing policy (default router.Session); Router, if
	// set, is used instead of a new router.Router for it.
	Routing router.Policy
	Router  *router.Router
	// OnRoute, if set, is called after every routing decision (including
	// the re-routing of a retried request) with the policy and the outcome,
	// the labels of tandem:routing_decisions_total.
	OnRoute func(policy, outcome string)
	// MaxRetries is how many times a request that has produced no output
	// yet is sent to another engine when its engine fails. Default 2;
	// negative disables retries.
	MaxRetries int
	// ResolveInterval is how often dns+tcp endpoints are re-resolved;
	// default 5 s. LookupIP4 resolves a name to its A records (default: the
	// system resolver).
	ResolveInterval time.Duration
	LookupIP4       func(ctx context.Context, host string) ([]net.IP, error)
	// AuditInterval is how often the client asks an engine for its list
	// of this frontend's requests when some have been quiet this long, and
	// fails those the engine no longer has (ErrRequestLost). Default 30 s.
	AuditInterval time.Duration
}

// EngineState is what the client knows of one engine.
type EngineState struct {
	Index       int // the client's stable handle for it (slot), in order of discovery
	Endpoint    string
	Ready       bool       // handshake done and heartbeats flowing
	Info        wire.Ready // the engine's READY (zero until the first one)
	NumRunning  int        // from the engine's last report
	NumWaiting  int        // from the engine's last report
	NumInFlight int        // this frontend's unfinished requests on it
	LastSeen    time.Time
	Stats       wire.SchedulerStats // the engine's latest counters
	Err         string              // why it is not ready, if known
	// EventsEndpoint is the PUB endpoint this client subscribes to ("" when
	// the engine publishes none or has not said yet).
	EventsEndpoint string
	// Syncing: the engine is ready but this client is still subscribing to
	// its reports and loading the sessions it holds; requests go to it
	// only when no synced engine is ready.
	Syncing bool
	// UsedBlocks is KV blocks held by live requests, from the latest
	// report (load report, heartbeat or outputs). Between reports this
	// frontend adjusts for its own requests: Pending and PendingBlocks
	// count those sent since the report and unfinished (requests, blocks);
	// Finished and FinishedBlocks those sent before it and finished since.
	UsedBlocks, Pending, PendingBlocks, Finished, FinishedBlocks int
}

// pendingCall is a utility call waiting for its result.
type pendingCall struct {
	ch     chan *wire.UtilityResult // buffered: 1
	engine int
}

// slot is one engine the client talks to. Removed slots stay (their index
// is never reused) with conn closed.
type slot struct {
	state   EngineState
	conn    *zmq.Conn // DEALER to its ROUTER
	sub     *zmq.Conn // SUB to its PUB; nil until known
	removed bool
	dynamic bool // from a dns+tcp endpoint: removed when its record goes
	// sent counts the ADDs sent on conn since its HELLO; unseen are the
	// placements no report counts yet, oldest first. countsAdds: the
	// engine's reports say how many ADDs they include (adds_seen), so its
	// published load reports, which cannot, are not used.
	sent       uint64
	unseen     []*placement
	countsAdds bool
	// incarnation counts the engine processes seen behind this slot: it
	// goes up when the engine shows it lost us ("unknown frontend") or
	// READY names a new engine id, once per restart (noticed marks that
	// the current one was counted before its READY). A restart fails over
	// only the streams placed on an older incarnation, so a request re-sent
	// to the new process is never sent a second time.
	incarnation uint64
	noticed     bool
}

// Client talks to a set of engine cores. Safe for concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	router *router.Router

	onIteration atomic.Pointer[func(engine, tokens int)] // OnIteration's; nil = none

	mu       sync.Mutex // mu guards the fields below
	slots    []*slot
	streams  map[string]*Stream // by internal request id
	calls    map[uint64]pendingCall
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
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	if cfg.ResolveInterval <= 0 {
		cfg.ResolveInterval = 5 * time.Second
	}
	if cfg.AuditInterval <= 0 {
		cfg.AuditInterval = 30 * time.Second
	}
	if cfg.LookupIP4 == nil {
		cfg.LookupIP4 = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip4", host)
		}
	}
	rt := cfg.Router
	if rt == nil {
		var err error
		if rt, err = router.New(router.Config{Policy: cfg.Routing}); err != nil {
			return nil, fmt.Errorf("engineclient: %w", err)
		}
	}
	c := &Client{
		cfg:     cfg,
		log:     cfg.Logger,
		router:  rt,
		streams: map[string]*Stream{},
		calls:   map[uint64]pendingCall{},
		readyCh: make(chan struct{}),
		stop:    make(chan struct{}),
	}
	static, names := splitEndpoints(cfg.Endpoints)
	for _, ep := range static {
		if _, err := c.AddEngine(ep); err != nil {
			c.Close()
			return nil, err
		}
	}
	if len(names) > 0 {
		c.resolve(names)
		c.wg.Add(1)
		go c.resolveLoop(names)
	}
	c.wg.Add(2)
	go c.ticker()
	go c.auditLoop()
	return c, nil
}

// Router is the router the client routes with.
func (c *Client) Router() *router.Router { return c.router }

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
		c.sendTo(s.EngineIndex(), wire.MsgAbort, &wire.Abort{RequestIDs: []string{s.id}})
		s.fail(ErrClosed)
	}
	close(c.stop)
	c.mu.Lock()
	for _, sl := range c.slots {
		closeSlot(sl)
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

func closeSlot(sl *slot) {
	if sl.conn != nil {
		_ = sl.conn.Close()
	}
	if sl.sub != nil {
		_ = sl.sub.Close()
	}
}

// WaitReady blocks until at least one engine completed the handshake.
func (c *Client) WaitReady(ctx context.Context) error {
	for {
		c.mu.Lock()
		var refusals []string
		live := 0
		for _, sl := range c.slots {
			if sl.removed {
				continue
			}
			if sl.state.Ready {
				c.mu.Unlock()
				return nil
			}
			live++
			if sl.state.Err != "" && sl.state.Info.Error != "" {
				refusals = append(refusals, sl.state.Err)
			}
		}
		ch := c.readyCh
		c.mu.Unlock()
		if live > 0 && len(refusals) == live {
			return fmt.Errorf("%w: %v", ErrRefused, refusals)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("engineclient: waiting for engines %v: %w", c.cfg.Endpoints, ctx.Err())
		}
	}
}

// Engines returns a snapshot of every current engine's state (engines
// that left are not listed).
func (c *Client) Engines() []EngineState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]EngineState, 0, len(c.slots))
	for _, sl := range c.slots {
		if !sl.removed {
			out = append(out, sl.state)
		}
	}
	return out
}

// Info returns the READY of the first ready engine.
func (c *Client) Info() (wire.Ready, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sl := range c.slots {
		if !sl.removed && sl.state.Ready {
			return sl.state.Info, true
		}
	}
	return wire.Ready{}, false
}

// conn returns engine i's DEALER, or nil once it left.
func (c *Client) conn(i int) *zmq.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.slots) || c.slots[i].removed {
		return nil
	}
	return c.slots[i].conn
}

func (c *Client) sendTo(i int, t wire.MsgType, payload any) error {
	conn := c.conn(i)
	if conn == nil {
		return fmt.Errorf("%w: engine %d left", ErrEngineDead, i)
	}
	frames, err := wire.Encode(t, payload)
	if err != nil {
		return fmt.Errorf("engineclient: encode %v: %w", t, err)
	}
	if err := conn.Send(frames); err != nil {
		return fmt.Errorf("engineclient: send to engine %d: %w", i, err)
	}
	return nil
}

// hello says HELLO to engine i. The engine counts our ADDs anew from it:
// the placements sent before are taken as counted.
func (c *Client) hello(i int) {
	c.mu.Lock()
	sl := c.slots[i]
	c.include(sl, sl.sent)
	sl.sent = 0
	c.mu.Unlock()
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
		var dead, notReady, ready []int
		c.mu.Lock()
		for i, sl := range c.slots {
			e := &sl.state
			if sl.removed {
				continue
			}
			if e.Ready && now.Sub(e.LastSeen) > c.cfg.HeartbeatTimeout {
				c.downLocked(i, fmt.Sprintf("no heartbeat for %s", now.Sub(e.LastSeen).Round(time.Millisecond)))
				dead = append(dead, i)
			}
			if e.Ready {
				ready = append(ready, i)
			} else {
				notReady = append(notReady, i)
			}
		}
		c.mu.Unlock()
		for _, i := range dead {
			c.log.Error("engine core went silent", "engine", i, "endpoint", c.endpoint(i))
			c.failEngine(i, "heartbeat timeout")
			c.redial(i)
		}
		for _, i := range notReady {
			c.hello(i)
		}
		hb := &wire.Heartbeat{Timestamp: float64(now.UnixNano()) / 1e9}
		for _, i := range ready {
			_ = c.sendTo(i, wire.MsgHeartbeat, hb)
		}
	}
}

// redial replaces engine i's DEALER with a new one, under a new
// identity, and says HELLO on it: an engine silent past the heartbeat
// timeout may have lost our route for good (libzmq's own reconnection
// keeps the identity, which the engine may still hold for a dead
// connection, or another peer may present).
func (c *Client) redial(i int) {
	ep := c.endpoint(i)
	conn, err := zmq.DialDealer(ep, c.cfg.DialOptions...)
	if err != nil {
		c.log.Error("re-dialling engine core", "engine", i, "endpoint", ep, "err", err)
		return
	}
	c.mu.Lock()
	if c.closed || c.slots[i].removed {
		c.mu.Unlock()
		_ = conn.Close()
		return
	}
	old := c.slots[i].conn
	c.slots[i].conn = conn
	c.wg.Add(1)
	c.mu.Unlock()
	_ = old.Close()
	go c.reader(i, conn)
	c.hello(i)
	c.log.Info("re-dialled engine core", "engine", i, "endpoint", ep)
}

func (c *Client) endpoint(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[i].state.Endpoint
}

// downLocked marks engine i not ready with err and makes the router forget
// what it reported, in one step under c.mu, so that no request is routed
// in between on the engine's stale session reports (it would see the
// session's holder gone without the session being marked moved). c.mu is
// held.
func (c *Client) downLocked(i int, err string) {
	e := &c.slots[i].state
	e.Ready, e.Err = false, err
	c.router.ResetEngine(i)
}

// failEngine handles the loss of engine i (dead, restarted, or gone), after
// downLocked or the restart's router reset: each in-flight stream that has
// produced no output yet is sent to another engine (up to MaxRetries
// times), the others fail with ErrEngineDead.
func (c *Client) failEngine(i int, reason string) { c.failEngineBefore(i, math.MaxUint64, reason) }

// failEngineBefore is failEngine for the streams placed on engine i
// before incarnation inc (a restart: the newer ones run on the new
// process).
func (c *Client) failEngineBefore(i int, inc uint64, reason string) {
	c.mu.Lock()
	var victims []*Stream
	for id, s := range c.streams {
		if s.EngineIndex() == i && s.incarnation < inc {
			victims = append(victims, s)
			delete(c.streams, id)
		}
	}
	c.slots[i].state.NumInFlight = 0
	c.report(i, 0, 0, 0, nil)
	for id, pc := range c.calls {
		if pc.engine == i {
			delete(c.calls, id)
			pc.ch <- &wire.UtilityResult{CallID: id, FailureMessage: "engine failed: " + reason}
		}
	}
	c.mu.Unlock()
	err := fmt.Errorf("%w: engine %d: %s", ErrEngineDead, i, reason)
	for _, s := range victims {
		c.retryOrFail(s, i, err)
	}
}
