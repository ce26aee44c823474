package enginecore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-llm/tandem/enginecore/kvcache"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/wire"
)

// Config is one engine core's settings.
type Config struct {
	EngineIndex         int    // data-parallel rank, reported in every message
	Model               string // what --model named (a path or "dummy")
	ServedModelName     string
	MaxModelLen         int // tokens per request, prompt + output
	BlockSize           int // tokens per KV block
	NumBlocks           int // KV blocks in the pool
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	EnablePrefixCaching bool
	HeartbeatInterval   time.Duration // how often to send heartbeats
	ReportInterval      time.Duration // how often to publish load reports; default 100 ms
	HeartbeatTimeout    time.Duration // a frontend silent this long is gone
	Version             string
	Logger              *slog.Logger
}

// Core is one engine core. Create with New, run with Serve.
type Core struct {
	cfg      Config
	log      *slog.Logger
	be       runner.Backend
	run      *runner.Runner
	kv       *kvcache.Manager
	sched    *sched.Scheduler
	sessions *sessions
	clients  *clients
	engineID string
	eos      []int32

	out chan outMsg // core → output goroutine

	// Load figures published by the core goroutine for heartbeats/reports.
	numRunning, numWaiting atomic.Int64
	numFreeBlocks          atomic.Int64
	lastStats              atomic.Pointer[wire.SchedulerStats] // for heartbeats
	reportSeq              uint64                              // PUB sequence, output goroutine only

	// KV-event and session publishing (events.go).
	ev          *eventState
	pubc        chan pubMsg // core → output goroutine
	hasPub      bool        // set by Serve before the loop starts
	pubEndpoint string      // set by Serve before the loop starts
}

type outMsg struct {
	client  string
	t       wire.MsgType
	payload any
}

type inMsg struct {
	client  string
	t       wire.MsgType
	payload any
}

// New builds an engine core over be, allocating its KV cache.
func New(cfg Config, be runner.Backend) (*Core, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = 5 * time.Second
	}
	if cfg.BlockSize <= 0 || cfg.NumBlocks <= 0 {
		return nil, fmt.Errorf("enginecore: block size %d and block count %d must be positive", cfg.BlockSize, cfg.NumBlocks)
	}
	if err := be.AllocateKV(cfg.NumBlocks, cfg.BlockSize); err != nil {
		return nil, fmt.Errorf("enginecore: allocate KV cache: %w", err)
	}
	kv, err := kvcache.New(kvcache.Config{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSize, EnablePrefixCaching: cfg.EnablePrefixCaching, EnableEvents: cfg.EnablePrefixCaching})
	if err != nil {
		return nil, fmt.Errorf("enginecore: %w", err)
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	c := &Core{
		cfg:      cfg,
		log:      cfg.Logger.With("engine", cfg.EngineIndex),
		be:       be,
		run:      runner.New(be, cfg.BlockSize),
		kv:       kv,
		sessions: newSessions(),
		clients:  newClients(),
		engineID: hex.EncodeToString(idb[:]),
		eos:      be.Model().EOSTokenIDs,
		out:      make(chan outMsg, 4096),
		ev:       newEventState(),
		pubc:     make(chan pubMsg, pubQueueLen),
	}
	c.sched = sched.New(sched.Config{
		MaxNumSeqs:          cfg.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens,
		MaxModelLen:         cfg.MaxModelLen,
		BlockSize:           cfg.BlockSize,
	}, kv)
	c.publishCounts()
	return c, nil
}

// Serve runs the engine until ctx ends (a clean shutdown: every frontend
// is told ENGINE_DEAD "shutting down") or a fatal error (ENGINE_DEAD with
// the reason, and the error is returned).
func (c *Core) Serve(ctx context.Context, router Conn, pub Publisher) error {
	in := make(chan inMsg, 4096)
	c.hasPub, c.pubEndpoint = pub != nil, eventsEndpoint(pub)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.input(ctx, router, in) }()
	outDone := make(chan struct{})
	go func() { defer wg.Done(); c.output(router, pub, outDone) }()

	err := c.loop(ctx, in)
	reason := "engine shutting down"
	if err != nil {
		reason = err.Error()
		c.log.Error("engine core failed", "err", err)
	}
	for _, id := range c.clients.readyIDs() {
		c.out <- outMsg{client: id, t: wire.MsgEngineDead, payload: &wire.EngineDead{Reason: reason}}
	}
	close(outDone)
	cancel()
	wg.Wait()
	return err
}

// input decodes messages and records liveness. Heartbeats stop here.
func (c *Core) input(ctx context.Context, router Conn, in chan<- inMsg) {
	recv := router.Recv()
	for {
		var frames [][]byte
		var ok bool
		select {
		case <-ctx.Done():
			return
		case frames, ok = <-recv:
			if !ok {
				return
			}
		}
		if len(frames) < 2 {
			continue
		}
		id := string(frames[0])
		t, payload, err := wire.Decode(frames[1:])
		if err != nil {
			c.log.Warn("dropping malformed message", "err", err)
			continue
		}
		c.clients.seen(id, time.Now())
		if t == wire.MsgHeartbeat {
			continue
		}
		select {
		case in <- inMsg{client: id, t: t, payload: payload}:
		case <-ctx.Done():
			return
		}
	}
}

