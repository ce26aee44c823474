package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// The endpoints and server settings of vLLM's that issue #18 listed.

func TestOpenAPICoversEveryRoute(t *testing.T) {
	for _, disableUI := range []bool{false, true} {
		s := New(Config{ServedModelName: "dummy", MaxModelLen: 64, DisableWebUI: disableUI}, &fakeEngine{}, tokenizer.NewByte())
		routes := map[string]bool{}
		for _, r := range s.e.Routes() {
			if !strings.HasPrefix(r.Method, "echo_") {
				routes[strings.ToLower(r.Method)+" "+openAPIPath(r.Path)] = true
			}
		}
		paths := s.openAPIDocument()["paths"].(map[string]any)
		if paths["/infill"] != nil || paths["/slots/{id_slot}"] != nil {
			t.Error("/openapi.json lists /infill for a model without FIM tokens, or slot actions without --slot-save-path: both answer 501")
		}
		for p, item := range paths {
			for method := range item.(map[string]any) {
				if !routes[method+" "+p] {
					t.Errorf("web UI disabled %v: /openapi.json has %s %s, which the server does not route", disableUI, method, p)
				}
			}
		}
	}
	s := New(Config{ServedModelName: "dummy", MaxModelLen: 64, EnableTokenizerInfo: true, RootPath: "/api", SlotSavePath: t.TempDir()}, &fakeEngine{}, fimTokenizer{tokenizer.NewByte()})
	doc := s.openAPIDocument()
	paths := doc["paths"].(map[string]any)
	for _, r := range s.e.Routes() {
		if r.Method == "echo_route_any" || strings.HasPrefix(r.Method, "echo_") {
			continue
		}
		p := openAPIPath(r.Path)
		item, ok := paths[p].(map[string]any)
		if !ok || item[strings.ToLower(r.Method)] == nil {
			t.Errorf("route %s %s (%s) is not in /openapi.json", r.Method, r.Path, p)
		}
	}
	if len(paths) == 0 || doc["openapi"] != "3.1.0" {
		t.Fatalf("document %v", doc)
	}
	if diff := cmp.Diff([]any{map[string]any{"url": "/api"}}, doc["servers"]); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
}

// openAPIPath is an echo route's path in OpenAPI's form.
func openAPIPath(path string) string {
	return strings.NewReplacer("/v1/models/*", "/v1/models/{model}", "/v1/responses/:id", "/v1/responses/{response_id}",
		"/v1/sessions/:id", "/v1/sessions/{session_id}", "/slots/:id_slot", "/slots/{id_slot}", "/webui/*", "/webui/{asset}").Replace(path)
}

func TestInvocationsRoutesByShape(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	tests := []struct {
		body       string
		wantCode   int
		wantObject string
	}{
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, http.StatusOK, "chat.completion"},
		{`{"prompt":"hi","max_tokens":2}`, http.StatusOK, "text_completion"},
		{`{"prompt":"hi","messages":null,"max_tokens":2}`, http.StatusOK, "text_completion"},
		{`{"input":"hi"}`, http.StatusBadRequest, ""},
	}
	for _, tc := range tests {
		code, body := do(t, ts, http.MethodPost, "/invocations", tc.body, nil)
		m := decodeMap(t, body)
		if code != tc.wantCode || (tc.wantObject != "" && m["object"] != tc.wantObject) {
			t.Errorf("%s: %d %s, want %d %s", tc.body, code, body, tc.wantCode, tc.wantObject)
		}
		if code == http.StatusBadRequest && !strings.Contains(body, "Cannot find suitable handler for request") {
			t.Errorf("%s: %s", tc.body, body)
		}
	}
}

func TestBatchChat(t *testing.T) {
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return tokens(map[bool]string{true: "one", false: "two"}[strings.HasSuffix(r.ExternalReqID, "_0")], wire.FinishLength)
	}}
	ts := newTestServer(t, f, "")
	code, body := do(t, ts, http.MethodPost, "/v1/chat/completions/batch",
		`{"messages":[[{"role":"user","content":"a"}],[{"role":"user","content":"b"}]],"max_tokens":3}`, nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	m := decodeMap(t, body)
	choices := m["choices"].([]any)
	var got []string
	for i, c := range choices {
		ch := c.(map[string]any)
		if ch["index"].(float64) != float64(i) {
			t.Fatalf("choice %d has index %v", i, ch["index"])
		}
		got = append(got, ch["message"].(map[string]any)["content"].(string))
	}
	if diff := cmp.Diff([]string{"one", "two"}, got); diff != "" {
		t.Fatalf("contents (-want +got):\n%s", diff)
	}
	if m["object"] != "chat.completion" || m["usage"].(map[string]any)["completion_tokens"].(float64) != 6 {
		t.Fatalf("response %s", body)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].ExternalReqID != "chatcmpl-fixed_0" || reqs[1].ExternalReqID != "chatcmpl-fixed_1" {
		t.Fatalf("engine requests %+v", reqs)
	}
	refused := []struct{ body, param, message string }{
		{`{"messages":[[{"role":"user","content":"a"}]],"n":2}`, "n", "Batch chat completions do not support `n > 1`. Please set `n` to 1."},
		{`{"messages":[[{"role":"user","content":"a"}]],"use_beam_search":true}`, "use_beam_search", "Batch chat completions do not support beam search. Please set `use_beam_search` to False."},
		{`{"messages":[[{"role":"user","content":"a"}]],"stream":true}`, "stream", ""},
		{`{"messages":[{"role":"user","content":"a"}]}`, "messages", ""},
		{`{"messages":[[{"role":"user","content":"a"}],[]]}`, "messages", ""},
	}
	for _, tc := range refused {
		code, body := do(t, ts, http.MethodPost, "/v1/chat/completions/batch", tc.body, nil)
		e := decodeMap(t, body)["error"].(map[string]any)
		if code != http.StatusBadRequest || e["param"] != tc.param || (tc.message != "" && e["message"] != tc.message) {
			t.Errorf("%s: %d %s, want 400 param %s", tc.body, code, body, tc.param)
		}
	}
}

