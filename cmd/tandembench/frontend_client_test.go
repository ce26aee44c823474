package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestFEClientKeepAlive checks that a stream's requests share one
// connection, that streams do not share one, and that a cancelled
// request closes its connection instead of leaving it half read.
func TestFEClientKeepAlive(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]int{}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr]++
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("hang") != "" {
			<-release
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	defer close(release)
	c := newFEClient(srv.URL)
	defer c.close()
	readAll := func(resp *http.Response, _ time.Time) error {
		_, err := io.ReadAll(resp.Body)
		return err
	}
	for stream := range 2 {
		for range 3 {
			if err := c.stream(context.Background(), stream, newChatRequest(srv.URL, []byte("{}")), readAll); err != nil {
				t.Fatal(err)
			}
		}
	}
	mu.Lock()
	if len(remotes) != 2 {
		t.Errorf("connections %v, want 2 (one per stream) of 3 requests each", remotes)
	}
	for addr, n := range remotes {
		if n != 3 {
			t.Errorf("%s served %d requests, want 3", addr, n)
		}
	}
	mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/?hang=1", nil)
	err := c.stream(ctx, 0, req, func(resp *http.Response, _ time.Time) error {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return err
		}
		cancel()
		_, err := io.ReadAll(resp.Body)
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: err %v, want context.Canceled", err)
	}
	c.mu.Lock()
	_, kept := c.idle[0]
	c.mu.Unlock()
	if kept {
		t.Error("the cancelled request's connection was kept")
	}
}

// TestFEClientIdleClosed checks that a request on a kept connection the
// server closed meanwhile (its idle timeout) goes again on a new one.
func TestFEClientIdleClosed(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]int{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr]++
		mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write(body)
	}))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c := newFEClient(srv.URL)
	defer c.close()
	for i := range 2 {
		var got []byte
		err := c.stream(context.Background(), 0, newChatRequest(srv.URL, []byte("hello")), func(resp *http.Response, _ time.Time) error {
			var err error
			got, err = io.ReadAll(resp.Body)
			return err
		})
		if err != nil || string(got) != "hello" {
			t.Fatalf("request %d: %q, %v; want the body echoed", i, got, err)
		}
		time.Sleep(200 * time.Millisecond) // past the idle timeout
	}
	mu.Lock()
	defer mu.Unlock()
	if len(remotes) != 2 {
		t.Errorf("connections %v, want 2: the second request on a new one", remotes)
	}
}

// TestPercentiles checks the nearest-rank percentiles and the mean,
// negative durations (a pair's difference) included.
func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := range 1000 { // −100 µs … 899 µs, shuffled
		ds = append(ds, time.Duration((i*7919)%1000-100)*time.Microsecond)
	}
	got := percentiles(ds)
	want := Percentiles{P50: 400, P99: 890, P999: 899, Mean: 399.5}
	if got != want {
		t.Errorf("percentiles = %+v, want %+v", got, want)
	}
	if got := percentiles(nil); got != (Percentiles{}) {
		t.Errorf("percentiles(nil) = %+v, want zero", got)
	}
}
