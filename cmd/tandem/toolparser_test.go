package main

import (
	"testing"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// templateTokenizer is the byte tokenizer with a Jinja chat template.
type templateTokenizer struct {
	tokenizer.Tokenizer
	tmpl tokenizer.Template
}

func (t templateTokenizer) ChatTemplate() tokenizer.Template { return t.tmpl }

// TestToolFlags: --tool-call-parser wins, else the chat template's
// syntax; --enable-auto-tool-choice=false reads none.
func TestToolFlags(t *testing.T) {
	tmpl, err := chattemplate.New(`{{ "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" }}`, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	qwen := templateTokenizer{tokenizer.NewByte(), tmpl}
	tests := []struct {
		name  string
		flags toolFlags
		tok   tokenizer.Tokenizer
		want  string
	}{
		{"from the template", toolFlags{enabled: true}, qwen, "hermes"},
		{"the flag wins", toolFlags{parser: "mistral", enabled: true}, qwen, "mistral"},
		{"an alias", toolFlags{parser: "llama4_json", enabled: true}, qwen, "llama3_json"},
		{"disabled", toolFlags{parser: "hermes"}, qwen, "none"},
		{"a template without tools", toolFlags{enabled: true}, tokenizer.NewByte(), "none"},
	}
	for _, tc := range tests {
		p, err := tc.flags.format(tc.tok)
		if err != nil || toolParserName(p) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, toolParserName(p), err, tc.want)
		}
	}
	if err := (&toolFlags{parser: "qwen"}).check(); err == nil {
		t.Error("an unknown parser passed the check")
	}
}
