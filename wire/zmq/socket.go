//go:build cgo

package zmq

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	zmq4 "github.com/pebbe/zmq4"
)

const (
	// pollInterval bounds one poll when nothing happens. It is only a safety net for
	// noticing Close: every event that matters (a Send, Close, resumed reading) wakes
	// the poll through the inproc socket, so message latency never depends on it.
	pollInterval = 100 * time.Millisecond
	// retryInterval is how soon a message refused with EAGAIN (a peer at its high-water
	// mark, only possible with WithHWM) is tried again.
	retryInterval = 10 * time.Millisecond
	// maxRecvBatch bounds the messages read per poll, so sends interleave with a flood
	// of incoming messages.
	maxRecvBatch = 256 // messages
)

var (
	// sharedContext is the process-wide libzmq context, created on first use and never
	// terminated: one I/O thread serves every Conn, and inproc wake-up sockets need
	// their peers in the same context.
	sharedContext = sync.OnceValues(zmq4.NewContext)
	// wakeSeq numbers the inproc endpoints of wake-up socket pairs.
	wakeSeq atomic.Uint64
	// wakeByte is the content of a wake-up message; only its arrival matters.
	wakeByte = []byte{1}
	// errPartialSend means libzmq accepted part of a multipart message: the socket's
	// framing can no longer be trusted, so the Conn stops.
	errPartialSend = errors.New("zmq: multipart message partly sent")
)

