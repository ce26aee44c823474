package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// waitStatus polls GET /v1/responses/{id} until its status is want.
func waitStatus(t *testing.T, ts *httptest.Server, id, want string) responseBody {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := do(t, ts, http.MethodGet, "/v1/responses/"+id, "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", id, code, body)
		}
		r := decodeResponse(t, body)
		if r.Status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %q, want %q: %s", r.Status, want, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBackgroundResponse: background true answers at once with status
// queued (and background true); the response generates on without the
// request and GET shows it completed, with its output and usage.
func TestBackgroundResponse(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hi!", wire.FinishStop, 259) },
		hold: make(chan struct{})}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"hello","background":true}`, nil)
	if code != http.StatusOK || !strings.Contains(body, `"background":true`) {
		t.Fatalf("%d %s", code, body)
	}
	r := decodeResponse(t, body)
	if r.Status != "queued" || len(r.Output) != 0 {
		t.Fatalf("created: %+v", r)
	}
	waitStatus(t, ts, r.ID, "in_progress")
	close(f.hold)
	done := waitStatus(t, ts, r.ID, "completed")
	if len(done.Output) != 1 || done.Output[0].Content[0].Text != "Hi!" || done.Usage.OutputTokens != 4 {
		t.Fatalf("completed: %+v", done)
	}
	// A finished response cannot be cancelled.
	code, body = do(t, ts, http.MethodPost, "/v1/responses/"+r.ID+"/cancel", "", nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "Cannot cancel a synchronous response.") {
		t.Fatalf("cancel completed: %d %s", code, body)
	}
	// It continues a conversation like any stored response.
	code, body = do(t, ts, http.MethodPost, "/v1/responses", `{"input":"more","previous_response_id":"`+r.ID+`"}`, nil)
	if code != http.StatusOK {
		t.Fatalf("follow-up: %d %s", code, body)
	}
}

// TestBackgroundCancel: cancel stops a background response still
// generating (the engine request is aborted) and its status stays
// cancelled.
func TestBackgroundCancel(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("story", wire.FinishLength) },
		hold: make(chan struct{})}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"Write a long story.","background":true}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	id := decodeResponse(t, body).ID
	code, body = do(t, ts, http.MethodPost, "/v1/responses/"+id+"/cancel", "", nil)
	if code != http.StatusOK || decodeResponse(t, body).Status != "cancelled" {
		t.Fatalf("cancel: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(f.abortedIDs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the engine request was not aborted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(f.hold)
	if r := waitStatus(t, ts, id, "cancelled"); len(r.Output) != 0 {
		t.Fatalf("cancelled response has output: %+v", r)
	}
	if code, body := do(t, ts, http.MethodPost, "/v1/responses/resp_unknown/cancel", "", nil); code != http.StatusNotFound {
		t.Fatalf("cancel unknown: %d %s", code, body)
	}
}

// TestBackgroundErrors: background needs store (vLLM's message); GET's
// stream and starting_after are checked, and a stream of a response that
// has no events is vLLM's 400.
func TestBackgroundErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hi!", wire.FinishStop) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"x","background":true,"store":false}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "background can only be used when `store` is true") || !strings.Contains(body, `"param":"background"`) {
		t.Errorf("background without store: %d %s", code, body)
	}
	code, body = do(t, ts, http.MethodPost, "/v1/responses", `{"input":"x"}`, nil)
	if code != http.StatusOK {
		t.Fatalf("a stored response: %d %s", code, body)
	}
	id := decodeResponse(t, body).ID
	// vLLM's test_cancel_completed: a synchronous response cannot be cancelled.
	if code, body := do(t, ts, http.MethodPost, "/v1/responses/"+id+"/cancel", "", nil); code != http.StatusBadRequest || !strings.Contains(body, "Cannot cancel a synchronous response.") {
		t.Errorf("cancel a synchronous response: %d %s", code, body)
	}
	for _, tc := range []struct{ query, param string }{
		{"?stream=true", "response_id"}, // stored, but not a streamed background response
		{"?stream=maybe", "stream"},
		{"?stream=true&starting_after=-2", "starting_after"},
		{"?stream=true&starting_after=x", "starting_after"},
	} {
		if code, body := do(t, ts, http.MethodGet, "/v1/responses/"+id+tc.query, "", nil); code != http.StatusBadRequest || !strings.Contains(body, `"param":"`+tc.param+`"`) {
			t.Errorf("GET %s: %d %s, want 400 on %s", tc.query, code, body, tc.param)
		}
	}
}

// sseNames are the event names and sequence numbers of a Responses SSE body.
func sseNames(t *testing.T, body string) (names []string, seqs []int) {
	t.Helper()
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		name, data, _ := strings.Cut(block, "\ndata: ")
		var ev struct {
			SequenceNumber int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", block, err)
		}
		names = append(names, strings.TrimPrefix(name, "event: "))
		seqs = append(seqs, ev.SequenceNumber)
	}
	return names, seqs
}

// TestBackgroundStream: background with stream streams the response to
// the request that started it while it generates in the background (an
// event log, as vLLM's event_store); GET ?stream=true replays the same
// events, from the start or after a sequence number, and the stored
// response completes.
func TestBackgroundStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hi there", wire.FinishStop, 259) }}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"hello","background":true,"stream":true}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	names, seqs := sseNames(t, body)
	if len(names) < 5 || names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Fatalf("events %v", names)
	}
	for i, n := range seqs {
		if n != i {
			t.Fatalf("sequence numbers %v", seqs)
		}
	}
	var created struct {
		Response struct {
			ID, Status string
			Background bool
		}
	}
	_ = json.Unmarshal([]byte(body[strings.Index(body, "data: ")+6:strings.Index(body, "\n\n")]), &created)
	id := created.Response.ID
	if !strings.HasPrefix(id, "resp_") || !created.Response.Background || created.Response.Status != "in_progress" {
		t.Fatalf("response.created: %+v", created.Response)
	}
	if r := waitStatus(t, ts, id, "completed"); r.Output[0].Content[0].Text != "Hi there" {
		t.Fatalf("stored: %+v", r)
	}
	_, again := do(t, ts, http.MethodGet, "/v1/responses/"+id+"?stream=true", "", nil)
	if again != body {
		t.Errorf("GET ?stream=true replays other events:\n%s\nwant\n%s", again, body)
	}
	_, rest := do(t, ts, http.MethodGet, "/v1/responses/"+id+"?stream=true&starting_after=2", "", nil)
	if names2, seqs2 := sseNames(t, rest); len(names2) != len(names)-3 || seqs2[0] != 3 || names2[len(names2)-1] != "response.completed" {
		t.Errorf("starting_after=2: %v %v", names2, seqs2)
	}
}

// TestBackgroundStreamDetached: the client that started a streamed
// background response may leave; the response generates on, a GET
// ?stream=true that came while it waited streams the rest live.
func TestBackgroundStreamDetached(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hi!", wire.FinishStop, 259) },
		hold: make(chan struct{})}
	ts := newTestServer(t, f, "")
	ctx, leave := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(`{"input":"hello","background":true,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || first != "event: response.created\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	leave() // the client goes; the response does not
	resp.Body.Close()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == ""; time.Sleep(5 * time.Millisecond) {
		f.mu.Lock()
		if len(f.reqs) > 0 {
			id = f.reqs[0].ExternalReqID // the response's id
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no engine request")
		}
	}
	live := make(chan string, 1)
	go func() {
		_, body := do(t, ts, http.MethodGet, "/v1/responses/"+id+"?stream=true&starting_after=0", "", nil)
		live <- body
	}()
	time.Sleep(50 * time.Millisecond) // the GET waits for events
	close(f.hold)
	select {
	case body := <-live:
		if names, seqs := sseNames(t, body); seqs[0] != 1 || names[len(names)-1] != "response.completed" {
			t.Errorf("live GET: %v %v", names, seqs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the live GET did not end with the response")
	}
	waitStatus(t, ts, id, "completed")
}

// TestBackgroundStreamCancel: cancelling a streamed background response
// ends the streams that read it.
func TestBackgroundStreamCancel(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("story", wire.FinishLength) },
		hold: make(chan struct{})}
	defer close(f.hold)
	ts := newTestServer(t, f, "")
	ended := make(chan string, 1)
	go func() {
		_, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"Write a long story.","background":true,"stream":true}`, nil)
		ended <- body
	}()
	for deadline := time.Now().Add(10 * time.Second); len(f.requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no engine request")
		}
	}
	id := f.requests()[0].ExternalReqID
	if code, body := do(t, ts, http.MethodPost, "/v1/responses/"+id+"/cancel", "", nil); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, body)
	}
	select {
	case body := <-ended:
		if names, _ := sseNames(t, body); names[len(names)-1] == "response.completed" {
			t.Errorf("a cancelled stream completed: %v", names)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with the cancel")
	}
	waitStatus(t, ts, id, "cancelled")
}