// output encodes and sends messages, sends heartbeats every
// HeartbeatInterval and load reports every ReportInterval, so they keep
// flowing while a long step runs, and sends the PUB payloads of the core
// goroutine.
func (c *Core) output(router Conn, pub Publisher, done <-chan struct{}) {
	tick := time.NewTicker(c.cfg.HeartbeatInterval)
	defer tick.Stop()
	loadTick := time.NewTicker(c.reportInterval())
	defer loadTick.Stop()
	ps := &pubSender{pub: pub, seqs: map[string]uint64{}}
	send := func(m outMsg) {
		frames, err := wire.Encode(m.t, m.payload)
		if err != nil {
			c.log.Error("encode", "type", m.t, "err", err)
			return
		}
		if err := router.Send(append([][]byte{[]byte(m.client)}, frames...)); err != nil {
			c.log.Debug("send", "err", err)
		}
	}
	for {
		select {
		case m := <-c.out:
			send(m)
		case <-tick.C:
			hb := &wire.Heartbeat{Timestamp: now(), NumRunning: int(c.numRunning.Load()), NumWaiting: int(c.numWaiting.Load()), SchedulerStats: c.lastStats.Load()}
			for _, id := range c.clients.readyIDs() {
				send(outMsg{client: id, t: wire.MsgHeartbeat, payload: hb})
			}
		case <-loadTick.C:
			c.publishLoad(pub)
		case m := <-c.pubc:
			ps.send(m)
		case <-done:
			for {
				select {
				case m := <-c.out:
					send(m)
				default:
					return
				}
			}
		}
	}
}

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// loop is the core goroutine: handle input, then step while there is work.
func (c *Core) loop(ctx context.Context, in <-chan inMsg) error {
	check := time.NewTicker(c.cfg.HeartbeatInterval / 2)
	defer check.Stop()
	lastCheck := time.Now()
	for {
		if !c.sched.HasWork() {
			select {
			case <-ctx.Done():
				return nil
			case m := <-in:
				c.handle(m)
			case <-check.C:
			}
		}
	drain:
		for {
			select {
			case m := <-in:
				c.handle(m)
			default:
				break drain
			}
		}
		c.publishEvents(time.Now())
		if time.Since(lastCheck) >= c.cfg.HeartbeatInterval/2 {
			lastCheck = time.Now()
			c.expireClients(lastCheck)
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.sched.HasWork() {
			if err := c.step(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			c.publishEvents(time.Now())
		}
	}
}

// expireClients aborts every request of a frontend whose heartbeats stopped,
// so a dead frontend never leaks KV blocks.
func (c *Core) expireClients(t time.Time) {
	gone := c.clients.expire(t.Add(-c.cfg.HeartbeatTimeout))
	for _, cl := range gone {
		var ids []string
		c.sched.Requests(func(r *sched.Request) {
			if r.Client == cl.id {
				ids = append(ids, r.ID)
			}
		})
		c.log.Warn("frontend went silent; aborting its requests", "frontend", cl.name, "requests", len(ids))
		c.abort(ids)
	}
}

func (c *Core) abort(ids []string) {
	for _, r := range c.sched.Abort(ids...) {
		c.run.Forget(r.ID)
		if r.SessionID != "" {
			c.sessions.finished(r.SessionID, now())
		}
	}
	c.publishCounts()
}

func (c *Core) publishCounts() {
	st := c.stats()
	c.numRunning.Store(int64(st.NumRunningReqs))
	c.numWaiting.Store(int64(st.NumWaitingReqs))
	c.numFreeBlocks.Store(int64(st.NumFreeBlocks))
	c.lastStats.Store(&st)
}

// ErrFatal marks errors after which the engine cannot continue.
var ErrFatal = errors.New("enginecore: fatal")

func pid() int { return os.Getpid() }

// WarmUp runs one forward pass of up to n tokens before serving, so the
// first request does not pay for faulting in mmapped weights and growing
// scratch buffers. It writes only KV blocks the pool holds as free and
// uncached.
func (c *Core) WarmUp(ctx context.Context, n int) (time.Duration, error) {
	n = min(n, c.cfg.NumBlocks*c.cfg.BlockSize, c.cfg.MaxModelLen)
	if n < 1 {
		return 0, nil
	}
	st := &runner.Step{Seqs: []runner.Seq{{Start: 0, Len: n, ContextLen: n, Logits: true}}}
	for i := range n {
		st.TokenIDs = append(st.TokenIDs, c.be.Model().BOSTokenID)
		st.Positions = append(st.Positions, int32(i))
		st.SlotMapping = append(st.SlotMapping, int32(i))
		if i%c.cfg.BlockSize == 0 {
			st.Seqs[0].BlockTable = append(st.Seqs[0].BlockTable, int32(i/c.cfg.BlockSize))
		}
	}
	logits := make([]float32, c.be.Model().VocabSize)
	start := time.Now()
	if err := c.be.Forward(ctx, st, logits); err != nil {
		return 0, fmt.Errorf("enginecore: warm-up: %w", err)
	}
	return time.Since(start), nil
}
