package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
)

func TestErrorJSON(t *testing.T) {
	tests := []struct {
		name       string
		err        *openai.Error
		wantStatus int
		want       string
	}{
		{
			name:       "bad request with param",
			err:        openai.BadRequest("temperature", "'temperature' must be non-negative, got %g.", -1.0),
			wantStatus: 400,
			want:       `{"error":{"message":"'temperature' must be non-negative, got -1.","type":"invalid_request_error","param":"temperature","code":null}}`,
		},
		{
			name:       "bad request without param",
			err:        openai.BadRequest("", "nope"),
			wantStatus: 400,
			want:       `{"error":{"message":"nope","type":"invalid_request_error","param":null,"code":null}}`,
		},
		{
			name:       "model not found",
			err:        openai.ModelNotFound("gpt-9"),
			wantStatus: 404,
			want:       `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
		},
		{
			name:       "not found",
			err:        openai.NotFound("", "session %q not found", "s1"),
			wantStatus: 404,
			want:       `{"error":{"message":"session \"s1\" not found","type":"invalid_request_error","param":null,"code":null}}`,
		},
		{
			name:       "unauthorized",
			err:        openai.Unauthorized("Incorrect API key provided."),
			wantStatus: 401,
			want:       `{"error":{"message":"Incorrect API key provided.","type":"authentication_error","param":null,"code":"invalid_api_key"}}`,
		},
		{
			name:       "service unavailable",
			err:        openai.ServiceUnavailable("engine %d is dead", 1),
			wantStatus: 503,
			want:       `{"error":{"message":"engine 1 is dead","type":"server_error","param":null,"code":null}}`,
		},
		{
			name:       "internal",
			err:        openai.Internal("boom"),
			wantStatus: 500,
			want:       `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`,
		},
		{
			name:       "context length exceeded",
			err:        openai.ContextLengthExceeded(5000, 4096),
			wantStatus: 400,
			want:       `{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input.","type":"exceed_context_size_error","param":null,"code":"context_length_exceeded","n_prompt_tokens":5000,"n_ctx":4096}}`,
		},
		{
			name:       "max tokens too large",
			err:        openai.MaxTokensTooLarge(4000, 100, 4096),
			wantStatus: 400,
			want:       `{"error":{"message":"'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is 4096 tokens and your request has 100 input tokens (4000 \u003e 4096 - 100).","type":"invalid_request_error","param":"max_tokens","code":"context_length_exceeded"}}`,
		},
		{
			name:       "unmarshalable code becomes null",
			err:        &openai.Error{Status: 400, Message: "m", Type: openai.TypeInvalidRequest, Code: func() {}},
			wantStatus: 400,
			want:       `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Status != tt.wantStatus {
				t.Errorf("Status = %d, want %d", tt.err.Status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.want, string(tt.err.JSON())); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorMarshalViaEncodingJSON(t *testing.T) {
	b, err := json.Marshal(openai.BadRequest("n", "bad n"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"error":{"message":"bad n","type":"invalid_request_error","param":"n","code":null}}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestErrorString(t *testing.T) {
	got := openai.BadRequest("top_p", "bad").Error()
	if want := "openai: 400 invalid_request_error (param top_p): bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestFromError(t *testing.T) {
	bad := openai.BadRequest("x", "y")
	if got := openai.FromError(fmt.Errorf("wrapped: %w", bad)); got != bad {
		t.Errorf("FromError(wrapped) = %v, want the wrapped *Error", got)
	}
	got := openai.FromError(errors.New("disk on fire"))
	if got.Status != http.StatusInternalServerError || !strings.Contains(got.Message, "disk on fire") {
		t.Errorf("FromError(plain) = %+v", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantParam string // "" = null
		wantMsg   string // substring
	}{
		{name: "empty body", body: "  ", wantMsg: "empty"},
		{name: "syntax error", body: `{"model": }`, wantMsg: "Invalid JSON"},
		{name: "truncated", body: `{"model": "m"`, wantMsg: "Invalid JSON"},
		{name: "trailing comma", body: `{"model": "m",}`, wantMsg: "Invalid JSON"},
		{name: "not an object", body: `[1,2]`, wantMsg: "must be a JSON object, got array"},
		{name: "temperature string", body: `{"temperature":"hot"}`, wantParam: "temperature", wantMsg: "expected a number, got string"},
		{name: "n float", body: `{"n":1.5}`, wantParam: "n", wantMsg: "1.5 is not an integer"},
		{name: "max_tokens overflow", body: `{"max_tokens":1e30}`, wantParam: "max_tokens", wantMsg: "out of range"},
		{name: "stream number", body: `{"stream":1}`, wantParam: "stream", wantMsg: "expected a boolean, got number"},
		{name: "nested stream_options", body: `{"stream_options":{"include_usage":"yes"}}`, wantParam: "stream_options.include_usage", wantMsg: "expected a boolean"},
		{name: "stop number", body: `{"stop":5}`, wantParam: "stop", wantMsg: "expected a string or an array of strings, got number"},
		{name: "stop mixed array", body: `{"stop":["a",1]}`, wantParam: "stop", wantMsg: "got array of mixed values"},
		{name: "messages not array", body: `{"messages":"hi"}`, wantParam: "messages", wantMsg: "expected an array, got string"},
		{name: "content number", body: `{"messages":[{"role":"user","content":7}]}`, wantParam: "messages.content", wantMsg: "a string or an array of content parts, got number"},
		{name: "content parts of strings", body: `{"messages":[{"role":"user","content":["a"]}]}`, wantParam: "messages.content", wantMsg: "array of strings"},
		{name: "logit_bias value", body: `{"logit_bias":{"5":"x"}}`, wantParam: "logit_bias", wantMsg: "expected a number"},
		{name: "seed above int64", body: `{"seed":9223372036854775808}`, wantParam: "seed", wantMsg: "Input should be less than or equal to 9223372036854775807 [type=less_than_equal"},
		{name: "seed below int64", body: `{"seed":-9223372036854775809}`, wantParam: "seed", wantMsg: "Input should be greater than or equal to -9223372036854775808 [type=greater_than_equal"},
		{name: "stop_token_ids overflow", body: `{"stop_token_ids":[3000000000]}`, wantParam: "stop_token_ids", wantMsg: "3000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req openai.ChatCompletionRequest
			e := openai.Decode([]byte(tt.body), &req)
			if e == nil {
				t.Fatal("Decode succeeded, want error")
			}
			checkErr(t, e, 400, tt.wantParam, tt.wantMsg)
		})
	}
}

func TestDecodeCompletionPromptErrors(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantMsg string
	}{
		{name: "number", body: `{"prompt":5}`, wantMsg: "got number"},
		{name: "object", body: `{"prompt":{}}`, wantMsg: "got object"},
		{name: "mixed", body: `{"prompt":["a",1]}`, wantMsg: "got array of mixed values"},
		{name: "float ids", body: `{"prompt":[1,2.5]}`, wantMsg: "not int32 integers"},
		{name: "huge id", body: `{"prompt":[1,4294967296]}`, wantMsg: "not int32 integers"},
		{name: "bad batch", body: `{"prompt":[[1],["a"]]}`, wantMsg: "got array of arrays"},
		{name: "bool elems", body: `{"prompt":[true]}`, wantMsg: "got array of booleans"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req openai.CompletionRequest
			e := openai.Decode([]byte(tt.body), &req)
			if e == nil {
				t.Fatal("Decode succeeded, want error")
			}
			checkErr(t, e, 400, "prompt", tt.wantMsg)
		})
	}
}

func checkErr(t *testing.T, e *openai.Error, wantStatus int, wantParam, wantMsg string) {
	t.Helper()
	if e.Status != wantStatus {
		t.Errorf("Status = %d, want %d", e.Status, wantStatus)
	}
	gotParam := ""
	if e.Param != nil {
		gotParam = *e.Param
		if gotParam == "" {
			t.Errorf("Param is a pointer to an empty string; want nil")
		}
	}
	if gotParam != wantParam {
		t.Errorf("Param = %q, want %q (message %q)", gotParam, wantParam, e.Message)
	}
	if !strings.Contains(e.Message, wantMsg) {
		t.Errorf("Message = %q, want it to contain %q", e.Message, wantMsg)
	}
	if e.Type != openai.TypeInvalidRequest {
		t.Errorf("Type = %q", e.Type)
	}
}
