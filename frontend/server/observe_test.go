package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

func TestAccessLogHashesSessionIDsAtInfo(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
		f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
		s := New(Config{ServedModelName: "dummy", MaxModelLen: 64, Logger: log}, f, tokenizer.NewByte())
		ts := httptest.NewServer(s.Handler())
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/completions", strings.NewReader(`{"prompt":"secret prompt","max_tokens":2}`))
		req.Header.Set("X-Session-ID", "user-42@example.com")
		req.Header.Set("X-Request-Id", "req-7")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ts.Close()
		var line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if strings.Contains(l, `"path":"/v1/completions"`) {
				_ = json.Unmarshal([]byte(l), &line)
			}
		}
		if line == nil {
			t.Fatalf("level %v: no access log line in %q", level, buf.String())
		}
		if line["request_id"] != "req-7" || line["status"] != float64(200) || line["session"] != sessionHash("user-42@example.com") {
			t.Fatalf("level %v: access log %v", level, line)
		}
		raw := strings.Contains(buf.String(), "user-42@example.com")
		if raw != (level == slog.LevelDebug) {
			t.Fatalf("level %v: raw session id in the log = %v", level, raw)
		}
		if strings.Contains(buf.String(), "secret prompt") {
			t.Fatal("the prompt was logged")
		}
	}
}

func TestEnginesEndpoint(t *testing.T) {
	ts := newTestServer(t, &fakeEngine{}, "")
	code, body := do(t, ts, http.MethodGet, "/v1/engines", "", nil)
	var out struct {
		Data []EngineView
	}
	if err := json.Unmarshal([]byte(body), &out); code != http.StatusOK || err != nil || len(out.Data) != 1 || out.Data[0].State != "ready" {
		t.Fatalf("%d %s", code, body)
	}
}

// TestEngineViewState: an engine is ready, syncing (ready, its session
// list still loading: new sessions avoid it) or unavailable.
func TestEngineViewState(t *testing.T) {
	for _, tc := range []struct {
		ready, syncing bool
		want           string
	}{
		{true, false, "ready"},
		{true, true, "syncing"},
		{false, false, "unavailable"},
		{false, true, "unavailable"},
	} {
		if got := engineView(engineclient.EngineState{Ready: tc.ready, Syncing: tc.syncing}).State; got != tc.want {
			t.Errorf("ready %v syncing %v: state %q, want %q", tc.ready, tc.syncing, got, tc.want)
		}
	}
}
