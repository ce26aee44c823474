package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSessionResolutionEndToEnd sends each row of the session_id rules (docs/api.md) through
// both processes and observes, via GET /v1/sessions/{id}, which id the
// engine core recorded.
func TestSessionResolutionEndToEnd(t *testing.T) {
	s := startSplit(t)
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	id := func(name string) string { return name + "-" + run }
	tests := []struct {
		name    string
		body    map[string]any
		headers map[string]string
		want    string   // session the engine must know ("" = none)
		absent  []string // sessions the engine must not know
	}{
		{name: "body and header: body wins", body: map[string]any{"session_id": id("b1")}, headers: map[string]string{"X-Session-ID": id("h1")}, want: id("b1"), absent: []string{id("h1")}},
		{name: "header only", headers: map[string]string{"x-session-id": id("h2")}, want: id("h2")},
		{name: "xargs only", body: map[string]any{"vllm_xargs": map[string]any{"session_id": id("x3")}}, want: id("x3")},
		{name: "empty body is absent", body: map[string]any{"session_id": ""}, headers: map[string]string{"X-Session-ID": id("h4")}, want: id("h4")},
		{name: "header beats xargs", body: map[string]any{"vllm_xargs": map[string]any{"session_id": id("x5")}}, headers: map[string]string{"X-Session-ID": id("h5")}, want: id("h5"), absent: []string{id("x5")}},
		{name: "correlation id is not a source", headers: map[string]string{"X-Correlation-ID": id("c6")}, absent: []string{id("c6")}},
		{name: "non-string xargs is none", body: map[string]any{"vllm_xargs": map[string]any{"session_id": 42}}, absent: []string{"42"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Long enough to fill a KV block: an engine keeps a session's record while it caches some of it.
			body := map[string]any{"model": "dummy", "messages": []map[string]any{{"role": "user", "content": "hello, tell me of the sea and the sky"}}, "max_tokens": 2}
			for k, v := range tc.body {
				body[k] = v
			}
			code, resp := postJSON(t, s.base+"/v1/chat/completions", body, tc.headers)
			if code != http.StatusOK {
				t.Fatalf("status %d: %v", code, resp)
			}
			if tc.want != "" {
				code, sess := getJSON(t, s.base+"/v1/sessions/"+tc.want)
				if code != http.StatusOK {
					t.Fatalf("GET session %q: %d %v", tc.want, code, sess)
				}
				if got := sess["num_requests"].(float64); got != 1 {
					t.Fatalf("session %q num_requests = %v, want 1", tc.want, got)
				}
			}
			for _, a := range tc.absent {
				if code, _ := getJSON(t, s.base+"/v1/sessions/"+a); code != http.StatusNotFound {
					t.Fatalf("session %q: status %d, want 404", a, code)
				}
			}
		})
	}

	t.Run("invalid session id is 400", func(t *testing.T) {
		body := map[string]any{"model": "dummy", "messages": []map[string]any{{"role": "user", "content": "hi"}}, "session_id": strings.Repeat("x", 257)}
		code, resp := postJSON(t, s.base+"/v1/chat/completions", body, nil)
		if code != http.StatusBadRequest {
			t.Fatalf("status %d, want 400: %v", code, resp)
		}
		e := resp["error"].(map[string]any)
		if e["param"] != "session_id" {
			t.Fatalf("error %v, want param session_id", e)
		}
	})

	t.Run("n=3 children carry the session", func(t *testing.T) {
		sid := id("n3")
		body := map[string]any{"model": "dummy", "prompt": "abc def ghi jkl mno pqr stu vwx", "max_tokens": 3, "n": 3, "session_id": sid, "ignore_eos": true}
		code, resp := postJSON(t, s.base+"/v1/completions", body, nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %v", code, resp)
		}
		if n := len(resp["choices"].([]any)); n != 3 {
			t.Fatalf("%d choices, want 3", n)
		}
		_, sess := getJSON(t, s.base+"/v1/sessions/"+sid)
		ids := sess["engines"].([]any)[0].(map[string]any)["recent_request_ids"].([]any)
		seen := map[string]bool{}
		for _, x := range ids {
			seen[x.(string)] = true
		}
		if len(ids) != 3 || len(seen) != 3 {
			t.Fatalf("engine saw request ids %v, want 3 distinct", ids)
		}
		for i := range 3 {
			if !strings.HasPrefix(ids[i].(string), fmt.Sprintf("%d_", i)) {
				t.Fatalf("child id %q, want prefix %d_", ids[i], i)
			}
		}
	})

	t.Run("delete ends the session", func(t *testing.T) {
		sid := id("del")
		body := map[string]any{"model": "dummy", "prompt": "abc def ghi jkl mno pqr stu vwx", "max_tokens": 1, "session_id": sid}
		if code, resp := postJSON(t, s.base+"/v1/completions", body, nil); code != http.StatusOK {
			t.Fatalf("status %d: %v", code, resp)
		}
		req, _ := http.NewRequest(http.MethodDelete, s.base+"/v1/sessions/"+sid, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE: %v %v", err, resp)
		}
		resp.Body.Close()
		if code, _ := getJSON(t, s.base+"/v1/sessions/"+sid); code != http.StatusNotFound {
			t.Fatalf("after DELETE: status %d, want 404", code)
		}
	})
}

