//go:build cgo

package zmq_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// closeBudget is how long Close may take in any state; it should take microseconds.
const closeBudget = time.Second

func TestCloseIdempotent(t *testing.T) {
	router, err := zmq.BindRouter(ipcEndpoint(t, "router"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := router.Close(); err != nil {
				t.Errorf("concurrent Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := router.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if err := router.Send(toFrames("id", "body")); !errors.Is(err, zmq.ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if _, ok := <-router.Recv(); ok {
		t.Error("Recv channel still open after Close")
	}
	// The endpoint is free again.
	closeWithin(t, bindRouter(t, router.Endpoint()), closeBudget)
}

func TestCloseDoesNotHang(t *testing.T) {
	tests := []struct {
		name string
		// setup returns the Conn to close; it leaves it with work pending.
		setup func(t *testing.T) *zmq.Conn
	}{
		{
			name: "dealer with messages queued for a peer that never came",
			setup: func(t *testing.T) *zmq.Conn {
				dealer, err := zmq.DialDealer(ipcEndpoint(t, "nobody"))
				if err != nil {
					t.Fatal(err)
				}
				for i := range 10_000 {
					send(t, dealer, fmt.Sprint(i), strings.Repeat("x", 100))
				}
				return dealer
			},
		},
		{
			name: "dealer blocked at its high-water mark",
			setup: func(t *testing.T) *zmq.Conn {
				dealer, err := zmq.DialDealer("tcp://127.0.0.1:1", zmq.WithHWM(1))
				if err != nil {
					t.Fatal(err)
				}
				for i := range 100 {
					send(t, dealer, fmt.Sprint(i))
				}
				time.Sleep(20 * time.Millisecond)
				return dealer
			},
		},
		{
			name: "router whose dealer is gone, with replies queued",
			setup: func(t *testing.T) *zmq.Conn {
				router, err := zmq.BindRouter("tcp://127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				dealer, err := zmq.DialDealer(router.Endpoint())
				if err != nil {
					t.Fatal(err)
				}
				send(t, dealer, "hello")
				id := recv(t, router)[0]
				if err := dealer.Close(); err != nil {
					t.Fatal(err)
				}
				for i := range 10_000 {
					send(t, router, id, fmt.Sprint(i))
				}
				return router
			},
		},
		{
			name: "router whose consumer stopped reading",
			setup: func(t *testing.T) *zmq.Conn {
				router, err := zmq.BindRouter(ipcEndpoint(t, "router"), zmq.WithRecvBuffer(4))
				if err != nil {
					t.Fatal(err)
				}
				dealer := dialDealer(t, router.Endpoint())
				for i := range 100 {
					send(t, dealer, fmt.Sprint(i))
				}
				waitFor(t, "a full Recv buffer", func() bool { return len(router.Recv()) == 4 })
				return router
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			closeWithin(t, tt.setup(t), closeBudget)
		})
	}
}

func TestDroppedUnroutable(t *testing.T) {
	router := bindRouter(t, "tcp://127.0.0.1:0")

	send(t, router, "ghost", "boo")
	waitFor(t, "a drop to an unknown identity", func() bool { return router.Dropped() == 1 })

	gone := dialDealer(t, router.Endpoint())
	send(t, gone, "hello")
	goneID := recv(t, router)[0]
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	// The ROUTER learns of the disconnect asynchronously; until then sends still succeed.
	waitFor(t, "a drop to a vanished identity", func() bool {
		if router.Dropped() > 1 {
			return true
		}
		send(t, router, goneID, "anyone?")
		time.Sleep(time.Millisecond)
		return false
	})

	// The ROUTER keeps serving live peers.
	live := dialDealer(t, router.Endpoint())
	send(t, live, "ping")
	send(t, router, recv(t, router)[0], "pong")
	if diff := cmp.Diff([]string{"pong"}, recv(t, live)); diff != "" {
		t.Errorf("live dealer received (-want +got):\n%s", diff)
	}
}

// TestSlowConsumer stalls the ROUTER's Recv consumer while a DEALER floods it, and
// checks that the ROUTER's own sends keep flowing, that its buffering stays bounded, and
// that nothing is lost once the consumer catches up.
func TestSlowConsumer(t *testing.T) {
	const (
		recvBuffer = 8
		numIn      = 2000 // messages the dealer sends to the stalled router
		numOut     = 2000 // messages the router sends meanwhile
		numSenders = 4
	)
	router := bindRouter(t, ipcEndpoint(t, "router"), zmq.WithRecvBuffer(recvBuffer))
	dealer := dialDealer(t, router.Endpoint())
	send(t, dealer, "hello")
	id := recv(t, router)[0]

	for i := range numIn {
		send(t, dealer, fmt.Sprint(i))
	}
	// Reading stops once the Recv channel is full and the internal queue has filled up
	// (it resumes only when that queue halves); the rest stays in libzmq.
	waitFor(t, "the router to pause reading", func() bool {
		return len(router.Recv()) == recvBuffer && router.ReadPaused()
	}, func() string {
		return fmt.Sprintf("len(Recv)=%d undelivered=%d paused=%v",
			len(router.Recv()), router.NumUndelivered(), router.ReadPaused())
	})
	held := router.NumUndelivered()
	time.Sleep(20 * time.Millisecond)
	if n := router.NumUndelivered(); n != held || n > recvBuffer {
		t.Fatalf("router holds %d undelivered messages (%d before), want a stable count <= %d",
			n, held, recvBuffer)
	}

	var wg sync.WaitGroup
	for s := range numSenders {
		wg.Go(func() {
			for i := range numOut / numSenders {
				if err := router.Send(toFrames(id, fmt.Sprint(s), fmt.Sprint(i))); err != nil {
					t.Errorf("router.Send: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	next := make([]int, numSenders)
	for range numOut {
		msg := recv(t, dealer)
		var s, i int
		if _, err := fmt.Sscan(msg[0], &s); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(msg[1], &i); err != nil {
			t.Fatal(err)
		}
		if i != next[s] {
			t.Fatalf("dealer: sender %d: got %d, want %d", s, i, next[s])
		}
		next[s]++
	}

	for i := range numIn {
		if diff := cmp.Diff([]string{id, fmt.Sprint(i)}, recv(t, router)); diff != "" {
			t.Fatalf("router message %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestSendErrors(t *testing.T) {
	endpoint := ipcEndpoint(t, "router")
	router := bindRouter(t, endpoint)
	dealer := dialDealer(t, endpoint)
	pub, err := zmq.BindPub(ipcEndpoint(t, "pub"))
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, pub)
	sub, err := zmq.DialSub(pub.Endpoint(), []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, sub)

	tests := []struct {
		name   string
		conn   *zmq.Conn
		frames [][]byte
		want   error
	}{
		{"SUB cannot send", sub, toFrames("x"), zmq.ErrCannotSend},
		{"no frames", dealer, nil, zmq.ErrBadMessage},
		{"ROUTER without body", router, toFrames("id"), zmq.ErrBadMessage},
		{"ROUTER with empty identity", router, toFrames("", "body"), zmq.ErrBadMessage},
		{"DEALER single frame", dealer, toFrames("body"), nil},
		{"PUB", pub, toFrames("topic", "body"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.conn.Send(tt.frames); !errors.Is(err, tt.want) {
				t.Errorf("Send() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []zmq.Option
	}{
		{"negative HWM", []zmq.Option{zmq.WithHWM(-1)}},
		{"zero Recv buffer", []zmq.Option{zmq.WithRecvBuffer(0)}},
		{"identity too long", []zmq.Option{zmq.WithIdentity(strings.Repeat("x", 256))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := zmq.DialDealer("tcp://127.0.0.1:1", tt.opts...)
			if err == nil {
				_ = c.Close()
				t.Fatal("DialDealer succeeded, want an error")
			}
		})
	}
}

func TestBindIPC(t *testing.T) {
	tests := []struct {
		name string
		// prepare makes whatever lies at path before the bind; the returned func undoes it.
		prepare func(t *testing.T, path string) func()
		wantErr error // nil: the bind must succeed; errAny: any error
	}{
		{
			name:    "missing parent directories are created",
			prepare: func(t *testing.T, path string) func() { return func() {} },
		},
		{
			name: "stale socket file is removed",
			prepare: func(t *testing.T, path string) func() {
				l := listenUnix(t, path)
				l.SetUnlinkOnClose(false)
				_ = l.Close() // leaves the socket file behind, like a crashed engine
				return func() {}
			},
		},
		{
			name: "live listener is left alone",
			prepare: func(t *testing.T, path string) func() {
				l := listenUnix(t, path)
				return func() { _ = l.Close() }
			},
			wantErr: zmq.ErrAddrInUse,
		},
		{
			name: "regular file is left alone",
			prepare: func(t *testing.T, path string) func() {
				mkdirParent(t, path)
				if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
					t.Fatal(err)
				}
				return func() {}
			},
			wantErr: errAny,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run", "tandem", "engine.sock")
			defer tt.prepare(t, path)()
			router, err := zmq.BindRouter("ipc://" + path)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("BindRouter: %v", err)
			case tt.wantErr == nil:
				closeOnCleanup(t, router)
				dealer := dialDealer(t, router.Endpoint())
				send(t, dealer, "hi")
				if diff := cmp.Diff([]string{dealer.Identity(), "hi"}, recv(t, router)); diff != "" {
					t.Errorf("router received (-want +got):\n%s", diff)
				}
			case err == nil:
				_ = router.Close()
				t.Fatalf("BindRouter succeeded, want %v", tt.wantErr)
			case tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("BindRouter: %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errAny in a test table accepts any non-nil error.
var errAny = errors.New("any error")

func mkdirParent(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
}

func listenUnix(t *testing.T, path string) *net.UnixListener {
	t.Helper()
	mkdirParent(t, path)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestBindLiveZMQEndpointRefused(t *testing.T) {
	router := bindRouter(t, ipcEndpoint(t, "router"))
	if c, err := zmq.BindRouter(router.Endpoint()); !errors.Is(err, zmq.ErrAddrInUse) {
		if err == nil {
			_ = c.Close()
		}
		t.Fatalf("second BindRouter = %v, want ErrAddrInUse", err)
	}
	// The first ROUTER still owns its endpoint.
	dealer := dialDealer(t, router.Endpoint())
	send(t, dealer, "still there?")
	if diff := cmp.Diff([]string{dealer.Identity(), "still there?"}, recv(t, router)); diff != "" {
		t.Errorf("router received (-want +got):\n%s", diff)
	}
}
