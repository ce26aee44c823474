package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

func TestResponsesStreamTranscript(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		script func(*wire.EngineCoreRequest) []wire.EngineCoreOutput
	}{
		{"responses_stream.sse", `{"model":"dummy","input":"hi","stream":true}`,
			func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hé!", wire.FinishStop, 259) }},
		{"responses_stream_incomplete.sse", `{"model":"dummy","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true,"max_output_tokens":2}`,
			func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ab", wire.FinishLength) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, &fakeEngine{script: tc.script}, "")
			code, body := do(t, ts, http.MethodPost, "/v1/responses", tc.body, nil)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			golden(t, tc.name, body)
		})
	}
}

// responseBody is what the tests read of a response object.
type responseBody struct {
	ID                 string
	Status             string
	PreviousResponseID *string `json:"previous_response_id"`
	Output             []struct {
		ID      string
		Status  string
		Content []struct{ Type, Text string }
	}
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	}
	IncompleteDetails *struct{ Reason string } `json:"incomplete_details"`
}

func decodeResponse(t *testing.T, body string) responseBody {
	t.Helper()
	var r responseBody
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return r
}

func TestResponsesConversation(t *testing.T) {
	replies := []string{"Paris", "Lyon"}
	f := &fakeEngine{}
	f.script = func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		r := replies[0]
		replies = replies[1:]
		return tokens(r, wire.FinishStop, 259)
	}
	ts := newTestServer(t, f, "")
	hdr := func(id string) map[string]string { return map[string]string{"X-Request-Id": id} }

	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"capital?","instructions":"terse"}`, hdr("one"))
	r1 := decodeResponse(t, body)
	if code != http.StatusOK || r1.ID != "resp_one" || r1.Status != "completed" || r1.Output[0].Content[0].Text != "Paris" {
		t.Fatalf("first: %d %s", code, body)
	}
	if u := r1.Usage; u.OutputTokens != 6 || u.TotalTokens != u.InputTokens+6 {
		t.Fatalf("usage %+v", u)
	}
	code, body = do(t, ts, http.MethodPost, "/v1/responses", `{"input":[{"role":"user","content":"another?"}],"previous_response_id":"resp_one"}`, hdr("two"))
	r2 := decodeResponse(t, body)
	if code != http.StatusOK || r2.PreviousResponseID == nil || *r2.PreviousResponseID != "resp_one" {
		t.Fatalf("follow-up: %d %s", code, body)
	}
	reqs := f.requests()
	prompt := tokenizer.NewByte().Decode(reqs[1].PromptTokenIDs, false)
	want := "<|im_start|>user\ncapital?<|im_end|>\n<|im_start|>assistant\nParis<|im_end|>\n<|im_start|>user\nanother?<|im_end|>\n<|im_start|>assistant\n"
	if diff := cmp.Diff(want, prompt); diff != "" {
		t.Fatalf("follow-up prompt: history without the instructions expected (-want +got):\n%s", diff)
	}
	if first := tokenizer.NewByte().Decode(reqs[0].PromptTokenIDs, false); !strings.HasPrefix(first, "<|im_start|>system\nterse<|im_end|>") {
		t.Fatalf("first prompt lacks the instructions: %q", first)
	}

	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string // substring of the body
	}{
		{"get stored", http.MethodGet, "/v1/responses/resp_two", "", 200, `"text":"Lyon"`},
		{"unknown previous", http.MethodPost, "/v1/responses", `{"input":"x","previous_response_id":"resp_nope"}`, 400, `"code":"previous_response_not_found"`},
		{"delete", http.MethodDelete, "/v1/responses/resp_one", "", 200, `"deleted":true`},
		{"get deleted", http.MethodGet, "/v1/responses/resp_one", "", 404, `not found`},
		{"delete again", http.MethodDelete, "/v1/responses/resp_one", "", 404, `not found`},
		{"bad id", http.MethodGet, "/v1/responses/xyz", "", 404, `not found`},
		{"input missing", http.MethodPost, "/v1/responses", `{}`, 400, `"param":"input"`},
		{"web_search_call item", http.MethodPost, "/v1/responses", `{"input":[{"type":"web_search_call","id":"ws_1"}]}`, 400, `"param":"input[0].type"`},
		{"json schema without a schema", http.MethodPost, "/v1/responses", `{"input":"x","text":{"format":{"type":"json_schema"}}}`, 400, `needs a JSON schema`},
		{"background without store", http.MethodPost, "/v1/responses", `{"input":"x","background":true,"store":false}`, 400, `"param":"background"`},
		{"max_output_tokens too large", http.MethodPost, "/v1/responses", `{"input":"x","max_output_tokens":1000}`, 400, `"param":"max_output_tokens"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, ts, tc.method, tc.path, tc.body, nil)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s, want %d with %s", code, body, tc.status, tc.want)
			}
		})
	}
}

func TestResponsesStoreFalse(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("ok", wire.FinishStop, 259) }}
	ts := newTestServer(t, f, "")
	if code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"x","store":false}`, map[string]string{"X-Request-Id": "s"}); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := do(t, ts, http.MethodGet, "/v1/responses/resp_s", "", nil); code != http.StatusNotFound {
		t.Fatalf("store:false response retrievable: %d", code)
	}
}
