package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/soak"
)

// Fault injection with real processes (issue 9). Each test says what the client saw
// and checks that nothing leaked: every engine back to idle (no running or waiting
// request, KV usage 0, nothing in flight) and the frontend's goroutines back to the
// baseline taken before the fault. See also e2e_session_test.go (engine SIGKILL
// mid-stream, client disconnect, frontend SIGKILL).

// goroutineSlack is how many goroutines above the baseline still count as "back": the
// HTTP server's per-connection goroutines of a probe that is just closing.
const goroutineSlack = 4

// leakCheck is a frontend's state before a fault, to compare with after.
type leakCheck struct {
	base     string
	hc       *http.Client
	baseline soak.Snapshot
}

// newLeakCheck takes the baseline of an idle server.
func newLeakCheck(t *testing.T, base string) *leakCheck {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	snap, ok := soak.WaitIdle(context.Background(), hc, base, "", 1<<30, 20*time.Second)
	if !ok {
		t.Fatalf("server not idle before the test: %s", snap)
	}
	return &leakCheck{base: base, hc: hc, baseline: snap}
}

// assertNoLeaks waits until the server is idle again with its goroutines at the
// baseline, and fails with the last snapshot if that takes longer than within.
func (l *leakCheck) assertNoLeaks(t *testing.T, within time.Duration) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	snap, ok := soak.WaitIdle(context.Background(), l.hc, l.base, "", l.baseline.Goroutines+goroutineSlack, within)
	if !ok {
		t.Fatalf("leak: server not back to idle within %s: %s (baseline %s)", within, snap, l.baseline)
	}
	t.Logf("no leaks: %s (baseline goroutines %d)", snap, l.baseline.Goroutines)
}

// streamBody is a streaming completion of maxTokens tokens.
func streamBody(maxTokens int, extra map[string]any) []byte {
	body := map[string]any{"model": "dummy", "prompt": "tell me a long story", "max_tokens": maxTokens,
		"ignore_eos": true, "stream": true}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	return b
}

