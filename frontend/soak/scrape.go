package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Snapshot is a server's state as its frontend reports it.
type Snapshot struct {
	// Goroutines is the frontend's go_goroutines gauge.
	Goroutines int
	// RSSBytes is the frontend's process_resident_memory_bytes.
	RSSBytes int64 // bytes
	Engines  []EngineSnapshot
}

// EngineSnapshot is one engine in GET /v1/engines.
type EngineSnapshot struct {
	Index        int     `json:"index"`
	State        string  `json:"state"` // "ready" or "unavailable"
	NumRunning   int     `json:"num_requests_running"`
	NumWaiting   int     `json:"num_requests_waiting"`
	NumInFlight  int     `json:"num_in_flight"` // this frontend's unfinished requests on it
	KVCacheUsage float64 `json:"kv_cache_usage"`
}

// Idle reports whether every engine is ready and holds no request and no KV block.
func (s Snapshot) Idle() bool {
	for _, e := range s.Engines {
		if e.State != "ready" || e.NumRunning != 0 || e.NumWaiting != 0 || e.NumInFlight != 0 || e.KVCacheUsage != 0 {
			return false
		}
	}
	return len(s.Engines) > 0
}

// String is a one-line summary for logs and failure messages.
func (s Snapshot) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goroutines=%d rss=%dMiB", s.Goroutines, s.RSSBytes>>20)
	for _, e := range s.Engines {
		fmt.Fprintf(&b, " engine%d[%s running=%d waiting=%d in_flight=%d kv=%.4f]", e.Index, e.State,
			e.NumRunning, e.NumWaiting, e.NumInFlight, e.KVCacheUsage)
	}
	return b.String()
}

// Scrape reads GET /metrics and GET /v1/engines. apiKey, if set, is sent as a bearer
// token (/v1/engines needs it when the server has one).
func Scrape(ctx context.Context, hc *http.Client, baseURL, apiKey string) (Snapshot, error) {
	var s Snapshot
	metrics, err := get(ctx, hc, baseURL+"/metrics", apiKey)
	if err != nil {
		return s, err
	}
	vals := parseMetrics(metrics, "go_goroutines", "process_resident_memory_bytes")
	s.Goroutines, s.RSSBytes = int(vals["go_goroutines"]), int64(vals["process_resident_memory_bytes"])
	body, err := get(ctx, hc, baseURL+"/v1/engines", apiKey)
	if err != nil {
		return s, err
	}
	var list struct {
		Data []EngineSnapshot `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return s, fmt.Errorf("soak: GET /v1/engines: %w", err)
	}
	s.Engines = list.Data
	return s, nil
}

func get(ctx context.Context, hc *http.Client, url, apiKey string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("soak: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("soak: GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("soak: GET %s: status %d", url, resp.StatusCode)
	}
	return body, nil
}

// parseMetrics returns the values of unlabelled samples named in names from the
// Prometheus text format.
func parseMetrics(text []byte, names ...string) map[string]float64 {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(text)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// WaitIdle polls the server until it is idle (Snapshot.Idle) with at most
// maxGoroutines goroutines in the frontend, or until within has passed. It returns the
// last snapshot and whether the server got there.
func WaitIdle(ctx context.Context, hc *http.Client, baseURL, apiKey string, maxGoroutines int, within time.Duration) (Snapshot, bool) {
	deadline := time.Now().Add(within)
	var last Snapshot
	for {
		s, err := Scrape(ctx, hc, baseURL, apiKey)
		if err == nil {
			last = s
			if s.Idle() && s.Goroutines <= maxGoroutines {
				return s, true
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return last, false
		}
		if tr, ok := hc.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections() // our own idle keep-alives hold server goroutines
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
