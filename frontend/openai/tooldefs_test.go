package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequiredSchemaHoistsDefs(t *testing.T) {
	opt := `{"type":"object","properties":{"unit":{"type":"string"}}}`
	tool := func(name, params string) Tool {
		return Tool{Type: "function", Function: FunctionDef{Name: name, Parameters: json.RawMessage(params)}}
	}
	tests := []struct {
		name  string
		tools []Tool
		want  string // the schema's items and $defs
	}{
		{"no refs nests as is",
			[]Tool{tool("f", `{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}},"required":["name","parameters"],"additionalProperties":false}]}|null`},
		{"$defs",
			[]Tool{tool("f", `{"type":"object","properties":{"city":{"type":"string"},"options":{"$ref":"#/$defs/Opt"}},"$defs":{"Opt":`+opt+`}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"type":"object","properties":{"city":{"type":"string"},"options":{"$ref":"#/$defs/Opt"}}}},"required":["name","parameters"],"additionalProperties":false}]}|{"Opt":` + opt + `}`},
		{"definitions and a ref inside a def",
			[]Tool{tool("f", `{"properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"items":{"$ref":"#/definitions/B"}},"B":{"type":"string"}}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"properties":{"a":{"$ref":"#/$defs/A"}}}},"required":["name","parameters"],"additionalProperties":false}]}|{"A":{"items":{"$ref":"#/$defs/B"}},"B":{"type":"string"}}`},
		{"two tools with the same def name",
			[]Tool{tool("f", `{"properties":{"o":{"$ref":"#/$defs/Opt"}},"$defs":{"Opt":{"type":"string"}}}`),
				tool("g", `{"properties":{"o":{"$ref":"#/$defs/Opt/items"}},"$defs":{"Opt":{"items":{"type":"integer"}}}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"properties":{"o":{"$ref":"#/$defs/Opt"}}}},"required":["name","parameters"],"additionalProperties":false},` +
				`{"type":"object","properties":{"name":{"const":"g"},"parameters":{"properties":{"o":{"$ref":"#/$defs/Opt_2/items"}}}},"required":["name","parameters"],"additionalProperties":false}]}|{"Opt":{"type":"string"},"Opt_2":{"items":{"type":"integer"}}}`},
		{"a ref to the root moves the whole schema",
			[]Tool{tool("tree", `{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}},"const":{"const":{"$ref":"#"}}}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"tree"},"parameters":{"$ref":"#/$defs/tree"}},"required":["name","parameters"],"additionalProperties":false}]}|{"tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/tree"}},"const":{"const":{"$ref":"#"}}}}}`},
		{"other documents' refs stay",
			[]Tool{tool("f", `{"properties":{"a":{"$ref":"https://example.com/a.json"}}}`)},
			`{"anyOf":[{"type":"object","properties":{"name":{"const":"f"},"parameters":{"properties":{"a":{"$ref":"https://example.com/a.json"}}}},"required":["name","parameters"],"additionalProperties":false}]}|null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			so, e := requiredSchema(tt.tools, true)
			if e != nil {
				t.Fatal(e)
			}
			var got struct {
				Items json.RawMessage `json:"items"`
				Defs  json.RawMessage `json:"$defs"`
			}
			if err := json.Unmarshal([]byte(so.JSON), &got); err != nil {
				t.Fatal(err)
			}
			if g := string(got.Items) + "|" + string(nullIfEmpty(got.Defs)); g != tt.want {
				t.Errorf("got  %s\nwant %s", g, tt.want)
			}
		})
	}
}

func nullIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

// TestToolPlanTypes: a tool_choice auto plan carries each tool's
// parameters' types, read from their schemas as vLLM's Qwen3-Coder
// parser reads them.
func TestToolPlanTypes(t *testing.T) {
	req := ChatCompletionRequest{Tools: json.RawMessage(`[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{` +
		`"s":{"type":"string"},"i":{"type":"integer"},"nullable":{"type":["null","number"]},"any":{"anyOf":[{"type":"boolean"},{"type":"null"}]},` +
		`"mixed":{"oneOf":[{"type":"integer"},{"type":"array"}]},"bare":{"description":"no type"}}}}},` +
		`{"type":"function","function":{"name":"g"}}]`)}
	plan, e := req.ToolPlanOf()
	if e != nil {
		t.Fatal(e)
	}
	want := map[string]map[string]string{"f": {"s": "string", "i": "integer", "nullable": "number", "any": "boolean", "mixed": "object", "bare": "string"}}
	if diff := cmp.Diff(want, plan.Types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
}
