package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain makes the test binary a fake child when the router starts it
// as `fleet.test fake-child PORT [fail]`: it answers /health until
// SIGTERM, or with fail exits with status 3 at once.
func TestMain(m *testing.M) {
	if len(os.Args) >= 3 && os.Args[1] == "fake-child" {
		if len(os.Args) > 3 && os.Args[3] == "fail" {
			os.Exit(3)
		}
		http.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ok"}`)) })
		fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:"+os.Args[2], nil))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestHubDropsSlowSubscriber: a subscriber that stops reading gets what
// its buffer holds, then its stream ends; the others miss nothing and
// publish never waits.
func TestHubDropsSlowSubscriber(t *testing.T) {
	var h hub
	slow, _ := h.subscribe()
	fast, leaveFast := h.subscribe()
	for i := range sseBuffer + 1 {
		h.publish([]byte{byte(i)})
		if got := <-fast; got[0] != byte(i) {
			t.Fatalf("fast subscriber got %v, want %d", got, i)
		}
	}
	n := 0
	for range slow {
		n++
	}
	if n != sseBuffer {
		t.Fatalf("slow subscriber got %d events before its end, want %d", n, sseBuffer)
	}
	leaveFast()
	leaveFast() // twice is fine
	if _, ok := <-fast; ok {
		t.Fatal("left subscriber still open")
	}
	h.publish([]byte("x")) // nobody left: no panic on a closed channel
	h.close()
	late, _ := h.subscribe()
	if _, ok := <-late; ok {
		t.Fatal("subscribing after close should give an ended stream")
	}
}

// TestModelEventsStream runs a router over fake children and reads
// GET /models/sse while models load, unload, fail and the catalog
// reloads; ending the streams ends it.
func TestModelEventsStream(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.gguf"), "")
	write(t, filepath.Join(dir, "b.gguf"), "")
	r, err := NewRouter(Config{
		Sources: Sources{Dir: dir}, Max: 2, APIKeys: []string{"k"}, Keepalive: 20 * time.Millisecond,
		Command: func(s Spec, port int) ([]string, error) {
			argv := []string{os.Args[0], "fake-child", strconv.Itoa(port)}
			if s.Name == "b" {
				argv = append(argv, "fail")
			}
			return argv, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ts := httptest.NewServer(r.Handler())
	defer ts.Close()

	do := func(method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	anon, err := http.Get(ts.URL + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/models/sse without a key: %s, want 401", anon.Status)
	}
	resp := do("GET", "/models/sse", "")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("/models/sse: %d %q", resp.StatusCode, ct)
	}
	events, keepalives := make(chan string, 64), make(chan struct{}, 1)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == ": keepalive" {
				select {
				case keepalives <- struct{}{}:
				default:
				}
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				continue
			}
			var e struct {
				Model, Event string
				Data         *struct {
					Status   string
					ExitCode *int `json:"exit_code"`
				}
			}
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				events <- "bad JSON: " + data
				continue
			}
			s := e.Model + " " + e.Event
			if e.Data != nil {
				s += " " + e.Data.Status
				if e.Data.ExitCode != nil {
					s += " " + strconv.Itoa(*e.Data.ExitCode)
				}
			}
			events <- s
		}
	}()
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got, ok := <-events:
				if !ok {
					t.Fatalf("stream ended, want %q", w)
				}
				if got != w {
					t.Fatalf("event %q, want %q", got, w)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no event, want %q", w)
			}
		}
	}
	call := func(path, body string) {
		t.Helper()
		resp := do("POST", path, body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", path, body, resp.StatusCode)
		}
	}

	call("/models/load", `{"model":"a"}`)
	expect("a model_status loading", "a status_change loading", "a status_change loaded")
	call("/models/unload", `{"model":"a"}`)
	expect("a status_change unloaded 0")
	call("/models/load", `{"model":"b"}`)
	expect("b model_status loading", "b status_change loading", "b status_change unloaded 3")
	resp2 := do("GET", "/models?reload=1", "")
	resp2.Body.Close()
	expect("* models_reload")
	select {
	case <-keepalives:
	case <-time.After(5 * time.Second):
		t.Fatal("no keepalive comment")
	}
	r.EndStreams()
	select {
	case e, ok := <-events:
		if ok {
			t.Fatalf("event %q after the end, want the stream closed", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end with the server")
	}
}
