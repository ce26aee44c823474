package server

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// Anthropic's Messages API (anthropic.go, anthropic_stream.go) over the
// fake engine and the byte tokenizer.

// toolUseIDs are tool_use ids, made fixed for comparison.
var toolUseIDs = regexp.MustCompile(`toolu_[0-9A-Za-z]{24}`)

const weatherTool = `"tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},` +
	`{"name":"get_time","input_schema":{"properties":{}}}]`

// messagesServer serves the fake engine with outs as every answer.
func messagesServer(t *testing.T, outs []wire.EngineCoreOutput, parser string, edit func(*Config)) (string, *fakeEngine) {
	t.Helper()
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return append([]wire.EngineCoreOutput(nil), outs...)
	}}
	if edit == nil {
		return toolServer(t, f, parser, tokenizer.NewByte()), f
	}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen, c.NumBlocks, c.MaxRequestBody = 4096, 512, "64K"; edit(c) }, tokenizer.NewByte())
	return ts.URL, f
}

// sendMessages posts body to path with headers hdr.
func sendMessages(t *testing.T, base, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "fixed")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		outs   []wire.EngineCoreOutput
		parser string // --tool-call-parser
		want   string // the response without usage, tool_use ids as toolu_X
		numOut int    // its output tokens; 0: every token of outs
	}{
		{"end_turn", `{"model":"claude-x","max_tokens":10,"system":[{"type":"text","text":"Be kind."}],"messages":[{"role":"user","content":"hi"}]}`,
			tokens("Hé!", wire.FinishStop, 259), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"Hé!"}],"stop_reason":"end_turn","stop_sequence":null}`, 0},
		{"max_tokens", `{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`,
			tokens("ab", wire.FinishLength), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"ab"}],"stop_reason":"max_tokens","stop_sequence":null}`, 0},
		{"stop_sequence", `{"model":"m","max_tokens":20,"stop_sequences":["lo w"],"messages":[{"role":"user","content":"hi"}]}`,
			tokens("hello world", wire.FinishLength), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"hel"}],"stop_reason":"stop_sequence","stop_sequence":"lo w"}`,
			7}, // the stop sequence's tokens count, as the engine generated them
		{"tool named", `{"model":"m","max_tokens":20,` + weatherTool + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{259}, `{"city": `, `"Paris"}`), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{"city":"Paris"}}],` +
				`"stop_reason":"tool_use","stop_sequence":null}`, 0},
		{"tool any", `{"model":"m","max_tokens":90,` + weatherTool + `,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{259}, `[{"name":"get_time","parameters":{}},`, `{"name":"get_weather","parameters":{"city":"Rome"}}]`), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"tool_use","id":"toolu_X","name":"get_time","input":{}},` +
				`{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{"city":"Rome"}}],"stop_reason":"tool_use","stop_sequence":null}`, 0},
		{"tool named cut", `{"model":"m","max_tokens":5,` + weatherTool + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishLength, nil, `{"cit`), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{}}],` +
				`"stop_reason":"max_tokens","stop_sequence":null}`, 0},
		{"auto without a parser", `{"model":"m","max_tokens":200,` + weatherTool + `,"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{eosIMEnd}, "Sunny."), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"Sunny."}],"stop_reason":"end_turn","stop_sequence":null}`, 0},
		{"auto hermes", `{"model":"m","max_tokens":200,` + weatherTool + `,"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...), "hermes",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"Checking both."},` +
				`{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{"city":"Zürich"}},{"type":"tool_use","id":"toolu_X","name":"get_time","input":{}}],` +
				`"stop_reason":"tool_use","stop_sequence":null}`, 0},
		{"auto hermes one call", `{"model":"m","max_tokens":200,` + weatherTool + `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...), "hermes",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":"Checking both."},` +
				`{"type":"tool_use","id":"toolu_X","name":"get_weather","input":{"city":"Zürich"}}],"stop_reason":"tool_use","stop_sequence":null}`, 0},
		{"tool_choice none", `{"model":"m","max_tokens":200,` + weatherTool + `,"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"Paris?"}]}`,
			outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...), "hermes",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[{"type":"text","text":` + jsonString(strings.Join(hermesAnswer, "")) + `}],` +
				`"stop_reason":"end_turn","stop_sequence":null}`, 0},
		{"no messages", `{"model":"m","max_tokens":2,"messages":[]}`,
			tokens("", wire.FinishStop, 259), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[],"stop_reason":"end_turn","stop_sequence":null}`, 0},
		{"no messages, only system", `{"model":"m","max_tokens":2,"system":"Hi.","messages":[]}`,
			tokens("", wire.FinishStop, 259), "",
			`{"id":"msg_fixed","type":"message","role":"assistant","model":"dummy","content":[],"stop_reason":"end_turn","stop_sequence":null}`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, f := messagesServer(t, tc.outs, tc.parser, nil)
			code, body := sendMessages(t, base, "/v1/messages", tc.body, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			got := decodeObject(t, toolUseIDs.ReplaceAllString(body, "toolu_X"))
			numOut, numCached := 0, 0
			for _, o := range tc.outs {
				numOut += len(o.NewTokenIDs)
			}
			if len(tc.outs) > 0 {
				numCached = tc.outs[0].NumCachedTokens
			}
			if tc.numOut > 0 {
				numOut = tc.numOut
			}
			wantUsage := map[string]any{"input_tokens": float64(len(f.requests()[0].PromptTokenIDs) - numCached), "cache_creation_input_tokens": 0.0,
				"cache_read_input_tokens": float64(numCached), "output_tokens": float64(numOut)}
			if diff := cmp.Diff(wantUsage, got["usage"]); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			delete(got, "usage")
			if diff := cmp.Diff(decodeObject(t, tc.want), got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if req := f.requests()[0]; req.ExternalReqID != "msg_fixed" || req.SamplingParams.N != 1 {
				t.Errorf("engine request %+v", req)
			}

			// The same answer streamed: well-ordered events that add up to it.
			code, stream := sendMessages(t, base, "/v1/messages", strings.Replace(tc.body, "{", `{"stream":true,`, 1), nil)
			if code != http.StatusOK {
				t.Fatalf("stream: %d %s", code, stream)
			}
			streamed := accumulate(t, toolUseIDs.ReplaceAllString(stream, "toolu_X"))
			delete(got, "usage")
			if diff := cmp.Diff(decodeObject(t, tc.want), streamed); diff != "" {
				t.Errorf("streamed (-want +got):\n%s\n%s", diff, stream)
			}
		})
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return m
}

