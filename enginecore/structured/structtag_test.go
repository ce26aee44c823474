package structured_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/structured"
)

// TestStructuralTag: free text until a trigger, then one of its
// structures (begin, a JSON value of the schema, end), then free text
// again; a trigger is never free text.
func TestStructuralTag(t *testing.T) {
	v, _ := byteVocab(t)
	tag := `{"type": "structural_tag", "triggers": ["<f=", "<|py|>"], "structures": [
		{"begin": "<f=weather>", "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}, "end": "</f>"},
		{"begin": "<f=time>", "schema": "{\"type\": \"object\", \"properties\": {\"tz\": {\"enum\": [\"UTC\", \"CET\"]}}, \"required\": [\"tz\"]}", "end": "</f>"},
		{"begin": "<|py|>", "schema": {"type": "integer"}, "end": ""}]}`
	c := structured.Constraint{Kind: structured.StructuralTag, Data: tag}
	valid := []string{
		"", "Just text, no call.",
		`<f=weather>{"city":"Paris"}</f>`,
		"Let me check. <f=weather>{\"city\": \"Oslo\"}</f> and <f=time>{\"tz\":\"CET\"}</f>\nDone.",
		"a <f=time>{\"tz\":\"UTC\"}</f><|py|>42",
	}
	bad := []string{
		`<f=weather>{"town":"Paris"}</f>`, // schema
		`<f=rain>{}</f>`,                  // no such structure
		`<f=weather>{"city":"x"}`,         // no end
		`<f=time>{"tz":"PST"}</f>`,
		"text <|py|>x",
	}
	checkStrings(t, v, c, valid, bad, false)
	for _, tc := range []struct{ data, want string }{
		{`{"structures": [{"begin": "<x>", "schema": {}, "end": ""}], "triggers": ["<f="]}`, "none of the triggers"},
		{`{"structures": [], "triggers": ["<f="]}`, "needs"},
		{`{"type": "structural_tag", "format": {"type": "triggered_tags"}}`, "format"},
		{`{"structures": [{"begin": "<f=a>", "schema": [1], "end": ""}], "triggers": ["<f="]}`, "schema"},
		{`{"structures": [{"begin": "<f=a>", "schema": {}, "end": ""}], "triggers": [""]}`, "empty"},
		{`not json`, "not valid JSON"},
	} {
		_, err := v.Compile(structured.Constraint{Kind: structured.StructuralTag, Data: tc.data})
		if !errors.Is(err, structured.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", tc.data, err, tc.want)
		}
	}
}