// streamRequest starts a long streaming completion and returns the open
// response after its first event arrived.
func streamRequest(t *testing.T, base, sid string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, r, err := openStream(base, sid)
	if err != nil {
		t.Fatal(err)
	}
	return resp, r
}

// openStream is streamRequest for goroutines: it returns the error.
func openStream(base, sid string) (*http.Response, *bufio.Reader, error) {
	return openStreamBody(base, map[string]any{"model": "dummy", "prompt": "tell me a long story", "max_tokens": 900, "ignore_eos": true, "stream": true, "session_id": sid})
}

// openStreamBody posts body to /v1/completions and returns the open
// stream after its first event arrived.
func openStreamBody(base string, body map[string]any) (*http.Response, *bufio.Reader, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			return nil, nil, fmt.Errorf("reading first event: %w", err)
		}
		if strings.HasPrefix(line, "data: ") {
			return resp, r, nil
		}
	}
}

// TestEngineKilledMidStream: the client gets a clean error, not a hang.
func TestEngineKilledMidStream(t *testing.T) {
	s := startSplit(t)
	resp, r := streamRequest(t, s.base, "")
	defer resp.Body.Close()
	s.engine.signal(syscall.SIGKILL)
	done := make(chan []string, 1)
	go func() {
		ev, _ := sseEvents(r)
		done <- ev
	}()
	select {
	case ev := <-done:
		if len(ev) < 2 || ev[len(ev)-1] != "[DONE]" || !strings.Contains(ev[len(ev)-2], `"error"`) {
			t.Fatalf("stream ended with %q, want an error event then [DONE]", tail(ev, 2))
		}
		if !strings.Contains(ev[len(ev)-2], "503") && !strings.Contains(ev[len(ev)-2], "engine") {
			t.Fatalf("error event %s does not say the engine failed", ev[len(ev)-2])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stream still open 20 s after the engine was killed")
	}
	// New requests fail fast with 503 while no engine is alive.
	code, body := postJSON(t, s.base+"/v1/completions", map[string]any{"model": "dummy", "prompt": "x", "max_tokens": 1}, nil)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("after the engine died: status %d %v, want 503", code, body)
	}
}

// TestClientDisconnectFreesRequest: a streaming client that goes away
// frees its request in the engine core.
func TestClientDisconnectFreesRequest(t *testing.T) {
	s := startSplit(t)
	sid := fmt.Sprintf("gone-%d", time.Now().UnixNano())
	resp, _ := streamRequest(t, s.base, sid)
	_, sess := getJSON(t, s.base+"/v1/sessions/"+sid)
	if sess["engines"].([]any)[0].(map[string]any)["num_running"].(float64) != 1 {
		t.Fatalf("session %v: want 1 running request", sess)
	}
	resp.Body.Close() // the client goes away
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, sess = getJSON(t, s.base+"/v1/sessions/"+sid)
		if sess["engines"].([]any)[0].(map[string]any)["num_running"].(float64) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("request still running in the engine 10 s after the client left: %v", sess)
}

func tail(s []string, n int) []string {
	if len(s) < n {
		return s
	}
	return s[len(s)-n:]
}

// TestFrontendKilledMidStream: a frontend that dies loses nothing on the
// engine: its requests are aborted after the heartbeat timeout and their
// KV blocks freed, as a second frontend observes.
func TestFrontendKilledMidStream(t *testing.T) {
	s := startSplit(t)
	sid := fmt.Sprintf("orphan-%d", time.Now().UnixNano())
	resp, _ := streamRequest(t, s.base, sid)
	defer resp.Body.Close()
	s.frontend.signal(syscall.SIGKILL)

	port := freePort(t)
	fe2 := startProc(t, "frontend", "--engines", s.endpoint, "--port", fmt.Sprint(port), "--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms")
	base2 := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base2, fe2)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, sess := getJSON(t, base2+"/v1/sessions/"+sid)
		if sess["engines"].([]any)[0].(map[string]any)["num_running"].(float64) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead frontend's request still runs: %v", sess)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
