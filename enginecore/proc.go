package enginecore

import (
	"context"
	"encoding/binary"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/wire"
)

// Core is an engine core process: the shell around an Engine (vLLM's
// EngineCoreProc around EngineCore, etcd-raft's Node around RawNode). It
// is the only part of the package with goroutines, channels, timers and
// sockets:
//
//	input:  router.Recv → decode → liveness → in channel (heartbeats stop here)
//	loop:   in → Engine.Handle; compile results → Engine.Compiled; queued
//	        compiles → workers; Engine.Step while there is work; drop
//	        silent frontends; Engine.Publish → out and pub channels
//	compile workers (compilers.go): CompileJob.Run, off the loop, so a
//	        slow schema never stalls a step
//	output: out → encode → router.Send; heartbeats (which carry the load)
//	        on a ticker, so they flow while a long step runs; session
//	        reports in heartbeats to every frontend; KV-event batches
//	        numbered, logged (kvlog.go) and sent on the PUB socket
//	replay: the replay socket's requests, answered from the log
//
// The loop goroutine is the only caller of the Engine. What the output
// goroutine needs of the Engine's state (its load, the frontends to send
// heartbeats to) it reads from snapshots the loop stores after each
// message and step.
type Core struct {
	cfg  Config
	log  *slog.Logger
	eng  *Engine
	live liveness

	out    chan Out // loop → output goroutine
	pubc   chan Pub // loop → output goroutine
	kvlog  *kvLog   // KV-event batches published: sequence numbers, replay buffer, snapshot mirror
	replay Conn     // the replay ROUTER socket; nil: none

	load    atomic.Pointer[loadSnap] // the Engine's load after the last message or step
	ready   atomic.Pointer[[]string] // the Engine's frontends after the last HELLO or drop
	dropped int64                    // PUB payloads dropped on a full queue, loop goroutine only
}

// loadSnap is the Engine's figures and, for each frontend, how many of
// its ADDs they include: taken together, so a heartbeat never pairs old
// figures with newer counts (that would hide requests from the frontend).
type loadSnap struct {
	st   wire.SchedulerStats
	adds map[string]int64 // ZMQ identity → ADDs since its HELLO (Engine.AddsSeen)
}

const (
	defaultReportInterval = 100 * time.Millisecond
	defaultPubQueueLen    = 4096   // payloads waiting for the output goroutine
	defaultBufferSteps    = 10_000 // KV-event batches kept for replay (vLLM's buffer_steps)
	snapshotBatchBlocks   = 512    // blocks per snapshot batch
)

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
	eng, err := NewEngine(cfg, be)
	if err != nil {
		return nil, err
	}
	queue := cfg.KVEvents.QueueSize
	if queue <= 0 {
		queue = defaultPubQueueLen
	}
	c := &Core{
		cfg:   cfg,
		log:   eng.log,
		eng:   eng,
		live:  liveness{lastSeen: map[string]time.Time{}},
		out:   make(chan Out, 4096),
		pubc:  make(chan Pub, queue),
		kvlog: newKVLog(0, cfg.KVEvents.Layout),
	}
	eng.overlap = overlap
	c.snapshot(true)
	return c, nil
}

// overlap runs fn on a goroutine and returns the wait for it.
func overlap(fn func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	return func() { <-done }
}

// Stats is the Engine's load after the last message or step, as the
// heartbeats carry it: for the engine's own /metrics. Safe from any
// goroutine.
func (c *Core) Stats() wire.SchedulerStats { return c.load.Load().st }

// KVTopic is the topic of the KV-events messages.
func (c *Core) KVTopic() string { return c.cfg.KVEvents.Topic }

// ServeReplay makes Serve answer replay and snapshot requests on r (a
// ROUTER; wire/replay.go), from a buffer of the last
// KVEvents.BufferSteps batches. Call it before Serve.
func (c *Core) ServeReplay(r Conn) {
	steps := c.cfg.KVEvents.BufferSteps
	if steps <= 0 {
		steps = defaultBufferSteps
	}
	c.replay, c.kvlog = r, newKVLog(steps, c.cfg.KVEvents.Layout)
}

// Serve runs the engine until ctx ends (a clean shutdown: every frontend
// is told ENGINE_DEAD "shutting down") or a fatal error (ENGINE_DEAD with
// the reason, and the error is returned). pub, the KV-events PUB socket,
// may be nil.
func (c *Core) Serve(ctx context.Context, router Conn, pub Publisher) error {
	c.eng.PublishTo(eventsEndpoint(pub), pub != nil)
	if c.replay != nil {
		c.eng.ReplayAt(eventsEndpoint(c.replay))
	}
	in := make(chan inMsg, 4096)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.input(ctx, router, in) }()
	outDone := make(chan struct{})
	go func() { defer wg.Done(); c.output(router, pub, outDone) }()
	if c.replay != nil {
		wg.Add(1)
		go func() { defer wg.Done(); c.serveReplay(ctx) }()
	}
	comp := startCompilers(numCompileWorkers())

	err := c.loop(ctx, in, comp)
	reason := "engine shutting down"
	if err != nil {
		reason = err.Error()
		c.log.Error("engine core failed", "err", err)
	}
	for _, id := range c.eng.Clients() {
		c.out <- Out{Client: id, Type: wire.MsgEngineDead, Payload: &wire.EngineDead{Reason: reason}}
	}
	close(outDone)
	cancel()
	comp.stop()
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
		c.live.seen(id, time.Now())
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

