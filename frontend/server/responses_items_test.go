package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestResponsesReasoningItems: a reasoning input item is its assistant
// turn's reasoning, under vLLM's and the older key, joined to the answer
// that follows it (or to the turn before it without one); encrypted
// reasoning is vLLM's 400.
func TestResponsesReasoningItems(t *testing.T) {
	src := `{% for m in messages %}[{{ m.role }}:{{ m.content }}{% if m.reasoning %}|r {{ m.reasoning }}{% endif %}{% if m.reasoning_content %}|rc {{ m.reasoning_content }}{% endif %}]{% endfor %}`
	tmpl, err := chattemplate.New(src, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen = 512; c.NumBlocks = 64; c.MaxRequestBody = "16K" }, templateTok{tokenizer.NewByte(), tmpl})
	reasoning := `{"type":"reasoning","id":"rs_1","content":[{"type":"reasoning_text","text":"greet back"}],"summary":[]}`
	tests := []struct {
		name, input, want string
	}{
		{"reasoning, then the answer", `[{"type":"message","role":"user","content":"Hello."},` + reasoning +
			`,{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi!"}]},{"role":"user","content":"Bye."}]`,
			"[user:Hello.][assistant:Hi!|r greet back|rc greet back][user:Bye.]"},
		{"reasoning last", `[{"type":"message","role":"user","content":"Hello."},` + reasoning + `]`,
			"[user:Hello.][assistant:|r greet back|rc greet back]"},
		{"summary when there is no content", `[{"role":"user","content":"Hello."},{"type":"reasoning","id":"rs_2","summary":[{"type":"summary_text","text":"short"}]}]`,
			"[user:Hello.][assistant:|r short|rc short]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(f.requests())
			if code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":`+tc.input+`,"max_output_tokens":1}`, nil); code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			if diff := cmp.Diff(tc.want, tokenizer.NewByte().Decode(f.requests()[n].PromptTokenIDs, false)); diff != "" {
				t.Fatalf("prompt (-want +got):\n%s", diff)
			}
		})
	}
	code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":[{"type":"reasoning","id":"rs","summary":[],"encrypted_content":"gAAA"}]}`, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "Encrypted content is not supported.") {
		t.Fatalf("encrypted: %d %s", code, body)
	}
}

// TestResponseMessages: enable_response_messages adds vLLM's
// input_messages and output_messages (the prompt and the answer, text and
// token ids), streamed too; without it they are null.
func TestResponseMessages(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("Hi", wire.FinishLength) }}
	ts := newTestServer(t, f, "")
	type raw struct {
		Type, Message string
		Tokens        []int32
	}
	var plain struct {
		InputMessages  []raw `json:"input_messages"`
		OutputMessages []raw `json:"output_messages"`
	}
	_, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"x","max_output_tokens":2}`, nil)
	if !strings.Contains(body, `"input_messages":null`) || !strings.Contains(body, `"output_messages":null`) {
		t.Fatalf("without enable_response_messages: %s", body)
	}
	for _, stream := range []bool{false, true} {
		n := len(f.requests())
		code, body := do(t, ts, http.MethodPost, "/v1/responses", `{"input":"x","max_output_tokens":2,"enable_response_messages":true,"stream":`+map[bool]string{false: "false", true: "true"}[stream]+`}`, nil)
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		if stream { // the response.completed event's response
			i := strings.LastIndex(body, `data: {"type":"response.completed"`)
			var ev struct{ Response json.RawMessage }
			if i < 0 || json.Unmarshal([]byte(strings.SplitN(body[i+len("data: "):], "\n", 2)[0]), &ev) != nil {
				t.Fatalf("no response.completed: %s", body)
			}
			body = string(ev.Response)
		}
		if err := json.Unmarshal([]byte(body), &plain); err != nil {
			t.Fatal(err)
		}
		prompt := f.requests()[n].PromptTokenIDs
		want := []raw{{"raw_message_tokens", tokenizer.NewByte().Decode(prompt, false), prompt}}
		if diff := cmp.Diff(want, plain.InputMessages); diff != "" {
			t.Errorf("stream %v: input_messages (-want +got):\n%s", stream, diff)
		}
		if diff := cmp.Diff([]raw{{"raw_message_tokens", "Hi", []int32{'H', 'i'}}}, plain.OutputMessages); diff != "" {
			t.Errorf("stream %v: output_messages (-want +got):\n%s", stream, diff)
		}
	}
}
