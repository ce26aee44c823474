package vllmengines

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// Config configures a Bridge.
type Config struct {
	// HandshakeAddress is the ROUTER vLLM engines connect to, as
	// `vllm serve --headless --data-parallel-address A
	// --data-parallel-rpc-port P` names it: tcp://A:P (bound; use
	// tcp://0.0.0.0:P to accept engines from other hosts).
	HandshakeAddress string
	// Host is the address engines reach this process at, for the input and
	// output sockets bound per rank on free ports (default 127.0.0.1).
	Host            string
	Engines         int    // --data-parallel-size: the ranks to wait for
	Dir             string // where the ranks' ipc:// endpoints go (default a new temporary directory)
	Model           string // the tokenizer's path, reported to the frontend as the model
	ServedModelName string
	VocabSize       int
	EOSTokenIDs     []int32
	MaxLogprobs     int
	Logger          *slog.Logger
}

// Bridge is the goroutine shell around a Gate: it owns the sockets and
// feeds the Gate one message at a time.
type Bridge struct {
	gate      *Gate
	mu        sync.Mutex // serializes the Gate
	handshake *zmq.Conn
	inputs    []*zmq.Conn
	outputs   []*zmq.Conn
	fronts    []*zmq.Conn
	endpoints []string
	dir       string
	ownDir    bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

// Start binds every socket and starts serving; the ranks become ready as
// their engines complete the handshake.
func Start(cfg Config) (*Bridge, error) {
	if cfg.Engines <= 0 {
		return nil, fmt.Errorf("vllmengines: %d engines", cfg.Engines)
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{dir: cfg.Dir, stop: make(chan struct{})}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "tandem-vllm-")
		if err != nil {
			return nil, fmt.Errorf("vllmengines: %w", err)
		}
		b.dir, b.ownDir = d, true
	}
	fail := func(err error) (*Bridge, error) {
		b.Close()
		return nil, err
	}
	var err error
	if b.handshake, err = zmq.BindRouter(cfg.HandshakeAddress); err != nil {
		return fail(fmt.Errorf("vllmengines: bind the handshake socket %s: %w", cfg.HandshakeAddress, err))
	}
	gc := GateConfig{Engines: cfg.Engines, Model: cfg.Model, ServedModelName: cfg.ServedModelName, VocabSize: cfg.VocabSize,
		EOSTokenIDs: cfg.EOSTokenIDs, MaxLogprobs: cfg.MaxLogprobs, Log: log, Nonce: nonce()}
	tcp := "tcp://" + net.JoinHostPort(cfg.Host, "0")
	for r := range cfg.Engines {
		in, err := zmq.BindRouter(tcp)
		if err != nil {
			return fail(fmt.Errorf("vllmengines: bind rank %d's input socket: %w", r, err))
		}
		b.inputs = append(b.inputs, in)
		out, err := zmq.BindPull(tcp)
		if err != nil {
			return fail(fmt.Errorf("vllmengines: bind rank %d's output socket: %w", r, err))
		}
		b.outputs = append(b.outputs, out)
		ep := "ipc://" + filepath.Join(b.dir, fmt.Sprintf("vllm-rank-%d", r))
		front, err := zmq.BindRouter(ep)
		if err != nil {
			return fail(fmt.Errorf("vllmengines: bind rank %d's endpoint %s: %w", r, ep, err))
		}
		b.fronts = append(b.fronts, front)
		b.endpoints = append(b.endpoints, ep)
		gc.Inputs = append(gc.Inputs, in.Endpoint())
		gc.Outputs = append(gc.Outputs, out.Endpoint())
	}
	b.gate = NewGate(gc)
	b.serve(-1, b.handshake, func(_ time.Time, _ int, m [][]byte) []Send { return b.gate.Handshake(m) })
	for r := range cfg.Engines {
		b.serve(r, b.inputs[r], func(_ time.Time, r int, m [][]byte) []Send { return b.gate.Input(r, m) })
		b.serve(r, b.outputs[r], func(_ time.Time, r int, m [][]byte) []Send { return b.gate.Output(r, m) })
		b.serve(r, b.fronts[r], b.gate.Frontend)
	}
	log.Info("waiting for vLLM engine cores", "handshake", cfg.HandshakeAddress, "engines", cfg.Engines)
	return b, nil
}

func nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// serve feeds one socket's messages to handle and sends what it returns.
func (b *Bridge) serve(r int, c *zmq.Conn, handle func(time.Time, int, [][]byte) []Send) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case m, ok := <-c.Recv():
				if !ok {
					return
				}
				b.mu.Lock()
				sends := handle(time.Now(), r, m)
				b.mu.Unlock()
				b.send(sends)
			}
		}
	}()
}

func (b *Bridge) send(sends []Send) {
	for _, s := range sends {
		var c *zmq.Conn
		switch s.Sock {
		case SockHandshake:
			c = b.handshake
		case SockInput:
			c = b.inputs[s.Rank]
		case SockFrontend:
			c = b.fronts[s.Rank]
		}
		_ = c.Send(s.Frames) // ROUTER_MANDATORY drops a message to a peer gone
	}
}

// Endpoints are the ranks' Tandem endpoints, for engineclient.Config.Endpoints.
func (b *Bridge) Endpoints() []string { return b.endpoints }

// EndpointList is Endpoints joined by commas, as --engines takes them.
func (b *Bridge) EndpointList() string { return strings.Join(b.endpoints, ",") }

// Close stops serving and closes every socket.
func (b *Bridge) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	var errs []error
	for _, c := range append(append(append([]*zmq.Conn{b.handshake}, b.inputs...), b.outputs...), b.fronts...) {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	b.wg.Wait()
	if b.ownDir {
		_ = os.RemoveAll(b.dir)
	}
	return errors.Join(errs...)
}
