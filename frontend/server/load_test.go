package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestServerLoad: vLLM's GET /load counts the requests in flight on the
// engine routes — one while a completion waits on its engine, none once
// it is answered — and not those of other routes.
func TestServerLoad(t *testing.T) {
	f := &fakeEngine{hold: make(chan struct{}), script: func(req *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return []wire.EngineCoreOutput{{RequestID: req.RequestID, NewTokenIDs: []int32{'x'}, FinishReason: wire.FinishLength}}
	}}
	ts := newTestServerWith(t, f, nil, tokenizer.NewByte())
	load := func() int64 {
		t.Helper()
		code, body := do(t, ts, "GET", "/load", "", nil)
		var v struct {
			ServerLoad int64 `json:"server_load"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 {
			t.Fatalf("/load: %d %s", code, body)
		}
		return v.ServerLoad
	}
	if n := load(); n != 0 {
		t.Fatalf("idle: server_load %d", n)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		do(t, ts, "POST", "/v1/completions", `{"prompt":"ab","max_tokens":1}`, nil)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a held completion never counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	do(t, ts, "POST", "/tokenize", `{"prompt":"ab"}`, nil) // not an engine route
	if n := load(); n != 1 {
		t.Errorf("with a tokenize beside it: server_load %d, want 1", n)
	}
	close(f.hold)
	<-done
	if n := load(); n != 0 {
		t.Errorf("after the completion: server_load %d, want 0", n)
	}
}
