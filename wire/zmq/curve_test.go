//go:build cgo

package zmq_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// keypair is a CURVE keypair in Z85.
type keypair struct{ public, secret string }

func newKeypair(t *testing.T) keypair {
	t.Helper()
	pub, sec, err := zmq.NewCurveKeypair()
	if err != nil {
		t.Fatal(err)
	}
	return keypair{pub, sec}
}

// logBuffer is a goroutine-safe buffer for a text slog handler.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestZ85(t *testing.T) {
	// ZeroMQ RFC 32's test vector.
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	if got := zmq.Z85Encode(raw); got != "HelloWorld" {
		t.Errorf("Z85Encode = %q, want HelloWorld", got)
	}
	kp := newKeypair(t)
	for _, k := range []string{kp.public, kp.secret} {
		b, err := zmq.Z85Decode(k)
		if err != nil {
			t.Fatalf("Z85Decode(%q): %v", k, err)
		}
		if got := zmq.Z85Encode(b); got != k {
			t.Errorf("round trip %q -> %q", k, got)
		}
	}
	bad := []string{"", "short", strings.Repeat("0", 39), strings.Repeat("0", 41), strings.Repeat(" ", 40),
		strings.Repeat("#", 40)} // "#####" is 85^5-1, more than 32 bits
	for _, k := range bad {
		if err := zmq.CheckKey(k); !errors.Is(err, zmq.ErrBadKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrBadKey", k, err)
		}
	}
}

func TestCurvePublic(t *testing.T) {
	kp := newKeypair(t)
	got, err := zmq.CurvePublic(kp.secret)
	if err != nil || got != kp.public {
		t.Fatalf("CurvePublic = %q, %v; want %q", got, err, kp.public)
	}
	if _, err := zmq.CurvePublic("nope"); !errors.Is(err, zmq.ErrBadKey) {
		t.Errorf("CurvePublic(bad) = %v, want ErrBadKey", err)
	}
}

// TestCurveRouterDealer: a CURVE ROUTER talks to clients whose key it allows and to
// nobody else; each refusal is counted, and logged with the peer's key.
func TestCurveRouterDealer(t *testing.T) {
	server, allowed, stranger := newKeypair(t), newKeypair(t), newKeypair(t)
	impostor := newKeypair(t) // pretends to be the server
	tests := []struct {
		name    string
		opts    []zmq.Option
		want    bool   // whether the message gets through
		wantLog string // in the server's log when refused
		curve   bool   // the client uses CURVE, so it counts and logs the refusal too
	}{
		{"authorised client", []zmq.Option{zmq.WithCurveClient(server.public, allowed.public, allowed.secret)}, true, "", true},
		{"unknown client key", []zmq.Option{zmq.WithCurveClient(server.public, stranger.public, stranger.secret)}, false,
			"refused unauthorised CURVE client", true},
		{"no CURVE", nil, false, "the peer does not use CURVE", false},
		{"wrong server key", []zmq.Option{zmq.WithCurveClient(impostor.public, allowed.public, allowed.secret)}, false,
			"the peer does not know this server's public key", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			router := bindRouter(t, "tcp://127.0.0.1:0",
				zmq.WithCurveServer(server.secret, []string{allowed.public}), zmq.WithLogger(log))
			var clientLogs logBuffer
			dealer := dialDealer(t, router.Endpoint(), append(tt.opts, zmq.WithLogger(slog.New(slog.NewTextHandler(&clientLogs, nil))))...)
			send(t, dealer, "hello")
			if tt.want {
				if got := recv(t, router); !cmp.Equal(got, []string{dealer.Identity(), "hello"}) {
					t.Fatalf("router got %q", got)
				}
				send(t, router, dealer.Identity(), "welcome")
				if got := recv(t, dealer); !cmp.Equal(got, []string{"welcome"}) {
					t.Fatalf("dealer got %q", got)
				}
				if n := router.Refused(); n != 0 {
					t.Errorf("Refused() = %d, want 0", n)
				}
				return
			}
			waitFor(t, "a refused handshake", func() bool { return router.Refused() > 0 })
			recvNone(t, router, 200*time.Millisecond)
			waitFor(t, "the refusal in the log", func() bool { return strings.Contains(logs.String(), tt.wantLog) },
				logs.String)
			if tt.curve {
				waitFor(t, "the client to notice", func() bool {
					return dealer.Refused() > 0 && strings.Contains(clientLogs.String(), "CURVE handshake with the server failed")
				}, clientLogs.String)
			}
			if tt.name == "unknown client key" && !strings.Contains(logs.String(), stranger.public) {
				t.Errorf("log does not name the refused key %s:\n%s", stranger.public, logs.String())
			}
			if strings.Contains(logs.String(), server.secret) || strings.Contains(logs.String(), stranger.secret) {
				t.Errorf("log contains a secret key:\n%s", logs.String())
			}
		})
	}
}

