package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// TestResumableStream: a chat stream with X-Conversation-Id is kept:
// GET /v1/stream replays its bytes from any offset, lookup lists it,
// DELETE forgets it; a request that does not stream leaves nothing.
func TestResumableStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hello!", wire.FinishStop, 259) }}
	ts := newTestServer(t, f, "")
	conv := map[string]string{"X-Conversation-Id": "conv-1::org/model"}
	code, body := do(t, ts, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true}`, conv)
	if code != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream: %d %s", code, body)
	}
	q := "/v1/stream?conv_id=conv-1%3A%3Aorg%2Fmodel"
	if code, got := do(t, ts, "GET", q+"&from=0", "", nil); code != 200 || got != body {
		t.Errorf("replay from 0: %d\n%s\nwant\n%s", code, got, body)
	}
	if _, got := do(t, ts, "GET", q+"&from=10", "", nil); got != body[10:] {
		t.Errorf("replay from 10: %q, want %q", got, body[10:])
	}
	code, list := do(t, ts, "POST", "/v1/streams/lookup", `{"conversation_ids":["conv-1","nobody"]}`, nil)
	var infos []streamInfo
	if err := json.Unmarshal([]byte(list), &infos); code != 200 || err != nil || len(infos) != 1 || infos[0].ConversationID != "conv-1::org/model" ||
		!infos[0].IsDone || infos[0].TotalBytes != len(body) || infos[0].CompletedAt < infos[0].StartedAt {
		t.Errorf("lookup: %d %s", code, list)
	}
	if code, _ := do(t, ts, "DELETE", q, "", nil); code != http.StatusNoContent {
		t.Errorf("DELETE: %d, want 204", code)
	}
	if code, _ := do(t, ts, "GET", q, "", nil); code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d, want 404", code)
	}
	if code, _ := do(t, ts, "DELETE", q, "", nil); code != http.StatusNoContent {
		t.Errorf("DELETE again: %d, want 204", code)
	}

	// Not a stream: no session.
	do(t, ts, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Conversation-Id": "plain"})
	if code, _ := do(t, ts, "GET", "/v1/stream?conv_id=plain", "", nil); code != http.StatusNotFound {
		t.Errorf("a non-streamed request left a session: %d", code)
	}
	for path, param := range map[string]string{"/v1/stream": "conv_id", "/v1/stream?conv_id=conv-1::org/model&from=x": "from"} {
		if path != "/v1/stream" {
			do(t, ts, "POST", "/completion", `{"prompt":"hi","stream":true,"n_predict":2}`, conv)
		}
		if code, body := do(t, ts, "GET", path, "", nil); code != http.StatusBadRequest || !strings.Contains(body, `"param":"`+param+`"`) {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
}

// TestResumableStreamSurvivesTheClient: the client of a stream with
// X-Conversation-Id leaves; the generation goes on (the engine request
// is not aborted) and a reader that comes back gets the whole answer,
// following it live. A DELETE stops a stream still generating.
func TestResumableStreamSurvivesTheClient(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hello!", wire.FinishStop, 259) },
		hold: make(chan struct{})}
	ts := newTestServer(t, f, "")
	ctx, leave := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"hi","stream":true,"max_tokens":7}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Conversation-Id", "c2")
	go func() { // the engine holds the answer: the client waits, then leaves
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(f.requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no engine request")
		}
	}
	leave()
	time.Sleep(20 * time.Millisecond) // the server sees the connection close
	back := make(chan string, 1)
	go func() {
		_, body := do(t, ts, "GET", "/v1/stream?conv_id=c2&from=0", "", nil)
		back <- body
	}()
	close(f.hold)
	select {
	case body := <-back:
		if !strings.Contains(body, `"text":"!"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") || len(f.abortedIDs()) != 0 {
			t.Errorf("after the client left: %s (aborted %v)", body, f.abortedIDs())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not finish without its client")
	}

	// DELETE stops a stream that is still generating.
	g := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("long story", wire.FinishLength) },
		hold: make(chan struct{})}
	defer close(g.hold)
	ts2 := newTestServer(t, g, "")
	req2, _ := http.NewRequest("POST", ts2.URL+"/completion", strings.NewReader(`{"prompt":"hi","stream":true}`))
	req2.Header.Set("X-Conversation-Id", "c3")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req2); err == nil {
			_, _ = bufio.NewReader(resp.Body).ReadString(0)
			resp.Body.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(g.requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no engine request")
		}
	}
	if code, _ := do(t, ts2, "DELETE", "/v1/stream?conv_id=c3", "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("DELETE did not end the stream")
	}
	for deadline := time.Now().Add(10 * time.Second); len(g.abortedIDs()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("DELETE did not abort the engine request")
		}
	}
}

// TestStreamSessions: the session store's rules, on a clock of its own:
// the cap drops the oldest bytes (an offset below them is lost), a new
// stream of an id stops the old one, and ended sessions go after the TTL.
func TestStreamSessions(t *testing.T) {
	var ss streamSessions
	now := time.Unix(1000, 0)
	stopped := 0
	a := ss.create("a", now, func() { stopped++ })
	a.append(make([]byte, streamSessionMaxBytes-10))
	a.append([]byte("0123456789abcdef")) // 6 bytes over the cap
	if b, lost, _, _ := a.from(0); !lost || b != nil {
		t.Errorf("offset 0 after the cap: lost %v", lost)
	}
	if b, lost, _, _ := a.from(streamSessionMaxBytes); lost || string(b) != "abcdef" {
		t.Errorf("the tail: %q lost %v", b, lost)
	}
	ss.create("a", now, func() {})
	if b, _, done, _ := a.from(streamSessionMaxBytes); !done || stopped != 1 || string(b) != "abcdef" {
		t.Errorf("replaced: done %v, stopped %d", done, stopped)
	}
	ss.get("a", now).finish(now)
	if ss.get("a", now.Add(streamSessionTTL-time.Second)) == nil {
		t.Error("an ended session went before its TTL")
	}
	if ss.get("a", now.Add(streamSessionTTL)) != nil {
		t.Error("an ended session outlived its TTL")
	}
}
