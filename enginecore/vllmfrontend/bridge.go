package vllmfrontend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// Config configures Run.
type Config struct {
	// HandshakeAddress is the vLLM frontend's handshake ROUTER,
	// tcp://--data-parallel-address:--data-parallel-rpc-port.
	HandshakeAddress string
	Gate             GateConfig
	// HandshakeTimeout bounds the wait for the frontend's answer to HELLO
	// (vLLM's engine waits 5 minutes; the default here too).
	HandshakeTimeout time.Duration
	// Linger is how long the last messages (ENGINE_CORE_DEAD, the aborts of
	// a shutdown) get to leave before the sockets close (default 1 s).
	Linger time.Duration
	Log    *slog.Logger
}

// ServeFunc runs the engine core over conn (an enginecore.Conn) until ctx
// ends or the engine fails: enginecore.Core.Serve.
type ServeFunc func(ctx context.Context, conn *Pipe) error

// ErrEngineDied wraps the reason Run returns when the engine core died.
var ErrEngineDied = errors.New("vllmfrontend: engine core died")

type indexed struct {
	i      int
	frames [][]byte
}

// shell owns the sockets; one goroutine (Run's) feeds the Gate.
type shell struct {
	log       *slog.Logger
	pipe      *Pipe
	handshake *zmq.Conn
	inputs    []*zmq.Conn
	outputs   []*zmq.Conn
	in        chan indexed // every input socket's messages
	stop      chan struct{}
	wg        sync.WaitGroup
}

// Run serves the engine core (started with serve) to the vLLM frontend at
// cfg.HandshakeAddress as a headless vLLM engine of DP rank cfg.Gate.Rank,
// until ctx ends (a clean shutdown: in-flight requests finish with ABORT;
// nil) or the engine core dies (ENGINE_CORE_DEAD on every output socket; an
// error wrapping ErrEngineDied). It also fails when the frontend does not
// answer HELLO within HandshakeTimeout.
func Run(ctx context.Context, cfg Config, serve ServeFunc) error {
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Minute
	}
	if cfg.Linger <= 0 {
		cfg.Linger = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Gate.Log == nil {
		cfg.Gate.Log = cfg.Log
	}
	hs, err := zmq.DialDealer(cfg.HandshakeAddress, zmq.WithIdentity(Identity(cfg.Gate.Rank)), zmq.WithLogger(cfg.Log))
	if err != nil {
		return fmt.Errorf("vllmfrontend: connect to the handshake socket %s: %w", cfg.HandshakeAddress, err)
	}
	s := &shell{log: cfg.Log, pipe: NewPipe(), handshake: hs, in: make(chan indexed, 1024), stop: make(chan struct{})}
	defer s.close()
	engCtx, stopEngine := context.WithCancel(context.Background()) // stopped after the aborts went out
	defer stopEngine()
	served := make(chan error, 1)
	go func() { served <- serve(engCtx, s.pipe) }()
	g := NewGate(cfg.Gate)
	s.deliver(g.Start(time.Now()))
	tick := time.NewTicker(g.cfg.HeartbeatInterval / 2)
	defer tick.Stop()
	deadline := time.NewTimer(cfg.HandshakeTimeout)
	defer deadline.Stop()
	connected := false // the output sockets exist: last messages may be on their way
	// finish stops the engine core and gives the last messages time to go.
	finish := func() {
		stopEngine()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			cfg.Log.Warn("the engine core did not stop within 10s")
		}
		if connected {
			// TODO(vllm-engine): a hack. zmq.Conn closes with linger 0 and
			// cannot say when a message has left; vLLM's output sockets
			// linger 4 s. Wait a fixed time instead.
			time.Sleep(cfg.Linger)
		}
	}
	died := func(reason string) error {
		s.deliver(g.Die(reason))
		finish()
		reason, _ = g.Dead()
		return fmt.Errorf("%w: %s", ErrEngineDied, reason)
	}
	for {
		select {
		case <-ctx.Done():
			sends := g.Shutdown()
			s.deliver(sends)
			cfg.Log.Info("shutting down", "aborted", len(sends))
			finish()
			return nil
		case err := <-served:
			s.drainEngine(g)
			if err == nil {
				err = errors.New("the engine core stopped")
			}
			served <- err // for finish
			return died(err.Error())
		case f := <-s.pipe.fromEngine:
			sends, err := g.Engine(f)
			if err != nil {
				finish()
				return err
			}
			s.deliver(sends)
			if reason, dead := g.Dead(); dead {
				finish()
				return fmt.Errorf("%w: %s", ErrEngineDied, reason)
			}
		case f := <-hs.Recv():
			err := s.connect(g, f)
			connected = len(s.outputs) > 0
			if err != nil {
				finish()
				return err
			}
			deadline.Stop()
			cfg.Log.Info("serving the vLLM frontend", "inputs", g.Addresses().Inputs, "outputs", g.Addresses().Outputs)
		case m := <-s.in:
			s.deliver(g.Input(m.i, m.frames))
		case now := <-tick.C:
			s.deliver(g.Tick(now))
		case <-deadline.C:
			if !g.Serving() {
				finish()
				return fmt.Errorf("vllmfrontend: no answer to HELLO from the vLLM frontend at %s within %s", cfg.HandshakeAddress, cfg.HandshakeTimeout)
			}
		}
	}
}

