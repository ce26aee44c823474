//go:build cgo

package zmq_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire/zmq"
)

func TestVersion(t *testing.T) {
	if v := zmq.Version(); !regexp.MustCompile(`^4\.\d+\.\d+$`).MatchString(v) {
		t.Errorf("Version() = %q, want 4.x.y", v)
	}
}

// TestZeroByteIdentity: vLLM's rank-0 engine presents "\x00\x00".
func TestZeroByteIdentity(t *testing.T) {
	router := bindRouter(t, "tcp://127.0.0.1:0")
	d := dialDealer(t, router.Endpoint(), zmq.WithIdentity("\x00\x00"))
	send(t, d, "hello")
	if diff := cmp.Diff([]string{"\x00\x00", "hello"}, recv(t, router)); diff != "" {
		t.Errorf("router received (-want +got):\n%s", diff)
	}
	send(t, router, "\x00\x00", "welcome")
	if diff := cmp.Diff([]string{"welcome"}, recv(t, d)); diff != "" {
		t.Errorf("dealer received (-want +got):\n%s", diff)
	}
}

func TestRouterDealerRouting(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			router := bindRouter(t, tr.endpoint)
			a := dialDealer(t, router.Endpoint(), zmq.WithIdentity("frontend-a"))
			b := dialDealer(t, router.Endpoint())
			if b.Identity() == "" {
				t.Fatal("default DEALER identity is empty")
			}

			send(t, a, "hello", "from a")
			send(t, b, "hello", "from b", "") // an empty frame survives the trip
			got := map[string][]string{}      // identity → body frames
			for range 2 {
				msg := recv(t, router)
				got[msg[0]] = msg[1:]
				send(t, router, append([]string{msg[0], "reply"}, msg[2:]...)...)
			}
			want := map[string][]string{
				"frontend-a": {"hello", "from a"},
				b.Identity(): {"hello", "from b", ""},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("router received (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"reply", "from a"}, recv(t, a)); diff != "" {
				t.Errorf("dealer a received (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"reply", "from b", ""}, recv(t, b)); diff != "" {
				t.Errorf("dealer b received (-want +got):\n%s", diff)
			}
			recvNone(t, a, 20*time.Millisecond)
			recvNone(t, b, 20*time.Millisecond)
			if n := router.Dropped(); n != 0 {
				t.Errorf("router.Dropped() = %d, want 0", n)
			}
		})
	}
}

func TestBindTCPPortZeroResolvesEndpoint(t *testing.T) {
	router := bindRouter(t, "tcp://127.0.0.1:0")
	m := regexp.MustCompile(`^tcp://127\.0\.0\.1:(\d+)$`).FindStringSubmatch(router.Endpoint())
	if m == nil || m[1] == "0" {
		t.Fatalf("Endpoint() = %q, want tcp://127.0.0.1:<port>", router.Endpoint())
	}
	if _, err := zmq.BindRouter(router.Endpoint()); err == nil {
		t.Error("second BindRouter on the same port succeeded, want an error")
	}
}