// accumulate checks a stream's event order and builds its message as the
// SDKs do (without usage): message_start, then per block start (a ping
// after the first), deltas of its type and stop, then message_delta and
// message_stop.
func accumulate(t *testing.T, body string) map[string]any {
	t.Helper()
	var msg map[string]any
	var blocks []any
	inputs := map[int]string{}
	var names []string
	open, pinged := -1, false
	for _, ev := range sseEvents(t, body) {
		names = append(names, ev.typ)
		d := decodeObject(t, string(ev.data))
		if d["type"] != ev.typ {
			t.Fatalf("event %s has type %v", ev.typ, d["type"])
		}
		switch ev.typ {
		case "message_start":
			if msg != nil {
				t.Fatalf("two message_starts: %v", names)
			}
			msg = d["message"].(map[string]any)
			if len(msg["content"].([]any)) != 0 || msg["stop_reason"] != nil {
				t.Fatalf("message_start %s", ev.data)
			}
		case "ping":
			pinged = true
		case "content_block_start":
			if open != -1 || int(d["index"].(float64)) != len(blocks) {
				t.Fatalf("block start %s while %d open, %d blocks: %v", ev.data, open, len(blocks), names)
			}
			open = len(blocks)
			blocks = append(blocks, d["content_block"])
		case "content_block_delta":
			if int(d["index"].(float64)) != open {
				t.Fatalf("delta %s for a block not open (%d)", ev.data, open)
			}
			b, dl := blocks[open].(map[string]any), d["delta"].(map[string]any)
			switch dl["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + dl["text"].(string)
			case "input_json_delta":
				inputs[open] += dl["partial_json"].(string)
			default:
				t.Fatalf("delta %s", ev.data)
			}
		case "content_block_stop":
			if int(d["index"].(float64)) != open {
				t.Fatalf("stop %s for a block not open (%d)", ev.data, open)
			}
			open = -1
		case "message_delta":
			dl := d["delta"].(map[string]any)
			msg["stop_reason"], msg["stop_sequence"] = dl["stop_reason"], dl["stop_sequence"]
		case "message_stop":
			if open != -1 || !pinged {
				t.Fatalf("message_stop with block %d open, pinged %v: %v", open, pinged, names)
			}
		}
	}
	if len(names) < 4 || names[0] != "message_start" || names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	if len(blocks) > 0 && names[2] != "ping" {
		t.Fatalf("no ping after the first block's start: %v", names)
	}
	for i, in := range inputs {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			// A call cut by max_tokens streams the arguments it had, as
			// Claude's do; the message's answer reads them as {}.
			if msg["stop_reason"] != "max_tokens" || i != len(blocks)-1 {
				t.Fatalf("tool_use %d input %q: %v", i, in, err)
			}
			v = map[string]any{}
		}
		blocks[i].(map[string]any)["input"] = v
	}
	msg["content"] = append([]any{}, blocks...)
	delete(msg, "usage")
	return msg
}

