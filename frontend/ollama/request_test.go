package ollama

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChatBody(t *testing.T) {
	tests := []struct {
		name, req, want string
	}{
		{"options and format json",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"format":"json","options":{"temperature":0.5,"top_k":40,"top_p":0.9,"min_p":0.05,"seed":3,"num_predict":12,"stop":["\n"],"repeat_penalty":1.1,"presence_penalty":0.2,"frequency_penalty":0.3,"num_ctx":8192,"num_thread":4}}`,
			`{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"max_tokens":12,"temperature":0.5,"top_k":40,"top_p":0.9,"min_p":0.05,"seed":3,"stop":["\n"],"repetition_penalty":1.1,"presence_penalty":0.2,"frequency_penalty":0.3}`},
		{"a schema, a stop string, num_predict -1",
			`{"messages":[{"role":"user","content":"hi"}],"format":{"type":"object"},"options":{"stop":"END","num_predict":-1}}`,
			`{"messages":[{"role":"user","content":"hi"}],"response_format":{"json_schema":{"name":"format","schema":{"type":"object"}},"type":"json_schema"},"stop":["END"]}`},
		{"calls get ids, results answer them by tool_name, else in order",
			`{"messages":[{"role":"user","content":"q"},
			  {"role":"assistant","content":"","tool_calls":[{"function":{"name":"a","arguments":{"x":1}}},{"function":{"name":"b","arguments":"{\"y\":2}"}},{"function":{"name":"c"}}]},
			  {"role":"tool","content":"B","tool_name":"b"},{"role":"tool","content":"A"},{"role":"tool","content":"C","tool_name":"c"},{"role":"tool","content":"?"}],
			  "tools":[{"type":"function","function":{"name":"a"}}]}`,
			`{"messages":[{"role":"user","content":"q"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1_0","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}},{"id":"call_1_1","type":"function","function":{"name":"b","arguments":"{\"y\":2}"}},{"id":"call_1_2","type":"function","function":{"name":"c","arguments":"{}"}}]},` +
				`{"role":"tool","content":"B","name":"b","tool_call_id":"call_1_1"},{"role":"tool","content":"A","tool_call_id":"call_1_0"},{"role":"tool","content":"C","name":"c","tool_call_id":"call_1_2"},{"role":"tool","content":"?","tool_call_id":"call_5"}],` +
				`"tools":[{"type":"function","function":{"name":"a"}}]}`},
		{"thinking is the turn's reasoning",
			`{"messages":[{"role":"assistant","content":"4","thinking":"2+2"},{"role":"user","content":"ok"}]}`,
			`{"messages":[{"role":"assistant","content":"4","reasoning_content":"2+2"},{"role":"user","content":"ok"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkChatBody(t, tc.req, tc.want) })
	}
}

// checkChatBody checks that the chat request req becomes the chat body
// want (compared as JSON values).
func checkChatBody(t *testing.T, req, want string) {
	t.Helper()
	var r ChatRequest
	if err := Decode([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	b, err := r.ChatBody()
	if err != nil {
		t.Fatal(err)
	}
	var gotV, wantV any
	_ = json.Unmarshal(b, &gotV)
	if err := json.Unmarshal([]byte(want), &wantV); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantV, gotV); diff != "" {
		t.Errorf("(-want +got):\n%s\n%s", diff, b)
	}
}

func TestGenerateChatBody(t *testing.T) {
	var r GenerateRequest
	if err := Decode([]byte(`{"model":"m","prompt":"Why?","system":"Be brief.","options":{"num_predict":3}}`), &r); err != nil {
		t.Fatal(err)
	}
	b, err := r.ChatBody()
	if err != nil || string(b) != `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Why?"}],"max_tokens":3}` {
		t.Errorf("%s %v", b, err)
	}
	for body, words := range map[string]string{
		`{"prompt":"x","template":"{{ .Prompt }}"}`: "template",
		`{"prompt":"x","suffix":"y"}`:               "suffix",
		`{"prompt":"x","images":["AAAA"]}`:          "image",
	} {
		var r GenerateRequest
		if err := Decode([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ChatBody(); err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want an error about %s", body, err, words)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	for body, words := range map[string]string{
		`{"messages":[{"role":"user","content":"x","images":["AAAA"]}]}`:                   "messages[0].images",
		`{"messages":[{"content":"x"}]}`:                                                   "messages[0].role",
		`{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":{}}}]}]}`: "tool_calls[0].function.name",
		`{"messages":[{"role":"user","content":"x"}],"format":"yaml"}`:                     "format",
		`{"messages":[{"role":"user","content":"x"}],"format":[1]}`:                        "format",
	} {
		var r ChatRequest
		err := Decode([]byte(body), &r)
		if err == nil {
			_, err = r.ChatBody()
		}
		if err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want an error naming %s", body, err, words)
		}
	}
	var r ChatRequest
	if err := Decode([]byte(`{"options":{"temperature":"hot"}}`), &r); err == nil || !strings.Contains(err.Error(), "options.temperature") {
		t.Errorf("%v", err)
	}
	if err := Decode([]byte(`{"options":{"stop":5}}`), &r); err == nil || !strings.Contains(err.Error(), "stop") {
		t.Errorf("%v", err)
	}
}

func TestNewToolCall(t *testing.T) {
	for args, want := range map[string]string{
		`{"city":"Paris"}`: `{"function":{"index":1,"name":"f","arguments":{"city":"Paris"}}}`,
		`{"city":"Pa`:      `{"function":{"index":1,"name":"f","arguments":{}}}`,
		``:                 `{"function":{"index":1,"name":"f","arguments":{}}}`,
		`[1]`:              `{"function":{"index":1,"name":"f","arguments":{}}}`,
	} {
		b, _ := json.Marshal(NewToolCall(1, "f", args))
		if string(b) != want {
			t.Errorf("%q: %s, want %s", args, b, want)
		}
	}
}

func TestChatBodyThinkLogprobsAndIDs(t *testing.T) {
	tests := []struct {
		name, req, want string
	}{
		{"think true, top_logprobs turns logprobs on",
			`{"messages":[{"role":"user","content":"hi"}],"think":true,"top_logprobs":3}`,
			`{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3,"chat_template_kwargs":{"enable_thinking":true}}`},
		{"think false, logprobs",
			`{"messages":[{"role":"user","content":"hi"}],"think":false,"logprobs":true}`,
			`{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"chat_template_kwargs":{"enable_thinking":false}}`},
		{"an effort is on, and the request's reasoning_effort", `{"messages":[{"role":"user","content":"hi"}],"think":"low"}`,
			`{"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"low"}`},
		{"the client's call ids and tool_call_id pair results (LangChain's)",
			`{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"u1","function":{"name":"a","arguments":{}}},{"id":"u2","function":{"name":"a","arguments":{}}}]},
			  {"role":"tool","content":"2","tool_call_id":"u2"},{"role":"tool","content":"1","tool_name":"a"}]}`,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"u1","type":"function","function":{"name":"a","arguments":"{}"}},{"id":"u2","type":"function","function":{"name":"a","arguments":"{}"}}]},` +
				`{"role":"tool","content":"2","tool_call_id":"u2"},{"role":"tool","content":"1","name":"a","tool_call_id":"u1"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkChatBody(t, tc.req, tc.want) })
	}
	var r ChatRequest
	if err := Decode([]byte(`{"messages":[{"role":"user","content":"x"}],"think":"max"}`), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ChatBody(); err == nil || !strings.Contains(err.Error(), "think") {
		t.Errorf("think max: %v", err)
	}
}