// loop is vLLM's busy loop: (1) wait for a message or a compile while
// there is no work, (2) handle the messages and compiles waiting and hand
// queued compiles to idle workers, (3) publish events and drop silent
// frontends, (4) step once if there is work, then publish what it cached.
func (c *Core) loop(ctx context.Context, in <-chan inMsg, comp *compilers) error {
	check := time.NewTicker(c.cfg.HeartbeatInterval / 2)
	defer check.Stop()
	lastCheck := time.Now()
	for {
		if !c.eng.HasWork() { // (1)
			select {
			case <-ctx.Done():
				return nil
			case m := <-in:
				c.handle(m)
			case r := <-comp.results:
				c.compiled(comp, r)
			case <-check.C:
			}
		}
		// (2) handle the messages queued now, not those that keep coming:
		// a peer flooding the socket must not starve the step.
		for n := len(in); n > 0; n-- {
			c.handle(<-in)
		}
		for n := len(comp.results); n > 0; n-- {
			c.compiled(comp, <-comp.results)
		}
		comp.dispatch(c.eng)
		c.publish(time.Now()) // (3)
		if time.Since(lastCheck) >= c.cfg.HeartbeatInterval/2 {
			lastCheck = time.Now()
			if gone := c.live.expire(lastCheck.Add(-c.cfg.HeartbeatTimeout)); len(gone) > 0 {
				c.eng.Drop(lastCheck, gone...)
				c.snapshot(true)
			}
			was := c.eng.Sleeping()
			if c.eng.Tick(lastCheck); c.eng.Sleeping() != was {
				c.snapshot(false)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if c.eng.HasWork() { // (4)
			start := time.Now()
			outs, err := c.eng.Step(ctx, start)
			took := time.Since(start)
			c.eng.StepTook(took)
			Stamp(outs, start.Add(took))
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			c.send(outs)
			c.snapshot(false)
			c.publish(time.Now())
		}
	}
}

func (c *Core) handle(m inMsg) {
	c.send(c.eng.Handle(time.Now(), m.client, m.payload))
	_, hello := m.payload.(*wire.Hello)
	c.snapshot(hello)
}

// compiled hands a worker's compile to the Engine.
func (c *Core) compiled(comp *compilers, r CompileResult) {
	comp.done()
	c.send(c.eng.Compiled(time.Now(), r))
	c.snapshot(false)
}

func (c *Core) send(outs []Out) {
	for _, o := range outs {
		c.out <- o
	}
}

// snapshot stores what the output goroutine reads of the Engine.
func (c *Core) snapshot(clients bool) {
	c.load.Store(&loadSnap{st: c.eng.Load(), adds: c.eng.AddsSeen()})
	if clients {
		ids := c.eng.Clients()
		c.ready.Store(&ids)
	}
}

// publish hands the Engine's PUB payloads to the output goroutine, dropping
// them (and saying so, at 1, 2, 4, 8, … drops) when its queue is full.
func (c *Core) publish(now time.Time) {
	for _, p := range c.eng.Publish(now) {
		select {
		case c.pubc <- p:
		default:
			if p.KV != nil {
				c.kvlog.skip() // subscribers see the gap
			}
			c.dropped++
			if c.dropped&(c.dropped-1) == 0 {
				c.log.Warn("PUB queue full; dropping events (subscribers will see a sequence gap)", "dropped", c.dropped)
			}
		}
	}
}

// output encodes and sends messages, sends heartbeats (the engine's load)
// every ReportInterval so they keep flowing while a long step runs, and
// sends what Publish produced: session reports in heartbeats to every
// frontend, KV-event batches on the PUB socket.
func (c *Core) output(router Conn, pub Publisher, done <-chan struct{}) {
	tick := time.NewTicker(min(c.cfg.HeartbeatInterval, c.reportInterval()))
	defer tick.Stop()
	send := func(m Out) {
		frames, err := wire.Encode(m.Type, m.Payload)
		if err != nil {
			c.log.Error("encode", "type", m.Type, "err", err)
			return
		}
		if err := router.Send(append([][]byte{[]byte(m.Client)}, frames...)); err != nil {
			c.log.Debug("send", "err", err)
		}
	}
	heartbeat := func(sessions *wire.SessionReport) {
		snap := c.load.Load()
		ts := unixSeconds(time.Now())
		for _, id := range *c.ready.Load() {
			s := snap.st
			seen := snap.adds[id]
			s.AddsSeen = &seen
			send(Out{Client: id, Type: wire.MsgHeartbeat, Payload: &wire.Heartbeat{Timestamp: ts, NumRunning: s.NumRunningReqs,
				NumWaiting: s.NumWaitingReqs, SchedulerStats: &s, Sessions: sessions}})
		}
	}
	for {
		select {
		case m := <-c.out:
			send(m)
		case <-tick.C:
			heartbeat(nil)
		case m := <-c.pubc:
			switch {
			case m.Sessions != nil:
				heartbeat(m.Sessions)
			case m.KV != nil && pub != nil:
				c.sendKV(pub, m.KV)
			}
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

// sendKV encodes, numbers, logs and publishes one KV-event batch. Output
// goroutine only.
func (c *Core) sendKV(pub Publisher, b *wire.KVEventBatch) {
	payload, err := wire.Marshal(b)
	if err != nil {
		c.log.Error("encode KV events", "err", err)
		c.kvlog.skip()
		return
	}
	seq := c.kvlog.append(b, payload)
	_ = pub.Send(wire.PubFrames(c.cfg.KVEvents.Topic, seq, payload))
}

// serveReplay answers the replay socket: a replay from a sequence number
// (vLLM's), or a snapshot of the cached blocks (wire/replay.go). A request
// is [identity][""][request] from a REQ socket, or [identity][request]
// from a DEALER; the answer uses the same envelope.
func (c *Core) serveReplay(ctx context.Context) {
	topic := []byte(c.cfg.KVEvents.Topic)
	for {
		var frames [][]byte
		var ok bool
		select {
		case <-ctx.Done():
			return
		case frames, ok = <-c.replay.Recv():
			if !ok {
				return
			}
		}
		if len(frames) < 2 || len(frames) > 3 {
			c.log.Warn("dropping replay request", "frames", len(frames))
			continue
		}
		env := frames[:len(frames)-1] // identity, and the delimiter if any
		reply := func(fs ...[]byte) { _ = c.replay.Send(append(slices.Clone(env), fs...)) }
		seq, snapshot, err := wire.ParseReplayRequest(frames[len(frames)-1])
		switch {
		case err != nil:
			c.log.Warn("dropping replay request", "err", err)
			continue
		case snapshot:
			batches, next := c.kvlog.snapshot(unixSeconds(time.Now()), c.cfg.EngineIndex, snapshotBatchBlocks)
			seqFrame := binary.BigEndian.AppendUint64(nil, next)
			for _, b := range batches {
				payload, err := wire.Marshal(b)
				if err != nil {
					c.log.Error("encode KV snapshot", "err", err)
					break
				}
				reply(topic, seqFrame, payload)
			}
		default:
			for _, b := range c.kvlog.since(seq) {
				reply(topic, binary.BigEndian.AppendUint64(nil, b.seq), b.payload)
			}
		}
		reply([]byte{}, wire.ReplayEnd, []byte{})
	}
}

func (c *Core) reportInterval() time.Duration {
	if c.cfg.ReportInterval > 0 {
		return c.cfg.ReportInterval
	}
	return defaultReportInterval
}

// eventsEndpoint is the PUB endpoint frontends should subscribe to, for
// the "get_events_endpoint" utility ("" when there is none or the socket
// does not say).
func eventsEndpoint(pub Publisher) string {
	if pub == nil {
		return ""
	}
	if e, ok := pub.(interface{ Endpoint() string }); ok {
		return e.Endpoint()
	}
	return ""
}

// liveness is when each peer was last heard from: written by the input
// goroutine, read by the loop to drop silent frontends.
type liveness struct {
	mu       sync.Mutex
	lastSeen map[string]time.Time
}

func (l *liveness) seen(id string, now time.Time) {
	l.mu.Lock()
	l.lastSeen[id] = now
	l.mu.Unlock()
}

// expire forgets the peers silent since before deadline and returns them.
func (l *liveness) expire(deadline time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gone []string
	for id, t := range l.lastSeen {
		if t.Before(deadline) {
			gone = append(gone, id)
			delete(l.lastSeen, id)
		}
	}
	return gone
}

// WarmUp runs Engine.WarmUp before serving and says how long it took.
func (c *Core) WarmUp(ctx context.Context, n int) (time.Duration, error) {
	start := time.Now()
	if err := c.eng.WarmUp(ctx, start, n); err != nil {
		return 0, err
	}
	c.eng.StepTook(time.Since(start)) // the warm-up is one step: the pace's first sample
	c.snapshot(true)
	return time.Since(start), nil
}