func TestRootPath(t *testing.T) {
	ts := newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.RootPath = "/api/llm"; c.APIKey = "k" }, tokenizer.NewByte())
	auth := map[string]string{"Authorization": "Bearer k"}
	for _, path := range []string{"/api/llm/v1/models", "/v1/models", "/api/llm/v1/models/dummy"} {
		if code, body := do(t, ts, http.MethodGet, path, "", auth); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, _ := do(t, ts, http.MethodGet, "/api/llm/v1/models", "", nil); code != http.StatusUnauthorized {
		t.Errorf("the prefix must not skip the API key: %d", code)
	}
	if code, _ := do(t, ts, http.MethodGet, "/api/llm/health", "", nil); code != http.StatusOK {
		t.Errorf("GET /api/llm/health: %d, want 200 without a key", code)
	}
	if code, _ := do(t, ts, http.MethodGet, "/api/llmx/v1/models", "", auth); code != http.StatusNotFound {
		t.Errorf("a longer first segment is not the prefix: %d", code)
	}
	_, body := do(t, ts, http.MethodGet, "/api/llm/openapi.json", "", nil)
	if !strings.Contains(body, `"servers":[{"url":"/api/llm"}]`) {
		t.Errorf("openapi.json servers: %s", body)
	}
}

// vocabTok is the byte tokenizer with vocabulary strings, as BPE has.
type vocabTok struct{ tokenizer.Tokenizer }

func (vocabTok) TokenText(id int32) (string, bool) { return "Ġ" + string(rune(id)), true }

func TestTokenizeTokenStrsAndTokenizerInfo(t *testing.T) {
	ts := newTestServerWith(t, &fakeEngine{}, nil, vocabTok{tokenizer.NewByte()})
	_, body := do(t, ts, http.MethodPost, "/tokenize", `{"prompt":"ab","add_special_tokens":false,"return_token_strs":true}`, nil)
	if !strings.Contains(body, `"token_strs":["Ġa","Ġb"]`) {
		t.Errorf("token_strs are not the vocabulary's strings: %s", body)
	}
	if code, _ := do(t, ts, http.MethodGet, "/tokenizer_info", "", nil); code != http.StatusNotFound {
		t.Errorf("/tokenizer_info without --enable-tokenizer-info-endpoint: %d, want 404", code)
	}
	ts = newTestServerWith(t, &fakeEngine{}, func(c *Config) { c.EnableTokenizerInfo = true }, tokenizer.NewByte())
	code, body := do(t, ts, http.MethodGet, "/tokenizer_info", "", nil)
	info := decodeMap(t, body)
	if code != http.StatusOK || info["tokenizer_class"] == "" || info["model_max_length"] != 64.0 {
		t.Errorf("/tokenizer_info: %d %s", code, body)
	}
}

func TestPerRequestMetrics(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("abc", wire.FinishLength) },
		timing: engineclient.Timing{Queued: 100, Scheduled: 100.5, FirstToken: 101, LastToken: 103}}
	ts := newTestServerWith(t, f, func(c *Config) { c.EnablePerRequestMetrics = true }, tokenizer.NewByte())
	want := map[string]any{"queue_time_ms": 500.0, "time_to_first_token_ms": 500.0, "generation_time_ms": 2000.0, "mean_itl_ms": 1000.0, "tokens_per_second": 3 / 2.5}
	_, body := do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":3}`, nil)
	if diff := cmp.Diff(want, decodeMap(t, body)["metrics"]); diff != "" {
		t.Errorf("completion metrics (-want +got):\n%s", diff)
	}
	_, body = do(t, ts, http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`, nil)
	events := sseData(t, body)
	if diff := cmp.Diff(want, events[len(events)-1]["metrics"]); diff != "" {
		t.Errorf("usage chunk metrics (-want +got):\n%s", diff)
	}
	_, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":3,"n":2}`, nil)
	if !isNull(decodeMap(t, body), "metrics") {
		t.Errorf("n=2 has no single sequence's metrics: %s", body)
	}
	ts = newTestServerWith(t, f, nil, tokenizer.NewByte())
	_, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":3}`, nil)
	if !isNull(decodeMap(t, body), "metrics") {
		t.Errorf("metrics without --enable-per-request-metrics: %s", body)
	}
	// One token has no gap between tokens: vLLM leaves mean_itl_ms out.
	one := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) },
		timing: engineclient.Timing{Queued: 100, Scheduled: 100.5, FirstToken: 101, LastToken: 101}}
	ts = newTestServerWith(t, one, func(c *Config) { c.EnablePerRequestMetrics = true }, tokenizer.NewByte())
	_, body = do(t, ts, http.MethodPost, "/v1/completions", `{"prompt":"x","max_tokens":1}`, nil)
	if m, _ := decodeMap(t, body)["metrics"].(map[string]any); m == nil || m["time_to_first_token_ms"] != 500.0 {
		t.Errorf("one token's metrics: %s", body)
	} else if _, ok := m["mean_itl_ms"]; ok {
		t.Errorf("one token's metrics carry mean_itl_ms: %s", body)
	}
}
