//go:build cgo

package zmq_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// testTimeout bounds every wait in these tests; a healthy run needs milliseconds.
const testTimeout = 10 * time.Second

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// transport is one way to bind a socket in a test.
type transport struct {
	name     string
	endpoint string // what to bind
}

// transports returns a fresh ipc:// endpoint in t.TempDir() and a tcp:// any-port one.
func transports(t *testing.T) []transport {
	t.Helper()
	return []transport{
		{name: "ipc", endpoint: ipcEndpoint(t, "sock")},
		{name: "tcp", endpoint: "tcp://127.0.0.1:0"},
	}
}

func ipcEndpoint(t *testing.T, name string) string {
	t.Helper()
	return "ipc://" + filepath.Join(t.TempDir(), name)
}

// closeOnCleanup closes c when the test ends, and fails if Close reports an error.
func closeOnCleanup(t *testing.T, c *zmq.Conn) *zmq.Conn {
	t.Helper()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func bindRouter(t *testing.T, endpoint string, opts ...zmq.Option) *zmq.Conn {
	t.Helper()
	c, err := zmq.BindRouter(endpoint, opts...)
	if err != nil {
		t.Fatalf("BindRouter(%q): %v", endpoint, err)
	}
	return closeOnCleanup(t, c)
}

func dialDealer(t *testing.T, endpoint string, opts ...zmq.Option) *zmq.Conn {
	t.Helper()
	c, err := zmq.DialDealer(endpoint, opts...)
	if err != nil {
		t.Fatalf("DialDealer(%q): %v", endpoint, err)
	}
	return closeOnCleanup(t, c)
}

func send(t *testing.T, c *zmq.Conn, frames ...string) {
	t.Helper()
	if err := c.Send(toFrames(frames...)); err != nil {
		t.Fatalf("Send(%q): %v", frames, err)
	}
}

func toFrames(frames ...string) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = []byte(f)
	}
	return out
}

func toStrings(msg [][]byte) []string {
	out := make([]string, len(msg))
	for i, f := range msg {
		out[i] = string(f)
	}
	return out
}

// recv waits for the next message on c and returns its frames as strings.
func recv(t *testing.T, c *zmq.Conn) []string {
	t.Helper()
	select {
	case msg, ok := <-c.Recv():
		if !ok {
			t.Fatal("Recv channel closed")
		}
		return toStrings(msg)
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for a message")
	}
	return nil
}

// recvNone fails if a message arrives on c within d.
func recvNone(t *testing.T, c *zmq.Conn, d time.Duration) {
	t.Helper()
	select {
	case msg, ok := <-c.Recv():
		if ok {
			t.Fatalf("unexpected message %q", toStrings(msg))
		}
	case <-time.After(d):
	}
}

// waitFor polls cond until it holds, failing the test after testTimeout.
// Optional state funcs describe the state in the failure message.
func waitFor(t *testing.T, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			for _, s := range state {
				what += "; " + s()
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// closeWithin closes c and fails if that takes longer than d.
func closeWithin(t *testing.T, c *zmq.Conn, d time.Duration) {
	t.Helper()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(start); took > d {
		t.Errorf("Close took %v, want under %v", took, d)
	}
}
