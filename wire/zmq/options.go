package zmq

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"
)

// DefaultRecvBuffer is the capacity of a Conn's Recv channel unless WithRecvBuffer says
// otherwise.
const DefaultRecvBuffer = 1024 // messages

// ZMTP-level heartbeats of ROUTER sockets (libzmq PING/PONG), under the
// application's own: they only detect dead connections.
const (
	routerHeartbeat        = 2 * time.Second
	routerHeartbeatTimeout = 10 * time.Second
	routerMaxMessage       = 32 << 20 // bytes per message part
)

// Option configures a Conn at construction.
type Option func(*config)

type config struct {
	identity   string       // DEALER routing identity; empty picks a random one
	hwm        int          // ZMQ_SNDHWM and ZMQ_RCVHWM in messages; 0 = unbounded
	log        *slog.Logger // never nil after newConfig
	recvBuffer int          // Recv channel capacity, messages; also the read-pause threshold
	curve      *curveConfig // CURVE security; nil = none (NULL mechanism)
	curveErr   error        // a bad key given to WithCurveServer
}

// WithIdentity sets a DEALER's routing identity, the frame a ROUTER peer sees first in
// every message from it. It must be 1..255 bytes. libzmq 4 accepts any such bytes; a
// leading zero byte only marks the identities a ROUTER makes up for peers that set none,
// and vLLM's engines use it (rank 0 is "\x00\x00"). By default a DEALER gets a random
// 16-character hex identity. Other socket kinds ignore it.
func WithIdentity(id string) Option { return func(c *config) { c.identity = id } }

// WithHWM sets the send and receive high-water marks (ZMQ_SNDHWM, ZMQ_RCVHWM) in
// messages. The default, 0, means unbounded, as in vLLM: a slow peer costs memory rather
// than blocked or dropped messages.
func WithHWM(numMessages int) Option { return func(c *config) { c.hwm = numMessages } }

// WithLogger sets the logger for socket errors and dropped messages (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithRecvBuffer sets the capacity of the Recv channel (default DefaultRecvBuffer). The
// Conn also holds up to as many received messages again in its own queue before it stops
// reading from the socket, leaving further messages to libzmq's queues (see WithHWM).
func WithRecvBuffer(numMessages int) Option {
	return func(c *config) { c.recvBuffer = numMessages }
}

func newConfig(k kind, opts []Option) (config, error) {
	cfg := config{recvBuffer: DefaultRecvBuffer}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	if cfg.hwm < 0 {
		return cfg, fmt.Errorf("zmq: WithHWM(%d): must be >= 0", cfg.hwm)
	}
	if cfg.recvBuffer < 1 {
		return cfg, fmt.Errorf("zmq: WithRecvBuffer(%d): must be >= 1", cfg.recvBuffer)
	}
	if cfg.curveErr != nil {
		return cfg, fmt.Errorf("zmq: %w", cfg.curveErr)
	}
	if cfg.curve != nil {
		if err := cfg.curve.validate(k); err != nil {
			return cfg, err
		}
	}
	if k != kindDealer {
		cfg.identity = ""
		return cfg, nil
	}
	switch {
	case cfg.identity == "":
		cfg.identity = randomIdentity()
	case len(cfg.identity) > 255:
		return cfg, fmt.Errorf("zmq: WithIdentity(%q): want 1..255 bytes", cfg.identity)
	}
	return cfg, nil
}

// randomIdentity returns 8 random bytes in hex: printable in logs, never starting with
// the zero byte libzmq reserves.
func randomIdentity() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
