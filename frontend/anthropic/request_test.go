package anthropic

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeMessagesErrors(t *testing.T) {
	tests := []struct {
		name, body string
		path, msg  string
	}{
		{"empty body", ``, "", "The request body is empty; expected a JSON object."},
		{"not an object", `[1]`, "", "The request body must be a JSON object, got array."},
		{"bad JSON", `{"model":`, "", "Invalid JSON in request body at byte 9: unexpected end of JSON input."},
		{"no model", `{"max_tokens":1,"messages":[]}`, "model", "Field required"},
		{"no max_tokens", `{"model":"m","messages":[]}`, "max_tokens", "Field required"},
		{"max_tokens 0", `{"model":"m","max_tokens":0,"messages":[]}`, "max_tokens", "Input should be greater than or equal to 1"},
		{"max_tokens a string", `{"model":"m","max_tokens":"1","messages":[]}`, "max_tokens", "Input should be a valid integer, got string"},
		{"no messages", `{"model":"m","max_tokens":1}`, "messages", "Field required"},
		{"null messages", `{"model":"m","max_tokens":1,"messages":null}`, "messages", "Field required"},
		{"no role", `{"model":"m","max_tokens":1,"messages":[{"content":"x"}]}`, "messages.0.role", "Field required"},
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, "messages.0.role", `Input should be 'user' or 'assistant', got "tool"`},
		{"no content", `{"model":"m","max_tokens":1,"messages":[{"role":"user"}]}`, "messages.0.content", "Field required"},
		{"content a number", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":1}]}`, "messages.0.content", "Input should be a valid string or a list of content blocks"},
		{"block without type", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, "messages.0.content.0.type", "Field required"},
		{"block text a number", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages.0.content.0.text", "Input should be a valid string"},
		{"image", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"u"}}]}]}`,
			"messages.0.content.1", "image input is not supported: the served model reads text only"},
		{"document", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`,
			"messages.0.content.0", "document input is not supported: the served model reads text only"},
		{"unknown block", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"server_tool_use"}]}]}`,
			"messages.0.content.0.type", `content block type "server_tool_use" is not supported: text, tool_use, tool_result and thinking blocks are`},
		{"tool_use from the user", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]}]}`,
			"messages.0.content.0.type", "tool_use blocks belong to assistant messages"},
		{"tool_use without name", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","input":{}}]}]}`,
			"messages.0.content.0.name", "Field required"},
		{"tool_use input a list", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]}]}`,
			"messages.0.content.0.input", "Input should be a valid dictionary"},
		{"tool_result from the assistant", `{"model":"m","max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t"}]}]}`,
			"messages.0.content.0.type", "tool_result blocks belong to user messages"},
		{"tool_result without id", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`,
			"messages.0.content.0.tool_use_id", "Field required"},
		{"image in a tool_result", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image","source":{}}]}]}]}`,
			"messages.0.content.0.content.1", "image input is not supported: the served model reads text only"},
		{"image in system", `{"model":"m","max_tokens":1,"system":[{"type":"image"}],"messages":[]}`,
			"system.0", `content block type "image" is not supported: only text blocks are`},
		{"system a number", `{"model":"m","max_tokens":1,"system":3,"messages":[]}`, "system", "Input should be a valid string or a list of content blocks"},
		{"server tool", `{"model":"m","max_tokens":1,"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[]}`,
			"tools.0.type", `tool type "bash_20250124" is not supported: only client tools (name, description, input_schema) are; Anthropic's own tools run on Anthropic's side`},
		{"tool without name", `{"model":"m","max_tokens":1,"tools":[{"input_schema":{}}],"messages":[]}`, "tools.0.name", "Field required"},
		{"tool without schema", `{"model":"m","max_tokens":1,"tools":[{"name":"f"}],"messages":[]}`, "tools.0.input_schema", "Field required"},
		{"tool schema a string", `{"model":"m","max_tokens":1,"tools":[{"name":"f","input_schema":"{}"}],"messages":[]}`, "tools.0.input_schema", "Input should be a valid dictionary"},
		{"tool_choice without type", `{"model":"m","max_tokens":1,"tool_choice":{},"messages":[]}`, "tool_choice.type", "Field required"},
		{"tool_choice bad type", `{"model":"m","max_tokens":1,"tool_choice":{"type":"required"},"messages":[]}`, "tool_choice.type", `Input should be 'auto', 'any', 'tool' or 'none', got "required"`},
		{"tool_choice tool without name", `{"model":"m","max_tokens":1,"tool_choice":{"type":"tool"},"messages":[]}`, "tool_choice.name", "Field required"},
		{"thinking bad type", `{"model":"m","max_tokens":1,"thinking":{"type":"on"},"messages":[]}`, "thinking.type", `Input should be 'enabled', 'adaptive' or 'disabled', got "on"`},
		{"output format bad type", `{"model":"m","max_tokens":1,"output_config":{"format":{"type":"text"}},"messages":[]}`, "output_config.format.type", `Input should be 'json_schema', got "text"`},
		{"output format no schema", `{"model":"m","max_tokens":1,"output_config":{"format":{"type":"json_schema"}},"messages":[]}`, "output_config.format.schema", "Input should be a valid dictionary"},
		{"stop_sequences a string", `{"model":"m","max_tokens":1,"stop_sequences":"x","messages":[]}`, "stop_sequences", "Input should be a valid list, got string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMessages([]byte(tc.body))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want a *FieldError", err, err)
			}
			if diff := cmp.Diff(FieldError{Path: tc.path, Message: tc.msg}, *fe); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeCountTokensNeedsNoMaxTokens(t *testing.T) {
	r, err := DecodeCountTokens([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || r.MaxTokens != nil {
		t.Fatalf("%v %+v", err, r)
	}
	if _, err := DecodeCountTokens([]byte(`{"model":"m"}`)); err == nil {
		t.Fatal("count_tokens without messages: no error")
	}
}

func TestDecodeMessagesParses(t *testing.T) {
	body := `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2; cch=a5145;"},{"type":"text","text":"One."},{"type":"text","text":"Two."}],` +
		`"messages":[{"role":"system","content":"Three."},{"role":"ctx","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"redacted_thinking","data":"x"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":[{"type":"text","text":"r1"},{"type":"text","text":"r2"}],"is_error":true},{"type":"tool_result","tool_use_id":"v","content":"r3"},{"type":"tool_result","tool_use_id":"w"}]}]}`
	r, err := DecodeMessages([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.SystemText != "One.\nTwo.\nThree." {
		t.Errorf("system %q: the billing header left out, the system message joined", r.SystemText)
	}
	if len(r.Messages) != 3 || r.Messages[0].Role != "user" || r.Messages[0].Blocks[0].Text != "a" {
		t.Fatalf("messages %+v", r.Messages)
	}
	results := r.Messages[2].Blocks
	if results[0].ResultText != "r1\nr2" || !results[0].IsError || results[1].ResultText != "r3" || results[2].ResultText != "" {
		t.Errorf("tool results %+v", results)
	}
}