// connect takes the frontend's answer to HELLO, connects the input and
// output sockets it names and sends what the Gate says then.
func (s *shell) connect(g *Gate, frames [][]byte) error {
	if g.Serving() {
		return nil // a second answer: vLLM's engine reads one
	}
	if err := g.Metadata(frames); err != nil {
		return err
	}
	a := g.Addresses()
	id := zmq.WithIdentity(Identity(g.cfg.Rank))
	for i, ep := range a.Inputs {
		c, err := zmq.DialDealer(ep, id, zmq.WithLogger(s.log))
		if err != nil {
			return fmt.Errorf("vllmfrontend: connect to input socket %s: %w", ep, err)
		}
		s.inputs = append(s.inputs, c)
		s.wg.Add(1)
		go s.fanIn(i, c)
	}
	for _, ep := range a.Outputs {
		c, err := zmq.DialPush(ep, zmq.WithLogger(s.log))
		if err != nil {
			return fmt.Errorf("vllmfrontend: connect to output socket %s: %w", ep, err)
		}
		s.outputs = append(s.outputs, c)
	}
	sends, err := g.Connected()
	if err != nil {
		return err
	}
	s.deliver(sends)
	return nil
}

func (s *shell) fanIn(i int, c *zmq.Conn) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case f, ok := <-c.Recv():
			if !ok {
				return
			}
			select {
			case s.in <- indexed{i, f}:
			case <-s.stop:
				return
			}
		}
	}
}

// drainEngine hands the Gate what the engine core sent before it stopped
// (its ENGINE_DEAD).
func (s *shell) drainEngine(g *Gate) {
	for {
		select {
		case f := <-s.pipe.fromEngine:
			sends, _ := g.Engine(f)
			s.deliver(sends)
		default:
			return
		}
	}
}

func (s *shell) deliver(sends []Send) {
	for _, m := range sends {
		var err error
		switch m.Sock {
		case SockEngine:
			s.pipe.send(m.Frames)
		case SockHandshake:
			err = s.handshake.Send(m.Frames)
		case SockInput:
			err = s.inputs[m.Index].Send(m.Frames)
		case SockOutput:
			err = s.outputs[m.Index].Send(m.Frames)
		}
		if err != nil {
			s.log.Warn("send", "sock", m.Sock, "err", err)
		}
	}
}

func (s *shell) close() {
	close(s.stop)
	s.pipe.close()
	for _, c := range append(append([]*zmq.Conn{s.handshake}, s.inputs...), s.outputs...) {
		_ = c.Close()
	}
	s.wg.Wait()
}