// Version returns the version of the libzmq linked in, such as "4.3.4".
func Version() string {
	major, minor, patch := zmq4.Version()
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// socketSpec is what the socket goroutine needs to create its sockets.
type socketSpec struct {
	kind     kind
	endpoint string
	topics   []string // SUB only
	cfg      config
	wakeAddr string // inproc endpoint of the wake-up pair, bound by the helper
}

func (s socketSpec) binds() bool {
	return s.kind == kindRouter || s.kind == kindPub || s.kind == kindPull
}

func open(k kind, endpoint string, topics []string, opts []Option) (*Conn, error) {
	cfg, err := newConfig(k, opts)
	if err != nil {
		return nil, err
	}
	if cfg.curve != nil && !HasCurve() {
		return nil, errNoCurve
	}
	ctx, err := sharedContext()
	if err != nil {
		return nil, fmt.Errorf("zmq: new context: %w", err)
	}
	spec := socketSpec{
		kind:     k,
		endpoint: endpoint,
		topics:   topics,
		cfg:      cfg,
		wakeAddr: fmt.Sprintf("inproc://tandem-wire-zmq-wake-%d", wakeSeq.Add(1)),
	}
	if spec.binds() {
		if err := prepareBind(endpoint); err != nil {
			return nil, err
		}
	}
	c := newConn(k, cfg)
	c.identity = cfg.identity
	c.endpoint = endpoint

	ready := make(chan error, 1)
	loopDone := make(chan struct{})
	go c.runHelper(ctx, spec.wakeAddr, ready, loopDone)
	if err := <-ready; err != nil {
		<-c.done
		return nil, err
	}
	go c.runSocket(ctx, spec, ready, loopDone)
	if err := <-ready; err != nil {
		<-c.done
		return nil, err
	}
	return c, nil
}

// runHelper is the helper goroutine. It owns the writing end of the wake-up pair: it
// turns Send's and Close's signals into wake-up messages, and it delivers received
// messages from inq to the Recv channel, blocking on a slow consumer so the socket
// goroutine never has to. It closes Recv and done last.
func (c *Conn) runHelper(ctx *zmq4.Context, wakeAddr string, ready chan<- error, loopDone <-chan struct{}) {
	defer close(c.done)
	defer close(c.recv)
	w, err := newSocket(ctx, zmq4.PAIR, 0)
	if err == nil {
		err = w.Bind(wakeAddr)
	}
	if err != nil {
		if w != nil {
			_ = w.Close()
		}
		ready <- fmt.Errorf("zmq: wake-up socket %s: %w", wakeAddr, err)
		return
	}
	ready <- nil
	c.deliver(w, loopDone)
	// The socket goroutine has closed its end; closing ours now loses nothing.
	if err := w.Close(); err != nil {
		c.log.Warn("zmq: close wake-up socket", "err", err)
	}
}

// deliver runs the helper's loop until the socket goroutine has stopped.
func (c *Conn) deliver(w *zmq4.Socket, loopDone <-chan struct{}) {
	var pending [][][]byte // messages taken from inq, delivered up to next
	next := 0
	for {
		if next == len(pending) {
			pending, next = c.takeIn(pending), 0
		}
		var out chan<- [][]byte // nil, so never ready, while nothing is pending
		var head [][]byte
		if next < len(pending) {
			out, head = c.recv, pending[next]
		}
		select {
		case <-c.sendReady:
			c.wake(w)
		case <-c.recvReady: // loop around and take inq
		case out <- head:
			pending[next] = nil
			next++
			if c.delivered() {
				c.wake(w) // reading was paused on a full queue; resume it
			}
		case <-c.quit:
			c.wake(w)
			<-loopDone
			return
		case <-loopDone:
			return
		}
	}
}

// wake makes the socket goroutine's poll return. The pair's high-water mark is
// unbounded, so EAGAIN only means the socket goroutine has already closed its end while
// shutting down: nobody is left to wake.
func (c *Conn) wake(w *zmq4.Socket) {
	if _, err := w.SendBytes(wakeByte, zmq4.DONTWAIT); err != nil && !isTerm(err) && !isAgain(err) {
		c.log.Warn("zmq: send wake-up", "err", err)
	}
}

// runSocket is the socket goroutine: the only goroutine that touches the main socket,
// the reading end of the wake-up pair and the monitor. It creates them, reports setup on
// ready, runs the poll loop, and closes them with linger 0.
func (c *Conn) runSocket(ctx *zmq4.Context, spec socketSpec, ready chan<- error, loopDone chan<- struct{}) {
	defer close(loopDone)
	s, err := c.setup(ctx, spec)
	if err != nil {
		c.fail(err)
		ready <- err
		return
	}
	file, isIPC := boundIPC(c.endpoint)
	ready <- nil
	err = c.loop(s)
	if cerr := s.close(ctx); cerr != nil {
		c.log.Warn("zmq: close socket", "err", cerr)
	}
	if isIPC && spec.binds() {
		file.release()
	}
	switch {
	case err == nil:
		c.fail(nil)
	case isTerm(err):
		c.log.Info("zmq: context terminated, socket stopped")
		c.fail(nil)
	default:
		c.log.Error("zmq: socket stopped", "err", err)
		c.fail(err)
	}
}

// sockets are what the socket goroutine owns.
type sockets struct {
	main  *zmq4.Socket
	wakeR *zmq4.Socket // reading end of the wake-up pair
	mon   *monitor     // CURVE servers only; nil otherwise
	// zapDomain is the ZAP domain a CURVE server registered; empty otherwise.
	zapDomain string
}

// close stops the monitor, closes the sockets, then unregisters the ZAP domain: no
// handshake of the main socket can outlive the handler. The monitor must stop before
// either socket closes: libzmq sends monitor events with a blocking send from its I/O
// thread, so an event for a reader that is gone (a handshake failing while the main
// socket is torn down) would block every socket of the context.
func (s *sockets) close(ctx *zmq4.Context) error {
	var errs []error
	if s.mon != nil && s.main != nil {
		errs = append(errs, s.main.Monitor("", 0))
	}
	for _, sock := range []*zmq4.Socket{s.main, s.wakeR} {
		if sock != nil {
			errs = append(errs, sock.Close())
		}
	}
	errs = append(errs, s.mon.close())
	if s.zapDomain != "" {
		zap.unregister(ctx, s.zapDomain)
	}
	return errors.Join(errs...)
}

// setup creates, configures and binds or connects the main socket and connects the
// wake-up reader. On success it has set c.endpoint to the resolved endpoint.
func (c *Conn) setup(ctx *zmq4.Context, spec socketSpec) (*sockets, error) {
	s := &sockets{}
	var err error
	s.wakeR, err = newSocket(ctx, zmq4.PAIR, 0)
	if err == nil {
		err = s.wakeR.Connect(spec.wakeAddr)
	}
	if err != nil {
		_ = s.close(ctx)
		return nil, fmt.Errorf("zmq: wake-up socket %s: %w", spec.wakeAddr, err)
	}
	s.main, err = newSocket(ctx, zmqType(spec.kind), spec.cfg.hwm)
	if err == nil {
		err = configure(s.main, spec)
	}
	if err == nil && spec.cfg.curve != nil {
		err = c.secure(ctx, s, spec)
	}
	if err == nil && spec.binds() {
		err = s.main.Bind(spec.endpoint)
		if err == nil {
			c.endpoint, err = s.main.GetLastEndpoint()
		}
		if err == nil && s.zapDomain != "" {
			c.refusals.setLog(c.log.With("endpoint", c.endpoint))
		}
	} else if err == nil {
		err = s.main.Connect(spec.endpoint)
	}
	if err != nil {
		_ = s.close(ctx)
		verb := "connect"
		if spec.binds() {
			verb = "bind"
		}
		return nil, fmt.Errorf("zmq: %s %v %s: %w", verb, spec.kind, spec.endpoint, err)
	}
	return s, nil
}

// secure sets up CURVE on the main socket before it binds or connects: keys, a monitor
// for failed handshakes and, for a server, a ZAP domain of its own registered with the
// handler.
func (c *Conn) secure(ctx *zmq4.Context, s *sockets, spec socketSpec) error {
	cc := spec.cfg.curve
	c.refusals.setLog(c.log.With("endpoint", spec.endpoint))
	var err error
	if !cc.server {
		err = errors.Join(s.main.SetCurveServerkey(cc.serverKey), s.main.SetCurvePublickey(cc.publicKey),
			s.main.SetCurveSecretkey(cc.secretKey))
		if err != nil {
			return fmt.Errorf("CURVE client: %w", err)
		}
		s.mon, err = startMonitor(ctx, s.main)
		return err
	}
	domain := fmt.Sprintf("tandem-%d", domainSeq.Add(1))
	if err := s.main.ServerAuthCurve(domain, cc.secretKey); err != nil {
		return fmt.Errorf("CURVE server: %w", err)
	}
	if s.mon, err = startMonitor(ctx, s.main); err != nil {
		return err
	}
	if err := zap.register(ctx, domain, c); err != nil {
		return err
	}
	s.zapDomain = domain
	return nil
}

func zmqType(k kind) zmq4.Type {
	switch k {
	case kindRouter:
		return zmq4.ROUTER
	case kindDealer:
		return zmq4.DEALER
	case kindPub:
		return zmq4.PUB
	case kindSub:
		return zmq4.SUB
	case kindPush:
		return zmq4.PUSH
	case kindPull:
		return zmq4.PULL
	}
	panic(fmt.Sprintf("zmq: unknown socket kind %d", int(k)))
}

// newSocket creates a socket with linger 0 and both high-water marks set to hwm.
func newSocket(ctx *zmq4.Context, t zmq4.Type, hwm int) (*zmq4.Socket, error) {
	s, err := ctx.NewSocket(t)
	if err != nil {
		return nil, err
	}
	err = errors.Join(s.SetLinger(0), s.SetSndhwm(hwm), s.SetRcvhwm(hwm))
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// configure sets the options that depend on the socket kind.
func configure(s *zmq4.Socket, spec socketSpec) error {
	switch spec.kind {
	case kindRouter:
		// No ZMQ_ROUTER_HANDOVER: a connected peer's identity cannot be taken
		// over. ZMTP heartbeats close a connection whose peer vanished without
		// a FIN, so its identity is free again for the peer's reconnection.
		// ZMQ_MAXMSGSIZE: a peer sending a larger message is disconnected
		// before libzmq buffers it (an ADD of a 1M-token prompt is ~5 MB).
		return errors.Join(s.SetRouterMandatory(1), s.SetHeartbeatIvl(routerHeartbeat), s.SetHeartbeatTimeout(routerHeartbeatTimeout),
			s.SetMaxmsgsize(routerMaxMessage))
	case kindDealer:
		return s.SetIdentity(spec.cfg.identity)
	case kindSub:
		for _, t := range spec.topics {
			if err := s.SetSubscribe(t); err != nil {
				return fmt.Errorf("subscribe %q: %w", t, err)
			}
		}
	}
	return nil
}

// outbox is the socket goroutine's queue of messages taken from Conn.outq; msgs[:next]
// are sent (and nil), msgs[next:] wait, oldest first.
type outbox struct {
	msgs [][][]byte
	next int
}

// loop polls the main socket and the wake-up reader until Close or a fatal error.
func (c *Conn) loop(s *sockets) error {
	sock, wakeR := s.main, s.wakeR
	poller := zmq4.NewPoller()
	mainID := poller.Add(sock, 0)
	wakeID := poller.Add(wakeR, zmq4.POLLIN)
	var monID int // poller index of the monitor, if s.mon is set
	if s.mon != nil {
		monID = poller.Add(s.mon.sock, zmq4.POLLIN)
	}
	var ob outbox
	batch := make([][][]byte, 0, maxRecvBatch) // reused by readBatch
	for {
		blocked, err := c.flush(sock, &ob)
		if err != nil {
			return err
		}
		var events zmq4.State
		if c.readable() {
			events |= zmq4.POLLIN
		}
		timeout := pollInterval
		if blocked {
			timeout = retryInterval
			// A ROUTER reports POLLOUT when any peer can take a message, not the one
			// the head message is for; it retries on the timer alone.
			if c.kind != kindRouter {
				events |= zmq4.POLLOUT
			}
		}
		if _, err := poller.Update(mainID, events); err != nil {
			return err
		}
		polled, err := poller.PollAll(timeout)
		if err != nil {
			return fmt.Errorf("zmq: poll: %w", err)
		}
		select {
		case <-c.quit:
			return nil
		default:
		}
		if s.mon != nil && polled[monID].Events&zmq4.POLLIN != 0 {
			if err := s.mon.drain(c); err != nil {
				return err
			}
		}
		if polled[wakeID].Events&zmq4.POLLIN != 0 {
			// Drain the wake-ups before taking the queue: a Send that lands after
			// takeOut signals a fresh wake-up, so none is lost.
			if err := drainWake(wakeR); err != nil {
				return err
			}
		}
		// Take the queue on every turn, woken or not: after a timeout too, so even a
		// lost wake-up would only delay a message by pollInterval.
		ob.msgs = c.takeOut(ob.msgs)
		if polled[mainID].Events&zmq4.POLLIN != 0 {
			if batch, err = c.readBatch(sock, batch); err != nil {
				return err
			}
		}
	}
}

// flush sends the outbox until it is empty or the socket refuses with EAGAIN (blocked).
// Unroutable messages are dropped and counted.
func (c *Conn) flush(sock *zmq4.Socket, ob *outbox) (blocked bool, err error) {
	for ob.next < len(ob.msgs) {
		msg := ob.msgs[ob.next]
		if err := sendMessage(sock, msg); err != nil {
			switch {
			case isAgain(err):
				c.numBlocked.Add(1)
				return true, nil
			case isTerm(err), errors.Is(err, errPartialSend):
				return false, err
			case isHostUnreachable(err):
				c.numDropped.Add(1)
				c.log.Debug("zmq: dropped message to unknown peer", "identity", fmt.Sprintf("%q", msg[0]))
			default:
				c.numDropped.Add(1)
				c.log.Warn("zmq: dropped message", "frames", len(msg), "err", err)
			}
		}
		ob.msgs[ob.next] = nil
		ob.next++
	}
	ob.msgs, ob.next = ob.msgs[:0], 0
	return false, nil
}

// sendMessage sends one multipart message without blocking. libzmq accepts or refuses
// a message as a whole at its first frame, so an error on a later frame is fatal.
func sendMessage(sock *zmq4.Socket, frames [][]byte) error {
	last := len(frames) - 1
	for i, f := range frames {
		flags := zmq4.DONTWAIT
		if i < last {
			flags |= zmq4.SNDMORE
		}
		if _, err := sock.SendBytes(f, flags); err != nil {
			if i == 0 {
				return err
			}
			return fmt.Errorf("%w: failed at frame %d of %d: %w", errPartialSend, i, len(frames), err)
		}
	}
	return nil
}

// readBatch reads the messages waiting on the socket, up to maxRecvBatch and the read
// budget, and hands them to the helper. batch is scratch space, returned for reuse.
func (c *Conn) readBatch(sock *zmq4.Socket, batch [][][]byte) ([][][]byte, error) {
	n := min(maxRecvBatch, c.readBudget())
	batch = batch[:0]
	for range n {
		msg, err := recvMessage(sock)
		if isAgain(err) {
			break
		}
		if err != nil {
			return batch, fmt.Errorf("zmq: recv: %w", err)
		}
		batch = append(batch, msg)
	}
	if len(batch) > 0 {
		c.putIn(batch)
		clear(batch)
	}
	return batch[:0], nil
}

// recvMessage reads one multipart message without blocking; EAGAIN means none is
// waiting. Once the first frame is there, the rest are too (messages are atomic).
func recvMessage(sock *zmq4.Socket) ([][]byte, error) {
	first, err := sock.RecvBytes(zmq4.DONTWAIT)
	if err != nil {
		return nil, err
	}
	msg := [][]byte{first}
	for {
		more, err := sock.GetRcvmore()
		if err != nil {
			return nil, err
		}
		if !more {
			return msg, nil
		}
		part, err := sock.RecvBytes(0)
		if err != nil {
			return nil, err
		}
		msg = append(msg, part)
	}
}

// drainWake consumes every pending wake-up message.
func drainWake(r *zmq4.Socket) error {
	for {
		_, err := r.RecvBytes(zmq4.DONTWAIT)
		if isAgain(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("zmq: recv wake-up: %w", err)
		}
	}
}

// errno digs the libzmq or system error number out of a possibly wrapped error.
func errno(err error) (zmq4.Errno, bool) {
	if e, ok := errors.AsType[zmq4.Errno](err); ok {
		return e, true
	}
	if e, ok := errors.AsType[syscall.Errno](err); ok {
		return zmq4.Errno(e), true
	}
	return 0, false
}

func isAgain(err error) bool {
	e, ok := errno(err)
	return ok && e == zmq4.Errno(syscall.EAGAIN)
}

func isHostUnreachable(err error) bool {
	e, ok := errno(err)
	return ok && e == zmq4.EHOSTUNREACH
}

// isTerm reports whether err means the libzmq context or the socket is gone.
func isTerm(err error) bool {
	if e, ok := errno(err); ok && e == zmq4.ETERM {
		return true
	}
	return errors.Is(err, zmq4.ErrorContextClosed) || errors.Is(err, zmq4.ErrorSocketClosed)
}
