package anthropic

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: no body panics the decoder; a body it takes converts to a
// chat request that is JSON, and one it refuses is a *FieldError.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}},{"type":"thinking","thinking":"x"}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r"}]},{"type":"text","text":"q"}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"messages":[]}`,
		`{"model":"m","max_tokens":5,"thinking":{"type":"enabled"},"output_config":{"format":{"type":"json_schema","schema":{}}},"messages":[{"role":"system","content":"s"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":3}]}]}`,
		`{"max_tokens":-1}`, `[]`, `null`, `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[null]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<16 {
			return
		}
		for _, decode := range []func([]byte) (*Request, error){DecodeMessages, DecodeCountTokens} {
			r, err := decode(body)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("error %v (%T) is not a *FieldError", err, err)
				}
				continue
			}
			chat, err := r.ChatBody()
			if err != nil || !json.Valid(chat) {
				t.Fatalf("chat body %s: %v", chat, err)
			}
		}
	})
}
