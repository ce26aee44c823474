package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/batch"
)

// echoHandler answers 200 with {"url", "n"} (n from the body), 400 when
// the body has "bad", and counts requests in flight.
type echoHandler struct {
	inFlight, maxInFlight atomic.Int64
}

func (h *echoHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	for {
		m := h.maxInFlight.Load()
		if n <= m || h.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Millisecond)
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("X-Request-Id", fmt.Sprint("rid-", body["n"]))
	w.Header().Set("Content-Type", "application/json")
	if body["bad"] != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"url": r.URL.Path, "n": body["n"]})
}

func TestRunTwoHundredLines(t *testing.T) {
	var in strings.Builder
	invalid := map[int]string{
		17:  `{"custom_id":"c17","method":"POST","url":"/v1/chat/completions","body":`, // truncated JSON
		42:  `not json at all`,
		99:  `{"custom_id":"c99","method":"GET","url":"/v1/completions","body":{}}`,
		120: `{"custom_id":"c120","method":"POST","url":"/v1/rerank","body":{}}`,
		150: `{"method":"POST","url":"/v1/completions","body":{}}`,
		170: `{"custom_id":"c170","method":"POST","url":"/v1/completions","body":{"stream":true}}`,
		185: `{"custom_id":"c185","method":"POST","url":"/v1/completions","body":[1]}`,
	}
	urls := []string{"/v1/chat/completions", "/v1/completions", "/v1/responses"}
	for i := range 200 {
		if line, ok := invalid[i]; ok {
			in.WriteString(line + "\n")
			continue
		}
		body := fmt.Sprintf(`{"n":%d}`, i)
		if i == 60 {
			body = `{"n":60,"bad":true}`
		}
		fmt.Fprintf(&in, `{"custom_id":"c%d","method":"POST","url":"%s","body":%s}`+"\n", i, urls[i%3], body)
		if i == 10 {
			in.WriteString("\n   \n") // blank lines are skipped
		}
	}
	h := &echoHandler{}
	var out, progress bytes.Buffer
	sum, err := batch.Run(context.Background(), h, strings.NewReader(in.String()), &out, batch.Options{Concurrency: 8, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(batch.Summary{NumLines: 200, NumSucceeded: 192, NumFailed: 8}, sum); diff != "" {
		t.Fatalf("summary (-want +got):\n%s", diff)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d result lines, want 200", len(lines))
	}
	ids := map[string]bool{}
	for i, line := range lines {
		var r batch.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if !strings.HasPrefix(r.ID, "batch_req_") || ids[r.ID] {
			t.Fatalf("line %d: id %q", i, r.ID)
		}
		ids[r.ID] = true
		_, isInvalid := invalid[i]
		switch {
		case isInvalid:
			if r.Error == nil || r.Response != nil {
				t.Fatalf("line %d: invalid line without an error: %s", i, line)
			}
		case i == 60:
			if r.Error != nil || r.Response.StatusCode != 400 || !strings.Contains(string(r.Response.Body), `"message":"bad"`) {
				t.Fatalf("line 60: %s", line)
			}
		default:
			want := fmt.Sprintf(`{"n":%d,"url":"%s"}`, i, urls[i%3])
			if r.CustomID != fmt.Sprintf("c%d", i) || r.Response.StatusCode != 200 || r.Response.RequestID != fmt.Sprint("rid-", i) ||
				string(r.Response.Body) != want+"\n" && string(r.Response.Body) != want {
				t.Fatalf("line %d out of order or wrong: %s", i, line)
			}
		}
	}
	if m := h.maxInFlight.Load(); m < 2 || m > 8 {
		t.Fatalf("max in flight %d, want 2..8", m)
	}
	if !strings.Contains(progress.String(), "200/200 lines, 8 failed") {
		t.Fatalf("progress %q", progress.String())
	}
}

func TestRunKeepsCustomIDOfAnInvalidLine(t *testing.T) {
	var out bytes.Buffer
	in := `{"custom_id":"x1","method":"POST","url":"/v1/nope","body":{}}` + "\n"
	if _, err := batch.Run(context.Background(), &echoHandler{}, strings.NewReader(in), &out, batch.Options{}); err != nil {
		t.Fatal(err)
	}
	var r batch.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.CustomID != "x1" || r.Error == nil || r.Error.Code != "invalid_request" || !strings.Contains(out.String(), `"response":null`) {
		t.Fatalf("%s", out.String())
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := strings.Repeat(`{"custom_id":"a","method":"POST","url":"/v1/completions","body":{}}`+"\n", 50)
	if _, err := batch.Run(ctx, &echoHandler{}, strings.NewReader(in), &bytes.Buffer{}, batch.Options{Concurrency: 1}); err == nil {
		t.Fatal("a cancelled batch returned no error")
	}
}
