package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeServer answers like a Tandem frontend; mode picks how completions go wrong after
// the first one (Run's warm-up), or from the start with failWarmUp.
type fakeServer struct {
	mode       string
	failWarmUp bool
	numServed  atomic.Int64 // completion requests
	inFlight   atomic.Int64
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"data":[{"id":"dummy"}]}`)
		return
	case "/metrics":
		fmt.Fprintf(w, "# HELP go_goroutines x\ngo_goroutines %d\nprocess_resident_memory_bytes 1.048576e+07\nvllm:kv_cache_usage_perc{engine=\"0\"} 0\n", 10+f.inFlight.Load())
		return
	case "/v1/engines":
		fmt.Fprintf(w, `{"data":[{"index":0,"state":"ready","num_requests_running":%d,"kv_cache_usage":0}]}`, f.inFlight.Load())
		return
	}
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	var body strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		body.Write(buf[:n])
		if err != nil {
			break
		}
	}
	bad := invalid(r.URL.Path, []byte(body.String()))
	if bad {
		http.Error(w, `{"error":{"message":"bad"}}`, http.StatusBadRequest)
		return
	}
	mode := f.mode
	if f.numServed.Add(1) == 1 && !f.failWarmUp {
		mode = ""
	}
	switch mode {
	case "500":
		http.Error(w, `{"error":{}}`, http.StatusInternalServerError)
		return
	case "429":
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{}}`, http.StatusTooManyRequests)
		return
	}
	if !strings.Contains(body.String(), `"stream":true`) {
		fmt.Fprint(w, `{"choices":[{"text":"ok"}],"usage":{"completion_tokens":2}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i := range 3 {
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\",\"delta\":{\"content\":\"c\"}}]}\n\n", i)
		w.(http.Flusher).Flush()
	}
	switch mode {
	case "dead":
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"engineclient: engine core is not available: engine 0\",\"code\":null}}\n\ndata: [DONE]\n\n")
	case "cut":
	case "hang":
		<-r.Context().Done()
	default:
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}
}

// invalid is a small model of the server's validation, enough for badRequest's bodies.
func invalid(path string, body []byte) bool {
	var v map[string]any
	if json.Unmarshal(body, &v) != nil || v["model"] != "dummy" || path == "/tokenize" {
		return true
	}
	num := func(k string) (float64, bool) { x, ok := v[k].(float64); return x, ok }
	if x, ok := num("max_tokens"); ok && x < 1 {
		return true
	}
	if x, ok := num("temperature"); ok && x < 0 {
		return true
	}
	if x, ok := num("n"); ok && x < 1 {
		return true
	}
	if s, _ := v["session_id"].(string); len(s) > 256 {
		return true
	}
	if p, _ := v["prompt"].(string); len(p) > 10000 {
		return true
	}
	if _, ok := v["input"]; ok {
		_, isString := v["input"].(string)
		return !isString
	}
	if path == "/v1/chat/completions" {
		msgs, _ := v["messages"].([]any)
		if len(msgs) == 0 {
			return true
		}
		for _, m := range msgs {
			if role := m.(map[string]any)["role"]; role != "system" && role != "user" && role != "assistant" {
				return true
			}
		}
	}
	return false
}

func TestRunClassifies(t *testing.T) {
	tests := []struct {
		mode      string
		wantClass Class // what some good requests become
		wantFail  bool
	}{
		{"", ClassOK, false},
		{"500", ClassServer5xx, true},
		{"429", ClassOverload429, true}, // only the warm-up succeeds: "no request succeeded"
		{"dead", ClassUnavailable503, false},
		{"cut", ClassStreamError, true},
		{"hang", ClassTimeout, true},
	}
	for _, tt := range tests {
		t.Run("mode="+tt.mode, func(t *testing.T) {
			srv := httptest.NewServer(&fakeServer{mode: tt.mode})
			defer srv.Close()
			rep, err := Run(context.Background(), Config{BaseURL: srv.URL, NumClients: 4, Duration: 300 * time.Millisecond,
				RequestTimeout: 200 * time.Millisecond, IdleWithin: 2 * time.Second, Seed: 7,
				Mix: Mix{Stream: 1, Session: 1, Cancel: 1, NonStream: 1, Bad: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ByClass[tt.wantClass] == 0 {
				t.Errorf("requests %v, want some %s", rep.ByClass, tt.wantClass)
			}
			if rep.ByKind[KindBad][ClassRejected] == 0 || rep.ByKind[KindBad][ClassBadAccepted] != 0 {
				t.Errorf("bad requests %v, want all rejected", rep.ByKind[KindBad])
			}
			if got := len(rep.Failures(Limits{})) > 0; got != tt.wantFail {
				t.Errorf("failures %q, want some: %v", rep.Failures(Limits{}), tt.wantFail)
			}
			if !rep.Idle || rep.Leaks() != 0 {
				t.Errorf("idle %v, leaks %d after %s", rep.Idle, rep.Leaks(), rep.After)
			}
			var md strings.Builder
			if err := rep.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| requests |") {
				t.Errorf("WriteMarkdown: %v\n%s", err, md.String())
			}
		})
	}
}

func TestRunNeedsAHealthyServer(t *testing.T) {
	srv := httptest.NewServer(&fakeServer{mode: "500", failWarmUp: true})
	defer srv.Close()
	if _, err := Run(context.Background(), Config{BaseURL: srv.URL, NumClients: 1, Duration: time.Millisecond}); err == nil {
		t.Fatal("Run succeeded against a server that fails its warm-up")
	}
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		xs   []time.Duration
		p    int
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(5), 99, 5 * time.Millisecond},
		{"median of 4", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(make([]int, 99)...), 99, 0},
		{"p99 picks the tail", append(ms(make([]int, 98)...), ms(7, 9)...), 99, 7 * time.Millisecond},
		{"p100", ms(1, 9, 3), 100, 9 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.xs, tt.p); got != tt.want {
				t.Errorf("percentile = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseMetrics(t *testing.T) {
	text := "# TYPE go_goroutines gauge\ngo_goroutines 42\ngo_goroutines_total{x=\"1\"} 7\nprocess_resident_memory_bytes 3.2e+07\n"
	got := parseMetrics([]byte(text), "go_goroutines", "process_resident_memory_bytes", "missing")
	want := map[string]float64{"go_goroutines": 42, "process_resident_memory_bytes": 3.2e7}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseMetrics (-want +got):\n%s", diff)
	}
}

func TestProcessTreeAndRSS(t *testing.T) {
	procs := ProcessTree(os.Getpid())
	if len(procs) == 0 || procs[0].PID != os.Getpid() {
		t.Fatalf("ProcessTree(self) = %v", procs)
	}
	rss, err := RSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("RSS(self) = %d, %v", rss, err)
	}
	if got := ProcessTree(1 << 30); len(got) != 0 {
		t.Errorf("ProcessTree(no such pid) = %v", got)
	}
}
