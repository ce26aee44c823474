package server

import (
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

// TestBackgroundErrors: background needs store (vLLM's message), and is
// not streamed.
func TestBackgroundErrors(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "")
	for _, tc := range []struct{ body, want string }{
		{`{"input":"x","background":true,"store":false}`, "background can only be used when `store` is true"},
		{`{"input":"x","background":true,"stream":true}`, "background with stream is not supported"},
	} {
		code, body := do(t, ts, http.MethodPost, "/v1/responses", tc.body, nil)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) || !strings.Contains(body, `"param":"background"`) {
			t.Errorf("%s: %d %s", tc.body, code, body)
		}
	}
}
