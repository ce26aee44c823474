package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
)

func TestResponsesInputForms(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		json string
		want openai.ResponseInput
	}{
		{"string", `"hi"`, openai.ResponseInput{Text: str("hi")}},
		{"easy messages", `[{"role":"user","content":"a"}]`, openai.ResponseInput{Items: []openai.ResponseInputItem{{Role: "user", Content: openai.ResponseContent{Text: "a"}}}}},
		{"typed parts", `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"},{"type":"input_text","text":"y"}]}]`,
			openai.ResponseInput{Items: []openai.ResponseInputItem{{Type: "message", Role: "assistant", Content: openai.ResponseContent{Text: "x\ny",
				Parts: []openai.ResponseContentPart{{Type: "output_text", Text: "x"}, {Type: "input_text", Text: "y"}}}}}}},
		{"function call and output", `[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"a\":1}","status":"completed"},` +
			`{"type":"function_call_output","call_id":"call_1","output":"ok"},{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"ok"}]}]`,
			openai.ResponseInput{Items: []openai.ResponseInputItem{
				{Type: "function_call", ID: "fc_1", CallID: "call_1", Name: "f", Arguments: `{"a":1}`, Status: "completed"},
				{Type: "function_call_output", CallID: "call_1", Output: &openai.ResponseContent{Text: "ok"}},
				{Type: "function_call_output", CallID: "call_1", Output: &openai.ResponseContent{Text: "ok", Parts: []openai.ResponseContentPart{{Type: "input_text", Text: "ok"}}}}}}},
		{"empty list", `[]`, openai.ResponseInput{Items: []openai.ResponseInputItem{}}},
		{"null", `null`, openai.ResponseInput{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got openai.ResponseInput
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateResponses(t *testing.T) {
	tests := []struct {
		name, body, wantParam string
	}{
		{name: "string input", body: `{"input":"hi","max_output_tokens":5,"top_logprobs":2,"store":false,"temperature":0.5}`},
		{name: "messages", body: `{"input":[{"role":"developer","content":"be nice"},{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`},
		{name: "input missing", body: `{}`, wantParam: "input"},
		{name: "input a number", body: `{"input":5}`, wantParam: "input"},
		{name: "bad role", body: `{"input":[{"role":"robot","content":"x"}]}`, wantParam: "input[0].role"},
		{name: "image part", body: `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]}`, wantParam: "input[0].content[0].type"},
		{name: "web_search_call item", body: `{"input":[{"type":"web_search_call","id":"ws_1"}]}`, wantParam: "input[0].type"},
		{name: "encrypted reasoning", body: `{"input":[{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}]}`, wantParam: "input"},
		{name: "max_output_tokens 0", body: `{"input":"x","max_output_tokens":0}`, wantParam: "max_output_tokens"},
		{name: "n", body: `{"input":"x","n":2}`, wantParam: "n"},
		{name: "top_logprobs -1", body: `{"input":"x","top_logprobs":-1}`, wantParam: "top_logprobs"},
		{name: "top_logprobs 21 (the server checks the max logprobs)", body: `{"input":"x","top_logprobs":21}`},
		{name: "json_object", body: `{"input":"x","text":{"format":{"type":"json_object"}}}`},
		{name: "json_schema flat", body: `{"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}}}`},
		{name: "json_schema without schema", body: `{"input":"x","text":{"format":{"type":"json_schema","name":"p"}}}`, wantParam: "text.format"},
		{name: "truncation", body: `{"input":"x","truncation":"middle"}`, wantParam: "truncation"},
		{name: "conversation", body: `{"input":"x","conversation":"conv_1"}`, wantParam: "conversation"},
		{name: "shared field", body: `{"input":"x","top_p":2}`, wantParam: "top_p"},
		{name: "function call items", body: `{"input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c","output":"y"}]}`},
		{name: "call without call_id", body: `{"input":[{"type":"function_call","name":"f"}]}`, wantParam: "input[0].call_id"},
		{name: "call without name", body: `{"input":[{"type":"function_call","call_id":"c"}]}`, wantParam: "input[0].name"},
		{name: "output without call_id", body: `{"input":[{"type":"function_call_output","output":"y"}]}`, wantParam: "input[0].call_id"},
		{name: "output missing", body: `{"input":[{"type":"function_call_output","call_id":"c"}]}`, wantParam: "input[0].output"},
		{name: "image output", body: `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"u"}]}]}`, wantParam: "input[0].output[0].type"},
		{name: "function tools", body: `{"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":true}],"tool_choice":"required","parallel_tool_calls":false}`},
		{name: "named function", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`},
		{name: "web_search tool", body: `{"input":"x","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`, wantParam: "tools[1].type"},
		{name: "mcp tool", body: `{"input":"x","tools":[{"type":"mcp","server_label":"s"}]}`, wantParam: "tools[0].type"},
		{name: "chat's nested tool", body: `{"input":"x","tools":[{"type":"function","function":{"name":"f"}}]}`, wantParam: "tools[0].name"},
		{name: "tools not a list", body: `{"input":"x","tools":{"type":"function"}}`, wantParam: "tools"},
		{name: "chat's named choice", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","function":{"name":"f"}}}`, wantParam: "tool_choice"},
		{name: "allowed_tools choice", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, wantParam: "tool_choice"},
		{name: "unknown mode", body: `{"input":"x","tool_choice":"any"}`, wantParam: "tool_choice"},
		{name: "required without tools", body: `{"input":"x","tool_choice":"required"}`, wantParam: "tool_choice"},
		{name: "named, not a tool", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, wantParam: "tool_choice"},
		{name: "required and text.format", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":"required","text":{"format":{"type":"json_object"}}}`, wantParam: "tool_choice"},
		{name: "auto and text.format", body: `{"input":"x","tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_object"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req openai.ResponsesRequest
			e := openai.Decode([]byte(tc.body), &req)
			if e == nil {
				e = req.Validate()
			}
			switch {
			case tc.wantParam == "" && e != nil:
				t.Fatalf("unexpected error %v", e)
			case tc.wantParam != "" && (e == nil || e.Param == nil || *e.Param != tc.wantParam):
				t.Fatalf("error %v, want param %q", e, tc.wantParam)
			}
		})
	}
}

func TestResponsesObjectJSON(t *testing.T) {
	b, err := json.Marshal(openai.Response{ID: "resp_1", Object: openai.ObjectResponse, Status: openai.ResponseStatusCompleted,
		Output: []openai.ResponseOutputItem{{Type: "message", ID: "msg_1", Status: "completed", Role: "assistant",
			Content: []openai.ResponseOutputText{{Type: "output_text", Text: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"resp_1","object":"response","created_at":0,"status":"completed","error":null,"incomplete_details":null,"instructions":null,` +
		`"max_output_tokens":null,"model":"","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]}]}],"parallel_tool_calls":false,"previous_response_id":null,` +
		`"reasoning":null,"store":false,"temperature":null,"text":{},"tool_choice":"auto","tools":[],"top_logprobs":null,"top_p":null,` +
		`"truncation":"","usage":null,"user":null,"metadata":{},"background":false,"input_messages":null,"output_messages":null}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestResponsesToolPlan(t *testing.T) {
	tests := []struct {
		name, fields string
		want         openai.ToolPlan
		schema       string // the constraint's JSON schema; "" for none
	}{
		{"no tools", `"tool_choice":"auto"`, openai.ToolPlan{Names: []string{}}, ""},
		{"tools: auto", `"tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]`,
			openai.ToolPlan{Mode: openai.ToolsAuto, Names: []string{"f", "g"}}, ""},
		{"auto, one call", `"tools":[{"type":"function","name":"f"}],"parallel_tool_calls":false`,
			openai.ToolPlan{Mode: openai.ToolsAuto, Names: []string{"f"}, OneCall: true}, ""},
		{"none", `"tools":[{"type":"function","name":"f"}],"tool_choice":"none"`, openai.ToolPlan{Names: []string{"f"}}, ""},
		{"required, one call", `"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer"}}}}],"tool_choice":"required","parallel_tool_calls":false`,
			openai.ToolPlan{Mode: openai.ToolsRequired, Names: []string{"f"}, OneCall: true},
			`{"items":{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"type":"object","properties":{"a":{"type":"integer"}}}},"required":["name","parameters"],"additionalProperties":false}]},"maxItems":1,"minItems":1,"type":"array"}`},
		{"named", `"tools":[{"type":"function","name":"f"},{"type":"function","name":"g","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"g"}`,
			openai.ToolPlan{Mode: openai.ToolsNamed, Name: "g", Names: []string{"f", "g"}}, `{"type":"object"}`},
		{"namespace: flattened in order", `"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"},{"type":"function","name":"h"}]},{"type":"function","name":"g"}]`,
			openai.ToolPlan{Mode: openai.ToolsAuto, Names: []string{"ns__f", "ns__h", "g"}}, ""},
		{"namespace: named by the function's own name", `"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}],"tool_choice":{"type":"function","name":"f"}`,
			openai.ToolPlan{Mode: openai.ToolsNamed, Name: "ns__f", Names: []string{"ns__f"}}, `{"type":"object"}`},
		{"namespace: a plain function's name wins", `"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]},{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}`,
			openai.ToolPlan{Mode: openai.ToolsNamed, Name: "f", Names: []string{"ns__f", "f"}}, `{"type":"object","properties":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req openai.ResponsesRequest
			if e := openai.Decode([]byte(`{"input":"x",`+tc.fields+`}`), &req); e != nil {
				t.Fatal(e)
			}
			plan, e := req.ToolPlanOf()
			if e != nil {
				t.Fatal(e)
			}
			schema := ""
			if plan.Constraint != nil {
				schema = plan.Constraint.JSON
			}
			plan.Constraint = nil
			if diff := cmp.Diff(tc.want, plan); diff != "" || schema != tc.schema {
				t.Errorf("schema %s, want %s; plan (-want +got):\n%s", schema, tc.schema, diff)
			}
		})
	}
	var req openai.ResponsesRequest
	_ = openai.Decode([]byte(`{"input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}]}`), &req)
	tools, _ := req.FunctionTools()
	if b, _ := json.Marshal(tools); string(b) != `[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}]` {
		t.Errorf("chat form of the tools: %s", b)
	}
}

func TestResponsesFunctionCallJSON(t *testing.T) {
	b, err := json.Marshal(openai.ResponseOutputItem{Type: openai.ItemFunctionCall, ID: "fc_1", Status: "in_progress", CallID: "call_1", Name: "f"})
	if want := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"","status":"in_progress"}`; err != nil || string(b) != want {
		t.Errorf("%v: %s, want %s", err, b, want)
	}
	b, err = json.Marshal(openai.ResponseOutputItem{Type: openai.ItemFunctionCall, ID: "fc_1", Status: "completed", CallID: "call_1", Name: "f", Namespace: "ns", Arguments: "{}"})
	if want := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","namespace":"ns","arguments":"{}","status":"completed"}`; err != nil || string(b) != want {
		t.Errorf("%v: %s, want %s", err, b, want)
	}
	var req openai.ResponsesRequest
	_ = openai.Decode([]byte(`{"input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]},{"type":"function","name":"g"}]}`), &req)
	if diff := cmp.Diff(map[string]openai.ToolCallName{"ns__f": {Name: "f", Namespace: "ns"}}, req.ToolCallNames()); diff != "" {
		t.Errorf("ToolCallNames (-want +got):\n%s", diff)
	}
}

func TestValidateTokenize(t *testing.T) {
	tests := []struct {
		name, body, wantParam string
	}{
		{name: "prompt", body: `{"prompt":"x"}`},
		{name: "messages", body: `{"messages":[{"role":"user","content":"x"}]}`},
		{name: "neither", body: `{}`, wantParam: "prompt"},
		{name: "both", body: `{"prompt":"x","messages":[{"role":"user","content":"x"}]}`, wantParam: "messages"},
		{name: "bad message", body: `{"messages":[{"content":"x"}]}`, wantParam: "messages[0].role"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req openai.TokenizeRequest
			if e := openai.Decode([]byte(tc.body), &req); e != nil {
				t.Fatal(e)
			}
			e := req.Validate()
			if (tc.wantParam == "") != (e == nil) || (e != nil && *e.Param != tc.wantParam) {
				t.Fatalf("error %v, want param %q", e, tc.wantParam)
			}
		})
	}
}

func TestCheckUnsupported(t *testing.T) {
	tests := []struct {
		name, body, wantParam string
	}{
		{name: "none", body: `{"prompt":"x"}`},
		{name: "empty values are unset", body: `{"allowed_token_ids":[],"bad_words":null,"guided_json":{},"return_token_ids":false,"guided_regex":""}`},
		{name: "allowed_token_ids is supported", body: `{"allowed_token_ids":[1,2],"logprob_token_ids":[3]}`},
		{name: "bad_words", body: `{"bad_words":["x"]}`, wantParam: "bad_words"},
		{name: "not an object", body: `[1]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := openai.CheckUnsupported([]byte(tc.body))
			if (tc.wantParam == "") != (e == nil) || (e != nil && *e.Param != tc.wantParam) {
				t.Fatalf("error %v, want param %q", e, tc.wantParam)
			}
		})
	}
}

func FuzzDecodeResponses(f *testing.F) {
	for _, s := range []string{
		`{"input":"hi"}`, `{"input":[{"role":"user","content":"a"}]}`,
		`{"input":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}],"previous_response_id":"resp_1"}`,
		`{"input":5}`, `{"input":[{"content":{}}]}`, `{"input":[1]}`, `{"text":{"format":{"type":"json_schema"}}}`,
		`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"y"}]}],` +
			`"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req openai.ResponsesRequest
		if e := openai.Decode(body, &req); e != nil {
			if e.Status != 400 && e.Status != 500 {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if e := req.Validate(); e != nil {
			if e.Status != 400 || e.Param == nil {
				t.Fatalf("validation error without param or 400: %+v", e)
			}
			return
		}
		if req.Input.Text == nil && req.Input.Items == nil {
			t.Fatal("validated a request without input")
		}
		if _, err := json.Marshal(req.Input); err != nil {
			t.Fatal(err)
		}
	})
}
