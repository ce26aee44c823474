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

// qwenTok is the byte tokenizer with Qwen2.5's chat template, which
// renders tools and earlier calls into the prompt.
func qwenTok(t *testing.T) tokenizer.Tokenizer {
	t.Helper()
	src, err := os.ReadFile("../chattemplate/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chattemplate.New(string(src), chattemplate.Options{EOSToken: "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	return templateTok{tokenizer.NewByte(), tmpl}
}

// respNamespaceTools is a namespace tool (two functions) next to a plain
// function, as vLLM's test_namespace_tool_separator sends them.
const respNamespaceTools = `"tools":[{"type":"namespace","name":"mcp__computer_use","description":"Computer control tools.","tools":[` +
	`{"type":"function","name":"get_app_state","parameters":{"type":"object","properties":{"app":{"type":"string"}},"required":["app"]}},` +
	`{"type":"function","name":"click"}]},{"type":"function","name":"get_time"}]`

// TestResponsesNamespaceTools: the model sees a namespace's functions as
// <namespace>__<function> and writes those names; the function_call items
// carry name and namespace apart, streamed or not; input items with a
// namespace go back to the model flat; a named tool_choice may use the
// function's own name.
func TestResponsesNamespaceTools(t *testing.T) {
	const flat = "mcp__computer_use__get_app_state"
	item := func(index string) string {
		return `{"type":"function_call","id":"fc_fixed_` + index + `","call_id":"call_ID","name":"get_app_state","namespace":"mcp__computer_use","arguments":"{\"app\":\"Chrome\"}","status":"completed"}`
	}
	tests := []struct {
		name, extra string
		answer      []string
		want        string
	}{
		{"auto", "", []string{"<tool_call>\n{\"name\": \"" + flat + "\", \"arguments\": {\"app\": \"Chrome\"}}\n</tool_call>"}, `[` + item("0") + `]`},
		{"required", `,"tool_choice":"required"`, []string{`[{"name": "` + flat + `", "parameters": {"app": "Chrome"}}]`}, `[` + item("0") + `]`},
		{"named by its flat name", `,"tool_choice":{"type":"function","name":"` + flat + `"}`, []string{`{"app": "Chrome"}`}, `[` + item("0") + `]`},
		{"named by its own name", `,"tool_choice":{"type":"function","name":"get_app_state"}`, []string{`{"app": "Chrome"}`}, `[` + item("0") + `]`},
		{"a plain function beside it", "", []string{"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
			`[{"type":"function_call","id":"fc_fixed_0","call_id":"call_ID","name":"get_time","arguments":"{}","status":"completed"}]`},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: ", streamed"}[stream], func(t *testing.T) {
				f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
					return outputs(wire.FinishStop, eosIf(wire.FinishStop), tc.answer...)
				}}
				url := toolServer(t, f, "hermes", qwenTok(t))
				body := `{"input":"Inspect Chrome.",` + respNamespaceTools + tc.extra + `,"max_output_tokens":100`
				if stream {
					body += `,"stream":true`
				}
				code, resp := postTo(t, url, "/v1/responses", body+`}`)
				if code != http.StatusOK {
					t.Fatalf("%d %s", code, resp)
				}
				prompt := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false)
				if !strings.Contains(prompt, `"name": "`+flat+`"`) && !strings.Contains(prompt, `"name":"`+flat+`"`) {
					t.Errorf("the prompt does not show %s:\n%s", flat, prompt)
				}
				var output json.RawMessage
				if stream {
					var added, done []string
					for _, ev := range sseEvents(t, resp) {
						var e struct {
							Item     json.RawMessage
							Response struct{ Output json.RawMessage }
						}
						if err := json.Unmarshal(ev.data, &e); err != nil {
							t.Fatal(err)
						}
						switch ev.typ {
						case "response.output_item.added":
							added = append(added, string(e.Item))
						case "response.output_item.done":
							done = append(done, string(e.Item))
						case "response.completed":
							output = e.Response.Output
						}
					}
					var want []struct{ Name, Namespace string }
					_ = json.Unmarshal([]byte(tc.want), &want)
					var got struct{ Name, Namespace string }
					if len(added) != 1 || json.Unmarshal([]byte(added[0]), &got) != nil || got != want[0] {
						t.Errorf("output_item.added %v, want %+v", added, want[0])
					}
					if len(done) != 1 || "["+respCallIDs.ReplaceAllString(done[0], "call_ID")+"]" != tc.want {
						t.Errorf("output_item.done %v, want %s", done, tc.want)
					}
				} else {
					var out struct{ Output json.RawMessage }
					if err := json.Unmarshal([]byte(resp), &out); err != nil {
						t.Fatalf("%v: %s", err, resp)
					}
					output = out.Output
				}
				if diff := cmp.Diff(tc.want, respCallIDs.ReplaceAllString(string(output), "call_ID")); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
			})
		}
	}

	t.Run("an input call with a namespace goes back flat", func(t *testing.T) {
		f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishStop, eosIMEnd) }}
		url := toolServer(t, f, "hermes", qwenTok(t))
		code, resp := postTo(t, url, "/v1/responses", `{"input":[{"role":"user","content":"Inspect Chrome."},`+
			`{"type":"function_call","call_id":"call_1","name":"get_app_state","namespace":"mcp__computer_use","arguments":"{\"app\":\"Chrome\"}"},`+
			`{"type":"function_call_output","call_id":"call_1","output":"open"}],`+respNamespaceTools+`}`)
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, resp)
		}
		prompt := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false)
		if strings.Count(prompt, flat) < 2 { // the tool list and the call
			t.Errorf("the earlier call is not %s in the prompt:\n%s", flat, prompt)
		}
	})
}

func TestResponsesNamespaceToolErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("x", wire.FinishStop, eosIMEnd) }}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	twoNamespaces := `"tools":[{"type":"namespace","name":"a","tools":[{"type":"function","name":"f"}]},{"type":"namespace","name":"b","tools":[{"type":"function","name":"f"}]}]`
	tests := []struct{ name, body, param, message string }{
		{"namespace without a name", `{"input":"x","tools":[{"type":"namespace","tools":[{"type":"function","name":"f"}]}]}`, "tools[0].name", "namespace tool"},
		{"function without a name", `{"input":"x","tools":[{"type":"namespace","name":"a","tools":[{"type":"function"}]}]}`, "tools[0].tools[0].name", "required"},
		{"custom tool in a namespace", `{"input":"x","tools":[{"type":"namespace","name":"a","tools":[{"type":"custom","name":"f"}]}]}`, "tools[0].tools[0].type", "custom"},
		{"ambiguous tool_choice", `{"input":"x",` + twoNamespaces + `,"tool_choice":{"type":"function","name":"f"}}`, "tool_choice", "ambiguous: it is defined in more than one namespace (a__f, b__f)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := postTo(t, url, "/v1/responses", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(body, `"param":"`+tc.param+`"`) || !strings.Contains(body, tc.message) {
				t.Errorf("%d %s, want 400 for %s saying %q", code, body, tc.param, tc.message)
			}
		})
	}
	// Either namespace's function by its flat name is fine.
	if code, body := postTo(t, url, "/v1/responses", `{"input":"x",`+twoNamespaces+`,"tool_choice":{"type":"function","name":"b__f"}}`); code != http.StatusOK {
		t.Errorf("b__f: %d %s", code, body)
	}
}
