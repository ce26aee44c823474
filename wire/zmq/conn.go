package zmq

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Sentinel errors. Check them with errors.Is; the returned errors wrap them with detail.
var (
	// ErrClosed is returned by Send after Close, or after the socket goroutine stopped on a
	// fatal error (Close then returns that error).
	ErrClosed = errors.New("zmq: connection closed")
	// ErrCannotSend is returned by Send on a socket type that only receives (SUB).
	ErrCannotSend = errors.New("zmq: socket type cannot send")
	// ErrBadMessage is returned by Send for a message with no frames, or a ROUTER message
	// without an identity frame and at least one body frame.
	ErrBadMessage = errors.New("zmq: malformed message")
	// ErrAddrInUse is returned by BindRouter and BindPub when an ipc:// endpoint's socket
	// file belongs to a live listener (a stale file is removed instead).
	ErrAddrInUse = errors.New("zmq: ipc endpoint in use")
	// ErrNoCgo is returned by every constructor in a build without cgo: libzmq needs it.
	ErrNoCgo = errors.New("zmq: built without cgo, libzmq unavailable")
)

// kind is the ZMQ socket type behind a Conn.
type kind int

const (
	kindRouter kind = iota + 1
	kindDealer
	kindPub
	kindSub
	kindPush // connects, sends only (vLLM's engine output socket)
	kindPull // binds, receives only (vLLM's frontend output socket)
)

func (k kind) String() string {
	switch k {
	case kindRouter:
		return "ROUTER"
	case kindDealer:
		return "DEALER"
	case kindPub:
		return "PUB"
	case kindSub:
		return "SUB"
	case kindPush:
		return "PUSH"
	case kindPull:
		return "PULL"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

func (k kind) canSend() bool { return k != kindSub && k != kindPull }
func (k kind) canRecv() bool { return k != kindPub && k != kindPush }

// Conn owns one ZMQ socket, driven by one goroutine. Incoming multipart messages arrive on
// Recv(); Send queues a message for the socket goroutine. All methods are safe for
// concurrent use by many goroutines. See the package documentation for the goroutine
// layout.
type Conn struct {
	kind     kind
	endpoint string // bound endpoint as resolved by ZMQ_LAST_ENDPOINT, or the dialled one
	identity string // DEALER routing identity; empty for other kinds
	log      *slog.Logger

	// maxUndelivered is how many received messages may wait in inq and the helper's
	// local queue before the socket goroutine stops reading; reading resumes at half.
	maxUndelivered int64 // messages

	// recv carries incoming messages to the user; the helper goroutine is its only
	// sender and closes it when the Conn shuts down.
	recv chan [][]byte

	// sendReady (cap 1) is signalled by Send after appending to outq; the helper turns
	// it into a wake-up byte on the inproc socket.
	sendReady chan struct{}
	// recvReady (cap 1) is signalled by the socket goroutine after appending to inq.
	recvReady chan struct{}
	// quit is closed by the first Close.
	quit      chan struct{}
	closeOnce sync.Once
	// done is closed when every goroutine of this Conn has exited and its sockets are
	// closed.
	done chan struct{}

	// numUndelivered counts messages read from the socket but not yet put on recv.
	numUndelivered atomic.Int64 // messages
	// readPaused is set by the socket goroutine when numUndelivered reached
	// maxUndelivered; whoever clears it first makes sure the socket goroutine wakes.
	readPaused atomic.Bool
	numDropped atomic.Uint64 // messages
	// numRefused counts failed CURVE handshakes (see Refused).
	numRefused atomic.Uint64 // handshakes
	// curve is the socket's CURVE setup, read-only after construction; nil = none.
	curve *curveConfig
	// refusals rate-limits the warnings about refused peers.
	refusals refusalLog
	// numBlocked counts sends refused with EAGAIN (a peer at its high-water mark) and
	// kept for a retry.
	numBlocked atomic.Uint64 // refusals

	mu sync.Mutex // guards the fields below
	// closed is set by Close or when the socket goroutine stops; Send then fails.
	closed bool
	// outq holds messages queued by Send, oldest first, not yet taken by the socket
	// goroutine. Each message is [frames][bytes].
	outq [][][]byte
	// inq holds received messages, oldest first, not yet taken by the helper.
	inq [][][]byte
	// err is why the socket goroutine stopped, when it stopped on its own.
	err error
}

// newConn builds the channel and queue plumbing shared by every socket kind.
func newConn(k kind, cfg config) *Conn {
	return &Conn{
		kind:           k,
		log:            cfg.log.With("socket", k.String()),
		curve:          cfg.curve,
		maxUndelivered: int64(cfg.recvBuffer),
		recv:           make(chan [][]byte, cfg.recvBuffer),
		sendReady:      make(chan struct{}, 1),
		recvReady:      make(chan struct{}, 1),
		quit:           make(chan struct{}),
		done:           make(chan struct{}),
	}
}

// Recv returns the channel of incoming messages. For a ROUTER, frame 0 of every message
// is the sending peer's identity. The channel is closed when the Conn is closed or its
// socket goroutine stops; a PUB Conn's channel never carries a message. The receiver owns
// the frames.
func (c *Conn) Recv() <-chan [][]byte { return c.recv }

// Send queues one multipart message for the socket goroutine and returns at once: it
// never waits for the peer, the network or the Recv consumer. For a ROUTER, frame 0 must
// be the destination identity (as received in frame 0 of its messages) followed by at
// least one body frame. Send takes ownership of frames: the caller must not modify them
// afterwards. A message the socket cannot route (a ROUTER identity that is gone) is
// dropped later and counted by Dropped.
func (c *Conn) Send(frames [][]byte) error {
	if !c.kind.canSend() {
		return fmt.Errorf("%w: %v", ErrCannotSend, c.kind)
	}
	if len(frames) == 0 {
		return fmt.Errorf("%w: no frames", ErrBadMessage)
	}
	if c.kind == kindRouter && (len(frames) < 2 || len(frames[0]) == 0) {
		return fmt.Errorf("%w: ROUTER needs an identity frame and a body, got %d frames",
			ErrBadMessage, len(frames))
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.outq = append(c.outq, frames)
	c.mu.Unlock()
	select {
	case c.sendReady <- struct{}{}:
	default: // a wake-up is already pending; it covers this message too
	}
	return nil
}

// Endpoint returns the endpoint this Conn is bound or connected to. For a bind to
// tcp://host:0 it carries the port the kernel chose (ZMQ_LAST_ENDPOINT).
func (c *Conn) Endpoint() string { return c.endpoint }

// Identity returns a DEALER's routing identity, which a ROUTER peer sees as frame 0 of
// this Conn's messages. It is empty for other socket kinds.
func (c *Conn) Identity() string { return c.identity }

// Dropped returns how many outgoing messages were discarded because the socket refused
// them: a ROUTER destination identity that is not (or no longer) connected, or another
// send error. Messages still queued when Close is called are not counted.
func (c *Conn) Dropped() uint64 { return c.numDropped.Load() }

// Refused returns how many CURVE handshakes failed on this socket. For a CURVE server,
// the peers it refused: clients whose public key is not allowed, peers that do not speak
// CURVE or do not know the server's public key. For a CURVE client, the attempts the
// server refused. It is always 0 for sockets without CURVE.
func (c *Conn) Refused() uint64 { return c.numRefused.Load() }

// Close stops the Conn's goroutines and closes its socket with linger 0, discarding
// queued and undelivered messages; it never waits for a peer. It is idempotent and safe
// to call concurrently; every call waits until shutdown is complete and returns the error
// that stopped the socket goroutine, if it stopped on its own.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.outq = nil
		c.mu.Unlock()
		close(c.quit)
	})
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail records why the socket goroutine stopped and refuses further sends.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.closed = true
	c.outq = nil
}