// TestEngineStoppedMidStream: SIGSTOP freezes the engine without closing its sockets,
// so only heartbeats tell. The client sees an error event and [DONE] within the
// heartbeat timeout (not a hang), new requests get 503 at once; after SIGCONT the
// frontend takes the engine back, requests flow again, and nothing leaked.
func TestEngineStoppedMidStream(t *testing.T) {
	s := startSplit(t)
	leaks := newLeakCheck(t, s.base)
	resp, r := streamRequest(t, s.base, "")
	defer resp.Body.Close()
	stopped := time.Now()
	s.engine.signal(syscall.SIGSTOP)
	defer s.engine.signal(syscall.SIGCONT) // never leave a stopped process behind

	events := make(chan []string, 1)
	go func() { ev, _ := sseEvents(r); events <- ev }()
	select {
	case ev := <-events:
		if len(ev) < 2 || ev[len(ev)-1] != "[DONE]" || !strings.Contains(ev[len(ev)-2], `"error"`) {
			t.Fatalf("stream ended with %q, want an error event then [DONE]", tail(ev, 2))
		}
		if !strings.Contains(ev[len(ev)-2], "not available") {
			t.Errorf("error event %s does not say the engine is unavailable", ev[len(ev)-2])
		}
		t.Logf("client saw, %s after SIGSTOP: %s", time.Since(stopped).Round(time.Millisecond), ev[len(ev)-2])
	case <-time.After(15 * time.Second):
		t.Fatal("stream still open 15 s after the engine stopped (heartbeat timeout 1.5 s)")
	}
	code, body := postJSON(t, s.base+"/v1/completions", map[string]any{"model": "dummy", "prompt": "x", "max_tokens": 1}, nil)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("while the engine is stopped: status %d %v, want 503", code, body)
	}

	s.engine.signal(syscall.SIGCONT)
	resumed := time.Now()
	for {
		code, body = postJSON(t, s.base+"/v1/completions", map[string]any{"model": "dummy", "prompt": "x", "max_tokens": 2}, nil)
		if code == http.StatusOK {
			break
		}
		if time.Since(resumed) > 20*time.Second {
			t.Fatalf("frontend never recovered after SIGCONT: last status %d %v", code, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("first success %s after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	leaks.assertNoLeaks(t, 20*time.Second)
}

// TestSlowReaderDoesNotStallOthers: clients that stop reading their streams (a 4 KiB
// receive window, and they never read) must not stall the engine or other clients: the
// engine's reader never blocks on one request's consumer, and a request's buffered
// outputs are bounded by its max_tokens. The stalled requests still finish generating
// in the engine; once they have, another client's stream runs at the pace it had alone
// (within 2× + 0.5 s); then the stalled clients hang up and nothing leaked.
func TestSlowReaderDoesNotStallOthers(t *testing.T) {
	s := startSplit(t)
	leaks := newLeakCheck(t, s.base)
	const numTokens = 300
	alone := timeStream(t, s.base, numTokens)

	// Several streams with logprobs (big events: far more than the socket buffers
	// hold), read by nobody.
	var stalled []net.Conn
	for i := range 4 {
		c := openSlowStream(t, s.base, streamBody(1000, map[string]any{"logprobs": 5, "session_id": fmt.Sprintf("slow-%d", i)}))
		defer c.Close()
		stalled = append(stalled, c)
	}
	during := timeStream(t, s.base, numTokens) // shares the engine with 4 × 1000 tokens
	waitEngineState(t, s.base, 30*time.Second, func(e soak.EngineSnapshot) bool { return e.NumRunning == 0 })
	after := timeStream(t, s.base, numTokens)
	snap, _ := soak.Scrape(context.Background(), http.DefaultClient, s.base, "")
	t.Logf("client saw %d tokens: alone in %s; while 4 unread streams generate in %s; after they finished in the engine, still unread, in %s (frontend %s)",
		numTokens, alone.Round(time.Millisecond), during.Round(time.Millisecond), after.Round(time.Millisecond), snap)
	if after > 2*alone+500*time.Millisecond {
		t.Errorf("stream next to stalled readers took %s, alone %s: the stalled readers slow others down", after, alone)
	}
	for _, c := range stalled {
		_ = c.Close()
	}
	leaks.assertNoLeaks(t, 20*time.Second)
}

// timeStream runs one streaming completion of numTokens tokens and returns how long it
// took; it fails unless the stream ends with [DONE] and no error.
func timeStream(t *testing.T, base string, numTokens int) time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(streamBody(numTokens, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ev, err := sseEvents(resp.Body)
	if err != nil || len(ev) < 2 || ev[len(ev)-1] != "[DONE]" || strings.Contains(ev[len(ev)-2], `"error"`) {
		t.Fatalf("stream: %v, ended with %q", err, tail(ev, 2))
	}
	return time.Since(start)
}

// openSlowStream sends a streaming request over a raw connection with a 4 KiB receive
// buffer, reads the status line, and then reads nothing more.
func openSlowStream(t *testing.T, base string, body []byte) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	status, err := bufio.NewReaderSize(conn, 64).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("slow stream: status %q, %v", status, err)
	}
	return conn
}

// waitEngineState waits until cond holds for every engine in GET /v1/engines.
func waitEngineState(t *testing.T, base string, within time.Duration, cond func(soak.EngineSnapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		snap, err := soak.Scrape(context.Background(), http.DefaultClient, base, "")
		ok := err == nil && len(snap.Engines) > 0
		for _, e := range snap.Engines {
			ok = ok && cond(e)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engines not there within %s: %s %v", within, snap, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRestartEverythingMidLoad: `tandem serve` with two engines is SIGKILLed with all
// its children while 16 clients stream, then started again on the same port and run
// directory (stale ipc socket files and all). Every client request ends — completed, or
// failed with a transport error or an error event while the server is down — none hangs;
// the new server serves, and after the load nothing leaked.
func TestRestartEverythingMidLoad(t *testing.T) {
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	runDir := filepath.Join(t.TempDir(), "run")
	args := []string{"serve", "--model", "dummy", "--data-parallel-size", "2", "--port", fmt.Sprint(port), "--run-dir", runDir,
		"--max-model-len", "512", "--kv-cache-memory", "32Mi", "--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	first := startProc(t, args...)
	waitHealthy(t, base, first)
	waitEngineState(t, base, 30*time.Second, func(e soak.EngineSnapshot) bool { return e.State == "ready" })

	const numClients = 16
	var (
		mu       sync.Mutex
		outcomes = map[string]int{} // what clients saw, by kind
	)
	record := func(what string) { mu.Lock(); outcomes[what]++; mu.Unlock() }
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range numClients {
		wg.Go(func() {
			hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
			defer hc.CloseIdleConnections()
			for {
				select {
				case <-stop:
					return
				default:
				}
				record(loadRequest(hc, base, i))
			}
		})
	}
	time.Sleep(2 * time.Second)
	killed := time.Now()
	first.signal(syscall.SIGKILL) // serve and every child: the process group
	<-first.done
	time.Sleep(500 * time.Millisecond)
	second := startProc(t, args...)
	waitHealthy(t, base, second)
	waitEngineState(t, base, 30*time.Second, func(e soak.EngineSnapshot) bool { return e.State == "ready" })
	t.Logf("serving again %s after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // load on the new server
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		t.Fatalf("clients still blocked 45 s after the load stopped: a request hangs (%v)", outcomes)
	}
	t.Logf("clients saw: %v", outcomes)
	if outcomes["ok"] == 0 || outcomes["hang"] > 0 || outcomes["bad status"] > 0 {
		t.Fatalf("outcomes %v: want successes and no hangs or unexpected statuses", outcomes)
	}
	if outcomes["transport error"]+outcomes["error event"]+outcomes["cut"]+outcomes["503"] == 0 {
		t.Errorf("outcomes %v: no client noticed the server dying", outcomes)
	}
	leaks := newLeakCheck(t, base)
	code, body := postJSON(t, base+"/v1/completions", map[string]any{"model": "dummy", "prompt": "after", "max_tokens": 3}, nil)
	if code != http.StatusOK {
		t.Fatalf("after the restart: status %d %v", code, body)
	}
	leaks.assertNoLeaks(t, 20*time.Second)
}

// loadRequest runs one streaming completion and says how it ended: "ok", "503",
// "error event" (then [DONE]), "cut" (no [DONE]), "transport error", "hang" (the
// client's timeout), or "bad status".
func loadRequest(hc *http.Client, base string, i int) string {
	resp, err := hc.Post(base+"/v1/completions", "application/json",
		bytes.NewReader(streamBody(40, map[string]any{"session_id": fmt.Sprintf("load-%d", i)})))
	if err != nil {
		if strings.Contains(err.Error(), "Client.Timeout") {
			return "hang"
		}
		time.Sleep(100 * time.Millisecond) // the server is down: do not spin
		return "transport error"
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		_, _ = io.Copy(io.Discard, resp.Body)
		time.Sleep(100 * time.Millisecond)
		return "503"
	default:
		return "bad status"
	}
	ev, err := sseEvents(resp.Body)
	switch {
	case err != nil && strings.Contains(err.Error(), "Client.Timeout"):
		return "hang"
	case len(ev) > 0 && ev[len(ev)-1] == "[DONE]" && len(ev) >= 2 && strings.Contains(ev[len(ev)-2], `"error"`):
		return "error event"
	case len(ev) > 0 && ev[len(ev)-1] == "[DONE]":
		return "ok"
	}
	return "cut"
}
