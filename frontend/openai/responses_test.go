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
		{name: "reasoning item", body: `{"input":[{"type":"reasoning","summary":[]}]}`, wantParam: "input[0].type"},
		{name: "max_output_tokens 0", body: `{"input":"x","max_output_tokens":0}`, wantParam: "max_output_tokens"},
		{name: "n", body: `{"input":"x","n":2}`, wantParam: "n"},
		{name: "top_logprobs", body: `{"input":"x","top_logprobs":21}`, wantParam: "top_logprobs"},
		{name: "json_object", body: `{"input":"x","text":{"format":{"type":"json_object"}}}`},
		{name: "json_schema flat", body: `{"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}}}`},
		{name: "json_schema without schema", body: `{"input":"x","text":{"format":{"type":"json_schema","name":"p"}}}`, wantParam: "text.format"},
		{name: "truncation", body: `{"input":"x","truncation":"middle"}`, wantParam: "truncation"},
		{name: "conversation", body: `{"input":"x","conversation":"conv_1"}`, wantParam: "conversation"},
		{name: "shared field", body: `{"input":"x","top_p":2}`, wantParam: "top_p"},
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
		`"truncation":"","usage":null,"user":null,"metadata":{}}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
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
		{name: "allowed_token_ids", body: `{"allowed_token_ids":[1,2]}`, wantParam: "allowed_token_ids"},
		{name: "return_token_ids", body: `{"return_token_ids":true}`, wantParam: "return_token_ids"},
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
