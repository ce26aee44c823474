package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/webui"
)

// TestWebUIRoutes: the pages are open, the feed needs the key, and
// DisableWebUI leaves them all out.
func TestWebUIRoutes(t *testing.T) {
	const key = "sk-test"
	bearer := map[string]string{"Authorization": "Bearer " + key}
	on := newTestServer(t, &fakeEngine{}, key)
	off := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.APIKey = key; c.DisableWebUI = true }, tokenizer.NewByte())
	tests := []struct {
		name string
		off  bool
		path string
		hdr  map[string]string
		want int
	}{
		{"chat page without key", false, "/", nil, http.StatusOK},
		{"console page without key", false, "/console", nil, http.StatusOK},
		{"bundle without key", false, "/webui/chat.js", nil, http.StatusOK},
		{"missing asset", false, "/webui/nope.js", nil, http.StatusNotFound},
		{"html only as a page", false, "/webui/index.html", nil, http.StatusNotFound},
		{"feed without key", false, webui.EventsPath, nil, http.StatusUnauthorized},
		{"API still needs the key", false, "/v1/models", nil, http.StatusUnauthorized},
		{"disabled page", true, "/", bearer, http.StatusNotFound},
		{"disabled console", true, "/console", bearer, http.StatusNotFound},
		{"disabled bundle needs the key", true, "/webui/chat.js", nil, http.StatusUnauthorized},
		{"disabled feed", true, webui.EventsPath, bearer, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := on
			if tc.off {
				ts = off
			}
			if got, body := do(t, ts, http.MethodGet, tc.path, "", tc.hdr); got != tc.want {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, got, tc.want, body)
			}
		})
	}
}

// TestWebUIFeed reads the first snapshot of the feed with the key.
func TestWebUIFeed(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "sk-test")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+webui.EventsPath, nil)
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var s webui.Snapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Engines) != 1 || s.Engines[0].State != "ready" {
			t.Fatalf("engines %+v", s.Engines)
		}
		return
	}
	t.Fatalf("no snapshot: %v", sc.Err())
}
