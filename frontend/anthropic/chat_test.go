package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChatBody(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"text",
			`{"model":"m","max_tokens":5,"system":"S","messages":[{"role":"user","content":"hi"}],"stream":true,"metadata":{"user_id":"u"}}`,
			`{"messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"}],"max_tokens":5}`},
		{"sampling",
			`{"model":"m","max_tokens":5,"temperature":0.2,"top_p":0.9,"top_k":0,"stop_sequences":["a","b"],"session_id":"s","messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"stop":["a","b"],"temperature":0.2,"top_p":0.9,"top_k":0,"session_id":"s"}`},
		{"text blocks and an empty turn",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"What is"},{"type":"text","text":" it?"}]},{"role":"user","content":[]}]}`,
			`{"messages":[{"role":"user","content":"What is\n it?"}],"max_tokens":5}`},
		{"tool loop",
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"Weather?"},` +
				`{"role":"assistant","content":[{"type":"thinking","thinking":"Look.","signature":"x"},{"type":"text","text":"On it."},{"type":"tool_use","id":"t1","name":"w","input":{"city": "Paris"}},{"type":"tool_use","id":"t2","name":"time"}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Sunny"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"noon"}]},{"type":"text","text":"So?"}]}]}`,
			`{"messages":[{"role":"user","content":"Weather?"},` +
				`{"role":"assistant","content":"On it.","tool_calls":[{"id":"t1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}},` +
				`{"id":"t2","type":"function","function":{"name":"time","arguments":"{}"}}],"reasoning":"Look.","reasoning_content":"Look."},` +
				`{"role":"tool","content":"Sunny","tool_call_id":"t1"},{"role":"tool","content":"noon","tool_call_id":"t2"},{"role":"user","content":"So?"}],"max_tokens":5}`},
		{"calls without text",
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"w","input":{}}]}]}`,
			`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"w","arguments":"{}"}}]}],"max_tokens":5}`},
		{"tools, any, one call",
			`{"model":"m","max_tokens":5,"tools":[{"name":"w","description":"Weather","input_schema":{"type":"object"}},{"name":"t","input_schema":{"properties":{}}},{"name":"e","input_schema":{}}],` +
				`"tool_choice":{"type":"any","disable_parallel_tool_use":true},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"tools":[{"type":"function","function":{"name":"w","description":"Weather","parameters":{"type":"object"}}},` +
				`{"type":"function","function":{"name":"t","parameters":{"type":"object","properties":{}}}},{"type":"function","function":{"name":"e","parameters":{"type":"object"}}}],` +
				`"tool_choice":"required","parallel_tool_calls":false}`},
		{"named tool",
			`{"model":"m","max_tokens":5,"tools":[{"name":"w","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"w"},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"tools":[{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"w"}}}`},
		{"auto and none",
			`{"model":"m","max_tokens":5,"tool_choice":{"type":"none"},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"tool_choice":"none"}`},
		{"thinking",
			`{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":100},"chat_template_kwargs":{"x":1},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"chat_template_kwargs":{"enable_thinking":true,"x":1},"thinking_token_budget":100}`},
		{"thinking disabled, the request's kwargs win",
			`{"model":"m","max_tokens":5,"thinking":{"type":"disabled"},"chat_template_kwargs":{"enable_thinking":true},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"none"}`},
		{"output format and effort",
			`{"model":"m","max_tokens":5,"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}},"effort":"low"},"messages":[]}`,
			`{"messages":[{"role":"user","content":""}],"max_tokens":5,"response_format":{"type":"json_schema","json_schema":{"name":"output","schema":{"type":"object"},"strict":true}},"reasoning_effort":"low"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeMessages([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.ChatBody()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectSchema(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                         `{"type":"object"}`,
		` { "properties": {} } `:     `{"type":"object", "properties": {} }`,
		`{"type":"object","a":1}`:    `{"type":"object","a":1}`,
		`{"type":["object","null"]}`: `{"type":["object","null"]}`,
	} {
		got := objectSchema(json.RawMessage(in))
		if string(got) != want || !json.Valid(got) {
			t.Errorf("objectSchema(%s) = %s, want %s", in, got, want)
		}
	}
}
