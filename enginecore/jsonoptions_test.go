package enginecore

import (
	"encoding/json"
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// TestJSONOptionsAdditionalProperties: an object schema that lists
// properties and says nothing of others is closed, as vLLM's default
// backend (XGrammar's strict mode) and llama.cpp read it; one that says
// (additionalProperties, patternProperties, unevaluatedProperties), one
// without properties and an allOf of several objects stay as written;
// disable_additional_properties closes every object.
func TestJSONOptionsAdditionalProperties(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		disable      bool
		want         string // the schema out, less "x-guidance"
	}{
		{"listed", `{"type":"object","properties":{"a":{"type":"string"}}}`, false,
			`{"additionalProperties":false,"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"nested", `{"properties":{"o":{"type":"object","properties":{"b":{"type":"boolean"}}}}}`, false,
			`{"additionalProperties":false,"properties":{"o":{"additionalProperties":false,"properties":{"b":{"type":"boolean"}},"type":"object"}}}`},
		{"$defs", `{"$defs":{"P":{"type":"object","properties":{"x":{"type":"boolean"}}}},"$ref":"#/$defs/P"}`, false,
			`{"$defs":{"P":{"additionalProperties":false,"properties":{"x":{"type":"boolean"}},"type":"object"}},"$ref":"#/$defs/P"}`},
		{"says true", `{"type":"object","properties":{"a":{"type":"boolean"}},"additionalProperties":true}`, false,
			`{"additionalProperties":true,"properties":{"a":{"type":"boolean"}},"type":"object"}`},
		{"pattern", `{"type":"object","properties":{"a":{"type":"boolean"}},"patternProperties":{"^x":{"type":"boolean"}}}`, false,
			`{"patternProperties":{"^x":{"type":"boolean"}},"properties":{"a":{"type":"boolean"}},"type":"object"}`},
		{"any object", `{"type":"object"}`, false, `{"type":"object"}`},
		{"allOf", `{"allOf":[{"properties":{"a":{"type":"boolean"}}},{"properties":{"b":{"type":"boolean"}}}]}`, false,
			`{"allOf":[{"properties":{"a":{"type":"boolean"}}},{"properties":{"b":{"type":"boolean"}}}]}`},
		{"one-member allOf", `{"allOf":[{"properties":{"a":{"type":"boolean"}}}]}`, false,
			`{"allOf":[{"additionalProperties":false,"properties":{"a":{"type":"boolean"}}}]}`},
		{"disable: every object", `{"type":"object"}`, true, `{"additionalProperties":false,"type":"object"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := jsonOptions(tc.schema, &wire.StructuredOutputs{JSON: tc.schema, DisableAdditionalProperties: tc.disable})
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatal(err)
			}
			delete(v, "x-guidance")
			got, _ := json.Marshal(v)
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
