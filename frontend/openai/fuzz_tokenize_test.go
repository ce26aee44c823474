package openai_test

import (
	"encoding/json"
	"testing"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// FuzzDecodeTokenize: any body decodes to a TokenizeRequest or a 400; one that
// validates has exactly one of prompt and messages, and its chat form validates too.
func FuzzDecodeTokenize(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hi"}`, `{"prompt":"hi","add_special_tokens":false,"return_token_strs":true}`,
		`{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`,
		`{"messages":[{"role":"assistant","content":"a"}],"continue_final_message":true,"chat_template_kwargs":{"k":[1]}}`,
		`{"prompt":"a","messages":[]}`, `{}`, `{"prompt":5}`, `{"messages":[{"content":{}}]}`, `{"tools":"x"}`,
		`[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req openai.TokenizeRequest
		if e := openai.Decode(body, &req); e != nil {
			if e.Status != 400 && e.Status != 500 {
				t.Fatalf("status %d", e.Status)
			}
			_ = e.JSON()
			return
		}
		if e := req.Validate(); e != nil {
			if e.Status != 400 {
				t.Fatalf("validation error with status %d: %+v", e.Status, e)
			}
			return
		}
		if (req.Prompt == nil) == (req.Messages == nil) {
			t.Fatalf("validated a request with prompt %v and messages %v", req.Prompt, req.Messages)
		}
		if req.Messages != nil {
			chat := req.ChatRequest()
			if e := chat.Validate(); e != nil {
				t.Fatalf("the chat form of a valid tokenize request is invalid: %+v", e)
			}
			chat.AddGenPrompt()
		}
	})
}

// FuzzDecodeDetokenize: any body decodes to a DetokenizeRequest or a 400, and a decoded
// one re-encodes.
func FuzzDecodeDetokenize(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","tokens":[1,2,3]}`, `{"tokens":[]}`, `{"tokens":[-1,2147483648]}`, `{"tokens":"x"}`,
		`{"tokens":[1.5]}`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req openai.DetokenizeRequest
		if e := openai.Decode(body, &req); e != nil {
			if e.Status != 400 && e.Status != 500 {
				t.Fatalf("status %d", e.Status)
			}
			return
		}
		if _, err := json.Marshal(req); err != nil {
			t.Fatal(err)
		}
	})
}
