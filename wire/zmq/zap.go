//go:build cgo

package zmq

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	zmq4 "github.com/pebbe/zmq4"
)

// The ZAP handler (ZeroMQ RFC 27) decides, for every handshake on a CURVE server socket,
// whether the client's public key is authorised. libzmq sends each request to whatever
// socket is bound to zapEndpoint in the server socket's context, so there is one handler
// per context: ours, in sharedContext, runs while at least one CURVE server socket is
// open (the first one starts it, the last one's Close stops it, so tests can check for
// leaked goroutines). A server socket registers its ZAP domain, with its allowed keys,
// before it binds and unregisters it after it closed, so no handshake of it can happen
// while the handler is down: libzmq 4.3 would then accept any client that knows the
// server's public key.
//
// pebbe/zmq4's AuthStart is not used: it binds in pebbe's default context (ours is a
// separate one), keeps its policy in package globals, and panics on malformed requests.

const (
	// zapEndpoint is where libzmq looks for the ZAP handler (RFC 27).
	zapEndpoint = "inproc://zeromq.zap.01"
	// zapQuit is the one-frame message that stops the handler; only this package can
	// reach an inproc endpoint of sharedContext.
	zapQuit = "tandem-wire-zmq-zap-quit"
	// refusalLogInterval is the least time between two warnings about refused peers of
	// one socket; a refused client reconnects every 100 ms, forever.
	refusalLogInterval = time.Second
	// handshakeFailed is the monitor events that mean a peer was refused.
	handshakeFailed = zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL |
		zmq4.EVENT_HANDSHAKE_FAILED_AUTH
)

// zap is the process's ZAP handler registry.
var zap zapAuth

// domainSeq numbers the ZAP domains of CURVE server sockets.
var domainSeq atomic.Uint64

// zapAuth runs the ZAP handler goroutine and holds the registered domains.
type zapAuth struct {
	// lifeMu guards starting and stopping the handler; it is held while waiting for the
	// handler to quit, so the handler itself must never take it.
	lifeMu        sync.Mutex
	numRegistered int           // domains registered; the handler runs while > 0
	done          chan struct{} // closed when the handler goroutine exits

	mu      sync.RWMutex // guards domains
	domains map[string]*Conn
}

// register starts the handler if it is not running and adds domain for c.
func (z *zapAuth) register(ctx *zmq4.Context, domain string, c *Conn) error {
	z.lifeMu.Lock()
	defer z.lifeMu.Unlock()
	if z.numRegistered == 0 {
		if err := z.start(ctx); err != nil {
			return err
		}
	}
	z.numRegistered++
	z.mu.Lock()
	if z.domains == nil {
		z.domains = map[string]*Conn{}
	}
	z.domains[domain] = c
	z.mu.Unlock()
	return nil
}

// unregister removes domain and stops the handler when it was the last one.
func (z *zapAuth) unregister(ctx *zmq4.Context, domain string) {
	z.lifeMu.Lock()
	defer z.lifeMu.Unlock()
	z.mu.Lock()
	delete(z.domains, domain)
	z.mu.Unlock()
	z.numRegistered--
	if z.numRegistered == 0 {
		z.stop(ctx)
	}
}

// start binds the handler's REP socket (in the handler goroutine, which owns it) and
// returns once it is bound.
func (z *zapAuth) start(ctx *zmq4.Context) error {
	ready := make(chan error, 1)
	z.done = make(chan struct{})
	go z.run(ctx, ready)
	if err := <-ready; err != nil {
		<-z.done
		return fmt.Errorf("zmq: start ZAP handler: %w", err)
	}
	return nil
}

// stop sends the quit message through a REQ socket of its own and waits for the
// handler goroutine to exit.
func (z *zapAuth) stop(ctx *zmq4.Context) {
	req, err := newSocket(ctx, zmq4.REQ, 0)
	if err == nil {
		err = req.Connect(zapEndpoint)
	}
	if err == nil {
		_, err = req.Send(zapQuit, 0)
	}
	if err == nil {
		_, err = req.Recv(0)
	}
	if req != nil {
		_ = req.Close()
	}
	if err != nil {
		// Without the quit message the handler would run forever: a broken invariant.
		panic(fmt.Sprintf("zmq: stop ZAP handler: %v", err))
	}
	<-z.done
}

