package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

func TestVertexAlias(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/chat/completions": "chatCompletions", "/apply-template": "applyTemplate", "/v1/completions": "completions",
		"/tokenize": "tokenize", "/v1/chat/completions/batch": "chatCompletionsBatch", "/v1/messages/count_tokens": "messagesCountTokens",
	} {
		if got := vertexAlias(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// TestPredict: each instance goes to the route its @requestFormat names
// (an alias or a path), with the caller's key, never streamed; a bad
// instance is an error in its place, a bad body a 400.
func TestPredict(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("hi", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) {
		c.APIKey, c.MaxRequestBody, c.Vertex = "k", "1M", Vertex{PredictRoute: "/predict", HealthRoute: "/healthz"}
	}, tokenizer.NewByte())
	key := map[string]string{"Authorization": "Bearer k"}
	body := `{"instances":[` +
		`{"@requestFormat":"chatCompletions","messages":[{"role":"user","content":"a"}],"max_tokens":2,"stream":true},` +
		`{"@requestFormat":"/v1/completions","prompt":"b","max_tokens":2},` +
		`{"@requestFormat":"tokenize","prompt":"ab"},` +
		`{"@requestFormat":"nope"},` +
		`{"messages":[]},` +
		`{"@requestFormat":"predict","instances":[]}]}`
	code, out := do(t, ts, http.MethodPost, "/predict", body, key)
	var got struct {
		Predictions []map[string]any `json:"predictions"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 200 || err != nil || len(got.Predictions) != 6 {
		t.Fatalf("%d %s", code, out)
	}
	p := got.Predictions
	if p[0]["object"] != "chat.completion" || p[1]["object"] != "text_completion" || p[2]["count"] == nil {
		t.Errorf("answers %v", p[:3])
	}
	for i := 3; i < 6; i++ {
		if _, ok := p[i]["error"]; !ok {
			t.Errorf("prediction %d: %v, want an error", i, p[i])
		}
	}
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		want       int
	}{
		{"no key", `{"instances":[]}`, nil, 401},
		{"no instances", `{"x":1}`, key, 400},
		{"too many", `{"instances":[` + strings.Repeat(`{},`, 128) + `{}]}`, key, 400},
	} {
		if code, out := do(t, ts, http.MethodPost, "/predict", tc.body, tc.hdr); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, out, tc.want)
		}
	}
	if code, _ := do(t, ts, http.MethodGet, "/healthz", "", nil); code != 200 {
		t.Errorf("health route: %d", code)
	}
}
