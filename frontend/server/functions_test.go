package server

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

const functionsBody = `"functions":[{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},{"name":"get_time"}]`

// TestLegacyFunctions: a request with OpenAI's deprecated functions gets
// its call back as message.function_call (streamed: delta.function_call,
// the name first with arguments "", then the arguments' fragments), one
// call at most, and finish_reason function_call where tools would say
// tool_calls (a named function_call stays "stop", as OpenAI reports it).
func TestLegacyFunctions(t *testing.T) {
	tests := []struct {
		name, format, call string
		answer             []string
		reason             wire.FinishReason
		content            *string
		want               call
		finish             string
	}{
		{"named", "", `{"name":"get_weather"}`, []string{`{"city": `, `"Zürich"}`}, wire.FinishStop,
			nil, call{"get_weather", `{"city":"Zürich"}`}, "stop"},
		{"auto, read by the model's parser: the first call", "hermes", `"auto"`, hermesAnswer, wire.FinishStop,
			ptr("Checking both."), call{"get_weather", `{"city":"Zürich"}`}, "function_call"},
		{"no function_call is auto", "hermes", ``, []string{"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"}, wire.FinishStop,
			nil, call{"get_time", `{}`}, "function_call"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, tc.format, tokenizer.NewByte())
			req := `{"messages":[{"role":"user","content":"Weather?"}],` + functionsBody + `,"max_tokens":100`
			if tc.call != "" {
				req += `,"function_call":` + tc.call
			}
			code, body := post(t, url, req+`}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var out struct {
				Choices []struct {
					Message struct {
						Content      *string
						ToolCalls    json.RawMessage `json:"tool_calls"`
						FunctionCall *call           `json:"function_call"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 {
				t.Fatalf("%v: %s", err, body)
			}
			m := out.Choices[0].Message
			if m.ToolCalls != nil || m.FunctionCall == nil || *m.FunctionCall != tc.want || !cmp.Equal(m.Content, tc.content) || out.Choices[0].FinishReason != tc.finish {
				t.Errorf("got %s\nwant function_call %v, content %v, finish %q", body, tc.want, tc.content, tc.finish)
			}

			code, body = post(t, url, req+`,"stream":true}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var got call
			var content, finish string
			first := true
			type chunk struct {
				Choices []struct {
					Delta struct {
						Content      string
						ToolCalls    json.RawMessage `json:"tool_calls"`
						FunctionCall *struct {
							Name      *string
							Arguments *string
						} `json:"function_call"`
					}
					FinishReason *string `json:"finish_reason"`
				}
			}
			chunks, datas := sseLines[chunk](t, body)
			for i, ch := range chunks {
				data := datas[i]
				for _, c := range ch.Choices {
					content += c.Delta.Content
					if c.Delta.ToolCalls != nil {
						t.Fatalf("tool_calls in a functions stream: %s", data)
					}
					if fc := c.Delta.FunctionCall; fc != nil {
						if fc.Arguments == nil || first != (fc.Name != nil) || first && *fc.Arguments != "" {
							t.Fatalf("function_call delta %s: the first has the name and arguments \"\", the others arguments only", data)
						}
						if first {
							got.Name = *fc.Name
						}
						got.Arguments += *fc.Arguments
						first = false
					}
					if c.FinishReason != nil {
						finish = *c.FinishReason
					}
				}
			}
			want := ""
			if tc.content != nil {
				want = *tc.content
			}
			if got != tc.want || content != want || finish != tc.finish {
				t.Errorf("streamed: call %v, content %q, finish %q; want %v, %q, %q\n%s", got, content, finish, tc.want, want, tc.finish, body)
			}
		})
	}
}

// TestLegacyFunctionsPrompt: a conversation in the deprecated form (an
// assistant function_call, a "function" result) reaches the chat template
// as the same conversation with tool calls does.
func TestLegacyFunctionsPrompt(t *testing.T) {
	src, err := os.ReadFile("../chattemplate/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chattemplate.New(string(src), chattemplate.Options{EOSToken: "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	url := toolServer(t, f, "hermes", templateTok{tokenizer.NewByte(), tmpl})
	legacy := `{"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
		{"role":"function","name":"get_weather","content":"18°C"},
		{"role":"user","content":"And the time?"}],` + functionsBody + `,"max_tokens":1}`
	tools := `{"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","name":"get_weather","content":"18°C"},
		{"role":"user","content":"And the time?"}],` + toolsBody + `,"max_tokens":1}`
	var prompts []string
	for _, body := range []string{legacy, tools} {
		if code, resp := post(t, url, body); code != http.StatusOK {
			t.Fatalf("%d %s", code, resp)
		}
		reqs := f.requests()
		prompts = append(prompts, tokenizer.NewByte().Decode(reqs[len(reqs)-1].PromptTokenIDs, false))
	}
	if diff := cmp.Diff(prompts[1], prompts[0]); diff != "" {
		t.Errorf("functions prompt (-tools +functions):\n%s", diff)
	}
	if !strings.Contains(prompts[0], `"name": "get_weather", "arguments": {"city": "Paris"}`) || !strings.Contains(prompts[0], "<tool_response>\n18°C") {
		t.Errorf("the call or its result is missing:\n%s", prompts[0])
	}
}

func TestLegacyFunctionsErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	url := toolServer(t, f, "", tokenizer.NewByte())
	msgs := `{"messages":[{"role":"user","content":"Weather?"}],`
	tests := []struct{ body, param string }{
		{msgs + `"function_call":"auto"}`, "function_call"},
		{msgs + functionsBody + `,` + toolsBody + `}`, "functions"},
		{msgs + functionsBody + `,"function_call":"required"}`, "function_call"},
		{msgs + functionsBody + `,"tool_choice":"auto"}`, "function_call"},
		{msgs + `"functions":[{"description":"no name"}]}`, "functions[0].name"},
		{msgs + `"functions":{}}`, "functions"},
		{`{"messages":[{"role":"assistant","function_call":{"arguments":"{}"}},{"role":"user","content":"x"}],` + functionsBody + `}`, "messages[0].function_call"},
	}
	for _, tc := range tests {
		code, body := post(t, url, tc.body)
		var e struct{ Error struct{ Param string } }
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusBadRequest || e.Error.Param != tc.param {
			t.Errorf("%s: %d %s; want 400 naming %s", tc.body, code, body, tc.param)
		}
	}
}