// run is the handler goroutine: the only goroutine that touches the REP socket.
func (z *zapAuth) run(ctx *zmq4.Context, ready chan<- error) {
	defer close(z.done)
	rep, err := newSocket(ctx, zmq4.REP, 0)
	if err == nil {
		err = rep.Bind(zapEndpoint)
	}
	if err != nil {
		if rep != nil {
			_ = rep.Close()
		}
		ready <- err
		return
	}
	ready <- nil
	defer func() {
		// An inproc endpoint is released only when libzmq reaps the socket, some time
		// after Close; unbinding first frees it at once for the next start.
		_ = rep.Unbind(zapEndpoint)
		_ = rep.Close()
	}()
	for {
		req, err := rep.RecvMessageBytes(0)
		if err != nil {
			if isTerm(err) {
				return
			}
			slog.Error("zmq: ZAP handler: recv", "err", err)
			continue
		}
		if len(req) == 1 && string(req[0]) == zapQuit {
			_, _ = rep.Send(zapQuit, 0)
			return
		}
		if _, err := rep.SendMessage(z.answer(req)...); err != nil {
			slog.Error("zmq: ZAP handler: send reply", "err", err)
		}
	}
}

// zapRequest is a parsed ZAP request (RFC 27).
type zapRequest struct {
	version, requestID, domain, address, identity, mechanism string
	credentials                                              [][]byte
}

// answer decides one ZAP request and returns the reply frames: version, request id,
// status code, status text, user id, metadata.
func (z *zapAuth) answer(frames [][]byte) []any {
	if len(frames) < 6 || string(frames[0]) != "1.0" {
		// Not a request we can answer within the protocol; libzmq never sends one.
		return []any{"1.0", "", "500", "malformed ZAP request", "", ""}
	}
	r := zapRequest{
		version: string(frames[0]), requestID: string(frames[1]), domain: string(frames[2]),
		address: string(frames[3]), identity: string(frames[4]), mechanism: string(frames[5]),
		credentials: frames[6:],
	}
	reply := func(code, text, user string) []any {
		return []any{r.version, r.requestID, code, text, user, ""}
	}
	z.mu.RLock()
	c := z.domains[r.domain]
	z.mu.RUnlock()
	if c == nil {
		// A socket without a registered domain does not use CURVE: classic ZeroMQ lets
		// NULL through, as libzmq does when no handler is bound.
		if r.mechanism == "NULL" {
			return reply("200", "OK", "")
		}
		return reply("400", "unknown ZAP domain", "")
	}
	if r.mechanism != "CURVE" || len(r.credentials) != 1 || len(r.credentials[0]) != curveKeyLen {
		c.refused("zmq: refused peer: not a CURVE handshake", "address", r.address, "mechanism", r.mechanism)
		return reply("400", "CURVE required", "")
	}
	key := r.credentials[0]
	if !c.curve.allowed[string(key)] {
		c.refused("zmq: refused unauthorised CURVE client", "address", r.address, "client_key", z85Encode(key))
		return reply("400", "client key not authorised", "")
	}
	return reply("200", "OK", z85Encode(key))
}

// refused logs a refused peer at warn level, at most once per refusalLogInterval; the
// warning says how many refusals were not logged since the previous one.
func (c *Conn) refused(msg string, args ...any) {
	c.refusals.mu.Lock()
	now := time.Now()
	if now.Sub(c.refusals.last) < refusalLogInterval {
		c.refusals.numSuppressed++
		c.refusals.mu.Unlock()
		return
	}
	n, log := c.refusals.numSuppressed, c.refusals.log
	c.refusals.last, c.refusals.numSuppressed = now, 0
	c.refusals.mu.Unlock()
	if n > 0 {
		args = append(args, "not_logged_since_last", n)
	}
	log.Warn(msg, args...)
}

// monitor is a CURVE server socket's event monitor: a PAIR socket that receives the
// main socket's handshake failures, owned by the socket goroutine.
type monitor struct {
	sock *zmq4.Socket
}