func TestMessagesStreamTranscripts(t *testing.T) {
	tests := []struct {
		name, body, parser string
		outs               []wire.EngineCoreOutput
	}{
		{"anthropic_stream.sse", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "",
			tokens("Hé!", wire.FinishStop, 259)},
		{"anthropic_stream_tools.sse", `{"model":"m","max_tokens":200,"stream":true,` + weatherTool + `,"messages":[{"role":"user","content":"Paris?"}]}`, "hermes",
			outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := messagesServer(t, tc.outs, tc.parser, nil)
			code, body := sendMessages(t, base, "/v1/messages", tc.body, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			golden(t, tc.name, toolUseIDs.ReplaceAllString(body, "toolu_X"))
		})
	}
}

// TestMessagesPrompt: the conversation reaches the chat template as chat
// messages: system first, tool_use blocks as tool_calls (input as
// arguments), tool_result blocks as tool messages in block order,
// thinking as reasoning_content; and the request's settings reach the
// engine.
func TestMessagesPrompt(t *testing.T) {
	src := `{% for m in messages %}[{{ m.role }}:{{ m.content }}{% if m.tool_calls %}|call {{ m.tool_calls[0].id }} {{ m.tool_calls[0].function.name }} {{ m.tool_calls[0].function.arguments|tojson }}{% endif %}` +
		`{% if m.tool_call_id %}|id {{ m.tool_call_id }}{% endif %}{% if m.reasoning_content %}|think {{ m.reasoning_content }}{% endif %}]{% endfor %}` +
		`{% if tools %}<tools {{ tools|length }} {{ tools[1].function.parameters|tojson }}>{% endif %}{% if enable_thinking %}<think>{% endif %}{% if add_generation_prompt %}>{% endif %}`
	tmpl, err := chattemplate.New(src, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 1024; c.NumBlocks = 128; c.MaxRequestBody = "64K" }, templateTok{tokenizer.NewByte(), tmpl})
	body := `{"model":"claude-sonnet-4-5","max_tokens":100000,"temperature":0.5,"top_p":0.9,"top_k":7,"stop_sequences":["END"],"thinking":{"type":"enabled","budget_tokens":50},` +
		`"metadata":{"user_id":"u1"},"system":[{"type":"text","text":"x-anthropic-billing-header: cch=12345;"},{"type":"text","text":"Be brief."}],` + weatherTool + `,` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Weather?"},{"type":"text","text":"In Paris."}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"Look it up.","signature":"s"},{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Sunny"},{"type":"text","text":"25C"}]},{"type":"text","text":"And now?"}]}]}`
	code, resp := sendMessages(t, ts.URL, "/v1/messages", body, map[string]string{"X-Session-ID": "s-1"})
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, resp)
	}
	req := f.requests()[0]
	want := `[system:Be brief.][user:Weather?` + "\n" + `In Paris.][assistant:Checking.|call toolu_1 get_weather {"city": "Paris"}|think Look it up.]` +
		`[tool:Sunny` + "\n" + `25C|id toolu_1][user:And now?]<tools 2 {"type": "object", "properties": {}}><think>>`
	if diff := cmp.Diff(want, tokenizer.NewByte().Decode(req.PromptTokenIDs, false)); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
	sp := req.SamplingParams
	if sp.Temperature != 0.5 || sp.TopP != 0.9 || sp.TopK != 7 || sp.MaxTokens != 1024-len(req.PromptTokenIDs) || req.SessionID != "s-1" {
		t.Errorf("engine request: session %q, params %+v (max_tokens is capped at the context)", req.SessionID, sp)
	}
	// the body's session_id wins over the header, as everywhere
	sendMessages(t, ts.URL, "/v1/messages", strings.Replace(body, `"model"`, `"session_id":"s-2","model"`, 1), map[string]string{"X-Session-ID": "s-1"})
	if got := f.requests()[1].SessionID; got != "s-2" {
		t.Errorf("session %q, want the body's s-2", got)
	}
	// count_tokens renders the same prompt, without max_tokens
	noMax := strings.Replace(body, `"max_tokens":100000,`, "", 1)
	code, resp = sendMessages(t, ts.URL, "/v1/messages/count_tokens", noMax, nil)
	if code != http.StatusOK || resp != `{"input_tokens":`+jsonNumber(len(req.PromptTokenIDs))+"}\n" {
		t.Errorf("count_tokens: %d %s, want %d tokens", code, resp, len(req.PromptTokenIDs))
	}
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestMessagesErrors(t *testing.T) {
	const ok = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		apiKey           string
		status           int
		typ, message     string // message: a part of it
	}{
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[]}`, nil, "", 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", "/v1/messages", `{"model":"m","max_tokens":5}`, nil, "", 400, "invalid_request_error", "messages: Field required"},
		{"bad JSON", "/v1/messages", `{"model":`, nil, "", 400, "invalid_request_error", "Invalid JSON"},
		{"wrong type", "/v1/messages", `{"model":"m","max_tokens":"5","messages":[]}`, nil, "", 400, "invalid_request_error", "max_tokens: Input should be a valid integer"},
		{"image", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
			nil, "", 400, "invalid_request_error", "messages.0.content.0: image input is not supported"},
		{"image in a tool result", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{}}]}]}]}`,
			nil, "", 400, "invalid_request_error", "image input is not supported"},
		{"server tool", "/v1/messages", `{"model":"m","max_tokens":5,"tools":[{"type":"web_search_20250305","name":"web_search"}],"messages":[]}`,
			nil, "", 400, "invalid_request_error", "tools.0.type: tool type"},
		{"tool choice of no tool", "/v1/messages", `{"model":"m","max_tokens":5,"tool_choice":{"type":"tool","name":"x"},"messages":[]}`,
			nil, "", 400, "invalid_request_error", "not in 'tools'"},
		{"temperature", "/v1/messages", `{"model":"m","max_tokens":5,"temperature":-1,"messages":[]}`, nil, "", 400, "invalid_request_error", "temperature"},
		{"prompt too long", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`,
			nil, "", 400, "invalid_request_error", "prompt is too long: "},
		{"count_tokens without model", "/v1/messages/count_tokens", `{"messages":[]}`, nil, "", 400, "invalid_request_error", "model: Field required"},
		{"no key", "/v1/messages", ok, nil, "k", 401, "authentication_error", "Invalid or missing API key"},
		{"wrong x-api-key", "/v1/messages", ok, map[string]string{"X-Api-Key": "nope"}, "k", 401, "authentication_error", "API key"},
		{"x-api-key", "/v1/messages", ok, map[string]string{"X-Api-Key": "k"}, "k", 200, "", ""},
		{"bearer", "/v1/messages/count_tokens", ok, map[string]string{"Authorization": "Bearer k"}, "k", 200, "", ""},
		{"unknown route", "/v1/messages/batches", ok, nil, "", 404, "not_found_error", "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := messagesServer(t, tokens("ok", wire.FinishLength), "", func(c *Config) { c.APIKey = tc.apiKey })
			code, body := sendMessages(t, base, tc.path, tc.body, tc.hdr)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %s", code, tc.status, body)
			}
			if tc.status == 200 {
				return
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Type != "error" || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.message) {
				t.Fatalf("error body %s, want type %s and %q", body, tc.typ, tc.message)
			}
		})
	}
}

// TestMessagesStreamErrors: a failure before the first token is an HTTP
// error; one after it an `event: error`.
func TestMessagesStreamErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishNone) }, dead: true}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen, c.NumBlocks = 4096, 512 }, tokenizer.NewByte())
	body := `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	code, resp := sendMessages(t, ts.URL, "/v1/messages", body, nil)
	evs := sseEvents(t, resp)
	if code != http.StatusOK || evs[0].typ != "message_start" || evs[len(evs)-1].typ != "error" ||
		!strings.Contains(string(evs[len(evs)-1].data), `"type":"error","error":{"type":"overloaded_error"`) {
		t.Fatalf("%d %s", code, resp)
	}
	f.script = func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return nil }
	code, resp = sendMessages(t, ts.URL, "/v1/messages", body, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(resp, `"overloaded_error"`) {
		t.Fatalf("before the first token: %d %s, want a 503", code, resp)
	}
}