// TestCurveRefusalLogIsRateLimited: a client with the wrong server key reconnects every
// 100 ms, forever; the server warns about it at most once a second.
func TestCurveRefusalLogIsRateLimited(t *testing.T) {
	server, stranger := newKeypair(t), newKeypair(t)
	var logs logBuffer
	router := bindRouter(t, "tcp://127.0.0.1:0", zmq.WithCurveServer(server.secret, []string{newKeypair(t).public}),
		zmq.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	dialDealer(t, router.Endpoint(), zmq.WithCurveClient(stranger.public, stranger.public, stranger.secret))
	waitFor(t, "3 refusals", func() bool { return router.Refused() >= 3 })
	if n := strings.Count(logs.String(), "refused"); n != 1 {
		t.Errorf("%d warnings for %d refusals within a second, want 1:\n%s", n, router.Refused(), logs.String())
	}
}

// TestCurveTCPProbeIsNotAWarning: a TCP health check (Kubernetes' tcpSocket
// probe connects and closes every few seconds) is counted but not warned
// about: it is not a ZeroMQ peer.
func TestCurveTCPProbeIsNotAWarning(t *testing.T) {
	server := newKeypair(t)
	var logs logBuffer
	router := bindRouter(t, "tcp://127.0.0.1:0", zmq.WithCurveServer(server.secret, []string{newKeypair(t).public}),
		zmq.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	addr := strings.TrimPrefix(router.Endpoint(), "tcp://")
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
	}
	waitFor(t, "the probes to be counted", func() bool { return router.Refused() >= 1 })
	waitFor(t, "the probe in the debug log", func() bool { return strings.Contains(logs.String(), "a TCP probe?") }, logs.String)
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a TCP probe was logged as a warning:\n%s", logs.String())
	}
}

func TestCurvePubSub(t *testing.T) {
	server, allowed, stranger := newKeypair(t), newKeypair(t), newKeypair(t)
	pub, err := zmq.BindPub("tcp://127.0.0.1:0", zmq.WithCurveServer(server.secret, []string{allowed.public}))
	if err != nil {
		t.Fatal(err)
	}
	closeOnCleanup(t, pub)
	subscribe := func(opts ...zmq.Option) *zmq.Conn {
		sub, err := zmq.DialSub(pub.Endpoint(), nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return closeOnCleanup(t, sub)
	}
	good := subscribe(zmq.WithCurveClient(server.public, allowed.public, allowed.secret))
	bad := subscribe(zmq.WithCurveClient(server.public, stranger.public, stranger.secret))
	// PUB drops messages for subscribers that are not connected yet: publish until
	// the good one hears.
	waitFor(t, "the authorised subscriber to receive", func() bool {
		send(t, pub, "topic", "news")
		select {
		case <-good.Recv():
			return true
		case <-time.After(10 * time.Millisecond):
			return false
		}
	})
	waitFor(t, "the stranger to be refused", func() bool { return pub.Refused() > 0 })
	send(t, pub, "topic", "more news")
	recvNone(t, bad, 200*time.Millisecond)
}

func TestCurveOptionErrors(t *testing.T) {
	kp := newKeypair(t)
	tests := []struct {
		name string
		open func() (*zmq.Conn, error)
	}{
		{"server option on a DEALER", func() (*zmq.Conn, error) {
			return zmq.DialDealer("tcp://127.0.0.1:1", zmq.WithCurveServer(kp.secret, []string{kp.public}))
		}},
		{"client option on a ROUTER", func() (*zmq.Conn, error) {
			return zmq.BindRouter("tcp://127.0.0.1:0", zmq.WithCurveClient(kp.public, kp.public, kp.secret))
		}},
		{"no allowed clients", func() (*zmq.Conn, error) {
			return zmq.BindRouter("tcp://127.0.0.1:0", zmq.WithCurveServer(kp.secret, nil))
		}},
		{"bad allowed key", func() (*zmq.Conn, error) {
			return zmq.BindRouter("tcp://127.0.0.1:0", zmq.WithCurveServer(kp.secret, []string{"not-a-key"}))
		}},
		{"bad secret key", func() (*zmq.Conn, error) {
			return zmq.BindPub("tcp://127.0.0.1:0", zmq.WithCurveServer("x", []string{kp.public}))
		}},
		{"bad server key", func() (*zmq.Conn, error) {
			return zmq.DialSub("tcp://127.0.0.1:1", nil, zmq.WithCurveClient("", kp.public, kp.secret))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.open()
			if err == nil {
				_ = c.Close()
				t.Fatal("succeeded, want an error")
			}
		})
	}
}

// TestZAPHandlerLifecycle: the ZAP handler serves every CURVE server while any is open,
// stops with the last (goleak in TestMain checks), and starts again with the next.
func TestZAPHandlerLifecycle(t *testing.T) {
	server, client := newKeypair(t), newKeypair(t)
	bind := func() *zmq.Conn {
		r, err := zmq.BindRouter("tcp://127.0.0.1:0", zmq.WithCurveServer(server.secret, []string{client.public}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	roundTrip := func(r *zmq.Conn) {
		t.Helper()
		d, err := zmq.DialDealer(r.Endpoint(), zmq.WithCurveClient(server.public, client.public, client.secret))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		send(t, d, "ping")
		if got := recv(t, r); got[1] != "ping" {
			t.Fatalf("got %q", got)
		}
	}
	for range 2 {
		a, b := bind(), bind()
		roundTrip(a)
		closeWithin(t, a, time.Second)
		roundTrip(b) // the handler outlives a
		closeWithin(t, b, time.Second)
	}
	// A plain socket next to a CURVE server is not affected by the handler.
	secure := bind()
	defer secure.Close()
	plain := bindRouter(t, "tcp://127.0.0.1:0")
	d := dialDealer(t, plain.Endpoint())
	send(t, d, "plain")
	if got := recv(t, plain); got[1] != "plain" {
		t.Fatalf("got %q", got)
	}
}