// takeOut moves the messages queued by Send to the end of dst and returns it. It hands
// the queue's backing array over when dst is empty, so the steady state allocates nothing.
func (c *Conn) takeOut(dst [][][]byte) [][][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(dst) == 0 {
		dst, c.outq = c.outq, dst[:0]
		return dst
	}
	dst = append(dst, c.outq...)
	clear(c.outq)
	c.outq = c.outq[:0]
	return dst
}

// putIn appends received messages to inq, updates the undelivered count, pauses reading
// when too many are waiting, and signals the helper.
func (c *Conn) putIn(msgs [][][]byte) {
	c.mu.Lock()
	c.inq = append(c.inq, msgs...)
	c.mu.Unlock()
	if c.numUndelivered.Add(int64(len(msgs))) >= c.maxUndelivered {
		c.readPaused.Store(true)
		// The helper only resumes reading when it drains to the low-water mark after
		// seeing the flag; if it got there before the flag was set, resume here.
		if c.numUndelivered.Load() <= c.maxUndelivered/2 {
			c.readPaused.CompareAndSwap(true, false)
		}
	}
	select {
	case c.recvReady <- struct{}{}:
	default:
	}
}

// takeIn swaps the helper's drained queue with inq and returns the new messages.
func (c *Conn) takeIn(drained [][][]byte) [][][]byte {
	clear(drained)
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.inq
	c.inq = drained[:0]
	return got
}

// delivered records that one message reached recv. It reports whether reading was
// paused and must be resumed by waking the socket goroutine.
func (c *Conn) delivered() (resume bool) {
	return c.numUndelivered.Add(-1) <= c.maxUndelivered/2 && c.readPaused.CompareAndSwap(true, false)
}

// readable reports whether the socket goroutine may read more messages.
func (c *Conn) readable() bool { return c.kind.canRecv() && !c.readPaused.Load() }

// readBudget is how many messages the socket goroutine may read before pausing.
func (c *Conn) readBudget() int {
	return int(max(0, c.maxUndelivered-c.numUndelivered.Load()))
}