// TestConcurrentSenders has many goroutines share one DEALER; the ROUTER echoes
// everything back. Each sender's messages must arrive complete and in order both ways.
func TestConcurrentSenders(t *testing.T) {
	const (
		numSenders = 8
		numPerSend = 500 // messages per sender
	)
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			router := bindRouter(t, tr.endpoint)
			dealer := dialDealer(t, router.Endpoint())

			// The echo side checks order on arrival, then sends the message back.
			echoErr := make(chan error, 1)
			go func() {
				next := make([]uint32, numSenders) // expected sequence number per sender
				for range numSenders * numPerSend {
					msg, ok := <-router.Recv()
					if !ok {
						echoErr <- fmt.Errorf("router: Recv closed early")
						return
					}
					sender, seq := binary.BigEndian.Uint32(msg[1]), binary.BigEndian.Uint32(msg[2])
					if seq != next[sender] {
						echoErr <- fmt.Errorf("router: sender %d: got seq %d, want %d", sender, seq, next[sender])
						return
					}
					next[sender]++
					if err := router.Send(msg); err != nil {
						echoErr <- err
						return
					}
				}
				echoErr <- nil
			}()

			var wg sync.WaitGroup
			for s := range numSenders {
				wg.Go(func() {
					for seq := range numPerSend {
						msg := [][]byte{
							binary.BigEndian.AppendUint32(nil, uint32(s)),
							binary.BigEndian.AppendUint32(nil, uint32(seq)),
						}
						if err := dealer.Send(msg); err != nil {
							t.Errorf("sender %d: Send: %v", s, err)
							return
						}
					}
				})
			}
			wg.Wait()

			next := make([]uint32, numSenders)
			for range numSenders * numPerSend {
				msg := recvMsg(t, dealer)
				sender, seq := binary.BigEndian.Uint32(msg[0]), binary.BigEndian.Uint32(msg[1])
				if seq != next[sender] {
					t.Fatalf("dealer: sender %d: got seq %d, want %d", sender, seq, next[sender])
				}
				next[sender]++
			}
			if err := <-echoErr; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func recvMsg(t *testing.T, c *zmq.Conn) [][]byte {
	t.Helper()
	select {
	case msg, ok := <-c.Recv():
		if !ok {
			t.Fatal("Recv channel closed")
		}
		return msg
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for a message")
	}
	return nil
}

func TestPubSubTopics(t *testing.T) {
	tests := []struct {
		name   string
		topics []string
		want   [][]string // messages after the sync marker, up to the end marker
	}{
		{
			name:   "prefix filter",
			topics: []string{"kv."},
			want:   [][]string{{"kv.stored", "1"}, {"kv.removed", "2"}, {"kv.end"}},
		},
		{
			name:   "two topics",
			topics: []string{"kv.", "load"},
			want: [][]string{
				{"kv.stored", "1"}, {"load", "3"}, {"kv.removed", "2"}, {"load", "4"}, {"kv.end"},
			},
		},
		{
			name:   "nil topics receive everything",
			topics: nil,
			want: [][]string{
				{"kv.stored", "1"}, {"load", "3"}, {"other", "5"}, {"kv.removed", "2"}, {"load", "4"}, {"kv.end"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub, err := zmq.BindPub(ipcEndpoint(t, "pub"))
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, pub)
			sub, err := zmq.DialSub(pub.Endpoint(), tt.topics)
			if err != nil {
				t.Fatal(err)
			}
			closeOnCleanup(t, sub)

			// Subscriptions travel asynchronously: publish a marker until one arrives.
			synced := false
			for !synced {
				send(t, pub, "kv.sync")
				select {
				case <-sub.Recv():
					synced = true
				case <-time.After(5 * time.Millisecond):
				}
			}
			for _, m := range [][]string{
				{"kv.stored", "1"}, {"load", "3"}, {"other", "5"}, {"kv.removed", "2"}, {"load", "4"}, {"kv.end"},
			} {
				send(t, pub, m...)
			}
			var got [][]string
			for len(got) == 0 || got[len(got)-1][0] != "kv.end" {
				if msg := recv(t, sub); msg[0] != "kv.sync" {
					got = append(got, msg)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SUB received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDialBeforeBind connects and sends before the ROUTER exists.
func TestDialBeforeBind(t *testing.T) {
	freeTCP := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "tcp://" + l.Addr().String()
	}
	tests := []struct {
		name     string
		endpoint func(t *testing.T) string
	}{
		{"ipc in a missing directory", func(t *testing.T) string { return ipcEndpoint(t, "a/b/router") }},
		{"tcp", freeTCP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := tt.endpoint(t)
			dealer := dialDealer(t, endpoint)
			send(t, dealer, "early")
			time.Sleep(20 * time.Millisecond) // let the dealer try and fail to connect
			router := bindRouter(t, endpoint)
			if diff := cmp.Diff([]string{dealer.Identity(), "early"}, recv(t, router)); diff != "" {
				t.Errorf("router received (-want +got):\n%s", diff)
			}
			send(t, router, dealer.Identity(), "welcome")
			if diff := cmp.Diff([]string{"welcome"}, recv(t, dealer)); diff != "" {
				t.Errorf("dealer received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHWMBackpressure queues more messages than the high-water marks hold before the
// ROUTER exists: the DEALER must keep the rest and retry, not drop them.
func TestHWMBackpressure(t *testing.T) {
	const numMessages = 300
	endpoint := ipcEndpoint(t, "router")
	dealer := dialDealer(t, endpoint, zmq.WithHWM(10))
	for i := range numMessages {
		send(t, dealer, fmt.Sprint(i))
	}
	time.Sleep(20 * time.Millisecond) // the dealer fills its pipe and blocks
	router := bindRouter(t, endpoint, zmq.WithHWM(10))
	for i := range numMessages {
		if diff := cmp.Diff([]string{dealer.Identity(), fmt.Sprint(i)}, recv(t, router)); diff != "" {
			t.Fatalf("message %d (-want +got):\n%s", i, diff)
		}
	}
	if n := dealer.Dropped(); n != 0 {
		t.Errorf("dealer.Dropped() = %d, want 0", n)
	}
	if dealer.NumBlocked() == 0 {
		t.Error("the dealer never hit its high-water mark; the test proves nothing")
	}
}

// TestRouterHWMBackpressure makes a ROUTER's replies back up behind a DEALER that stops
// reading: the ROUTER must retry them, in order, rather than drop them.
func TestRouterHWMBackpressure(t *testing.T) {
	const (
		numMessages = 100
		size        = 64 << 10 // bytes per message; large enough to fill the kernel's buffers
	)
	router := bindRouter(t, ipcEndpoint(t, "router"), zmq.WithHWM(4))
	dealer := dialDealer(t, router.Endpoint(), zmq.WithHWM(4), zmq.WithRecvBuffer(1))
	send(t, dealer, "hello")
	id := recv(t, router)[0]
	payload := strings.Repeat("x", size)
	for i := range numMessages {
		send(t, router, id, fmt.Sprint(i), payload)
	}
	waitFor(t, "the router to hit the high-water mark", func() bool { return router.NumBlocked() > 0 })
	for i := range numMessages {
		if got := recv(t, dealer); got[0] != fmt.Sprint(i) || got[1] != payload {
			t.Fatalf("message %d: got seq %q (%d bytes)", i, got[0], len(got[1]))
		}
	}
	if n := router.Dropped(); n != 0 {
		t.Errorf("router.Dropped() = %d, want 0", n)
	}
}

// TestLatencyIndependentOfPollTimeout checks that Send wakes the socket goroutine: if a
// message waited for the 100 ms poll timeout, each round trip would take 100-200 ms.
func TestLatencyIndependentOfPollTimeout(t *testing.T) {
	const (
		numRoundTrips = 20
		budget        = time.Second // 50 ms a round trip, on a loaded machine under -race
	)
	router := bindRouter(t, ipcEndpoint(t, "router"))
	dealer := dialDealer(t, router.Endpoint())
	send(t, dealer, "warm-up")
	send(t, router, recv(t, router)[0], "warm-up")
	recv(t, dealer)

	time.Sleep(150 * time.Millisecond) // both socket goroutines are now idle in a poll
	start := time.Now()
	for i := range numRoundTrips {
		send(t, dealer, fmt.Sprint(i))
		send(t, router, recv(t, router)[0], fmt.Sprint(i))
		recv(t, dealer)
	}
	if took := time.Since(start); took > budget {
		t.Errorf("%d round trips took %v, want under %v", numRoundTrips, took, budget)
	}
}

// TestRouterRefusesOversizedMessages: a peer sending a message part over
// the ROUTER's 32 MiB limit is cut off before the message is delivered;
// other peers are unaffected.
func TestRouterRefusesOversizedMessages(t *testing.T) {
	router := bindRouter(t, ipcEndpoint(t, "big"))
	big := dialDealer(t, router.Endpoint())
	good := dialDealer(t, router.Endpoint(), zmq.WithIdentity("good"))
	if err := big.Send([][]byte{make([]byte, 33<<20)}); err != nil {
		t.Fatal(err)
	}
	send(t, good, "small")
	if msg := recv(t, router); msg[0] != "good" || msg[1] != "small" {
		t.Fatalf("router received %q", msg)
	}
	recvNone(t, router, 200*time.Millisecond)
}