// startMonitor asks libzmq to report sock's failed handshakes on a fresh inproc
// endpoint and connects the reading end.
func startMonitor(ctx *zmq4.Context, sock *zmq4.Socket) (*monitor, error) {
	addr := fmt.Sprintf("inproc://tandem-wire-zmq-monitor-%d", wakeSeq.Add(1))
	if err := sock.Monitor(addr, handshakeFailed); err != nil {
		return nil, fmt.Errorf("zmq: monitor: %w", err)
	}
	r, err := newSocket(ctx, zmq4.PAIR, 0)
	if err == nil {
		err = r.Connect(addr)
	}
	if err != nil {
		if r != nil {
			_ = r.Close()
		}
		return nil, fmt.Errorf("zmq: monitor: %w", err)
	}
	return &monitor{sock: r}, nil
}

// drain reads every waiting event and counts the failed handshakes. A server logs
// those the ZAP handler did not see (a peer without CURVE or with the wrong server key);
// a client logs every one, since only the server knows the details.
func (m *monitor) drain(c *Conn) error {
	for {
		ev, _, value, err := m.sock.RecvEvent(zmq4.DONTWAIT)
		if isAgain(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("zmq: monitor: %w", err)
		}
		if ev&handshakeFailed == 0 {
			continue
		}
		c.numRefused.Add(1)
		switch {
		case !c.curve.server:
			c.refused("zmq: CURVE handshake with the server failed: wrong server public key, or this client's key is not authorised there",
				"reason", handshakeError(ev, value))
		case ev == zmq4.EVENT_HANDSHAKE_FAILED_NO_DETAIL:
			// The connection closed before a greeting: a TCP health check (a
			// Kubernetes tcpSocket probe connects and closes every few seconds)
			// or a port scan, not a ZeroMQ peer. Counted, logged at debug only.
			c.refusals.mu.Lock()
			log := c.refusals.log
			c.refusals.mu.Unlock()
			log.Debug("zmq: connection closed during the handshake (a TCP probe?)", "reason", handshakeError(ev, value))
		case ev != zmq4.EVENT_HANDSHAKE_FAILED_AUTH: // the ZAP handler logged those
			c.refused("zmq: refused peer: CURVE handshake failed", "reason", handshakeError(ev, value))
		}
	}
}

// handshakeError describes a failed handshake: the ZMQ_PROTOCOL_ERROR_* value of a
// protocol failure, the ZAP status code of an authentication failure, or the errno of
// a connection lost during the handshake.
func handshakeError(ev zmq4.Event, value int) string {
	switch {
	case ev == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL && value == 0x11000001: // ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
		return "cryptographic error: the peer does not know this server's public key"
	case ev == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL && value == 0x11000002: // ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
		return "mechanism mismatch: the peer does not use CURVE"
	case ev == zmq4.EVENT_HANDSHAKE_FAILED_PROTOCOL:
		return fmt.Sprintf("protocol error %#x", value)
	case ev == zmq4.EVENT_HANDSHAKE_FAILED_AUTH:
		return fmt.Sprintf("refused by the server's authenticator (ZAP status %d)", value)
	}
	return fmt.Sprintf("connection lost during the handshake (%v): the peer may not use CURVE", syscall.Errno(value))
}

func (m *monitor) close() error {
	if m == nil {
		return nil
	}
	return m.sock.Close()
}

// HasCurve reports whether the linked libzmq supports CURVE (built with libsodium or
// its bundled TweetNaCl).
func HasCurve() bool { return zmq4.HasCurve() }

// errNoCurve is returned when CURVE options meet a libzmq without CURVE.
var errNoCurve = errors.New("zmq: libzmq was built without CURVE support")

// NewCurveKeypair returns a fresh CURVE keypair as Z85 text.
func NewCurveKeypair() (publicKey, secretKey string, err error) {
	if !HasCurve() {
		return "", "", errNoCurve
	}
	return zmq4.NewCurveKeypair()
}

// CurvePublic derives the Z85 public key of a Z85 secret key.
func CurvePublic(secretKey string) (string, error) {
	if err := CheckKey(secretKey); err != nil {
		return "", err
	}
	if !HasCurve() {
		return "", errNoCurve
	}
	return zmq4.AuthCurvePublic(secretKey)
}
