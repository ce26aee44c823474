package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tandem-llm/tandem/wire"
)

// Tool is one entry of a chat request's tools.
type Tool struct {
	Type     string      `json:"type"` // "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef is a tool's function: its name and its parameters' JSON
// Schema.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolCall is one call in an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls, with its arguments as
// JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolMode is what tool_choice asks of the output.
type ToolMode int

const (
	ToolsFree     ToolMode = iota // "none", or no tools: text (tools only reach the chat template)
	ToolsAuto                     // "auto", or absent with tools: text, with calls read out of it in the model's syntax (package toolparse)
	ToolsRequired                 // "required": one or more calls of the tools, arguments valid
	ToolsNamed                    // {"type":"function","function":{"name":…}}: a call of that function
)

// ToolPlan is a chat request's resolved tool_choice: the mode, the named
// function, the declared tools' names, and the constraint that makes the
// output a call (nil for ToolsFree and ToolsAuto).
type ToolPlan struct {
	Mode       ToolMode
	Name       string   // ToolsNamed
	Names      []string // the tools' names, in order
	Constraint *wire.StructuredOutputs
}

// ToolPlanOf resolves tools and tool_choice. "auto" (or no tool_choice,
// with tools) leaves the output free; the server reads calls out of it.
// With "required" the output is
// constrained to a JSON array of {"name", "parameters"} objects, one
// schema per tool (as vLLM does), at most one when parallel_tool_calls is
// false; with a named function, to its parameters' schema. Either way the
// arguments always parse and validate, and an object in them takes only
// the properties its schema names (additionalProperties false unless the
// schema sets it: a function's arguments are its parameters).
func (r *ChatCompletionRequest) ToolPlanOf() (ToolPlan, *Error) {
	var tools []Tool
	if len(bytes.TrimSpace(r.Tools)) > 0 && string(bytes.TrimSpace(r.Tools)) != "null" {
		if err := json.Unmarshal(r.Tools, &tools); err != nil {
			return ToolPlan{}, BadRequest("tools", "'tools' must be a list of {\"type\": \"function\", \"function\": {…}} objects: %v", err)
		}
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function.Name == "" {
			return ToolPlan{}, BadRequest(fmt.Sprintf("tools[%d]", i), "'tools[%d]' must be a function with a name.", i)
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Function.Name
	}
	// Absent, tool_choice is "auto" with tools and "none" without, as
	// OpenAI has it.
	auto := ToolPlan{Names: names}
	if len(tools) > 0 {
		auto.Mode = ToolsAuto
	}
	raw := bytes.TrimSpace(r.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		return auto, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case "none":
			return ToolPlan{Names: names}, nil
		case "auto":
			return auto, nil
		case "required":
			if len(tools) == 0 {
				return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' \"required\" needs at least one tool in 'tools'.")
			}
			so, e := requiredSchema(tools, r.ParallelToolCalls == nil || *r.ParallelToolCalls)
			return ToolPlan{Mode: ToolsRequired, Names: names, Constraint: so}, e
		}
		return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function, got %q.", mode)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}.")
	}
	for _, t := range tools {
		if t.Function.Name == named.Function.Name {
			schema, e := parametersSchema(t)
			if e != nil {
				return ToolPlan{}, e
			}
			return ToolPlan{Mode: ToolsNamed, Name: t.Function.Name, Names: names, Constraint: &wire.StructuredOutputs{JSON: schema, DisableAdditionalProperties: true}}, nil
		}
	}
	return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' names function %q, which is not in 'tools'.", named.Function.Name)
}

// parametersSchema is a tool's parameters schema as JSON text (an empty
// object schema when it has none).
func parametersSchema(t Tool) (string, *Error) {
	p := bytes.TrimSpace(t.Function.Parameters)
	if len(p) == 0 || string(p) == "null" {
		return `{"type":"object","properties":{}}`, nil
	}
	if p[0] != '{' {
		return "", BadRequest("tools", "the parameters of tool %q must be a JSON schema object.", t.Function.Name)
	}
	return string(p), nil
}

// requiredSchema is the schema of a "required" answer: a list of calls.
func requiredSchema(tools []Tool, parallel bool) (*wire.StructuredOutputs, *Error) {
	alts := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		params, e := parametersSchema(t)
		if e != nil {
			return nil, e
		}
		name, _ := json.Marshal(t.Function.Name)
		alts[i] = json.RawMessage(`{"type":"object","properties":{"name":{"const":` + string(name) + `},"parameters":` + params +
			`},"required":["name","parameters"],"additionalProperties":false}`)
	}
	schema := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": alts}}
	if !parallel {
		schema["maxItems"] = 1
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, BadRequest("tools", "the tools' schemas do not combine: %v", err)
	}
	return &wire.StructuredOutputs{JSON: string(b), DisableAdditionalProperties: true}, nil
}

// ToolCalls reads the calls out of an answer generated under plan
// (ToolsRequired or ToolsNamed), with ids from newID; ok is false when the
// answer is not a complete call (cut by max_tokens).
func (p ToolPlan) ToolCalls(text string, newID func() string) (calls []ToolCall, ok bool) {
	switch p.Mode {
	case ToolsNamed:
		if !json.Valid([]byte(text)) {
			return nil, false
		}
		return []ToolCall{{ID: newID(), Type: "function", Function: FunctionCall{Name: p.Name, Arguments: compactJSON(text)}}}, true
	case ToolsRequired:
		var list []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal([]byte(text), &list); err != nil || len(list) == 0 {
			return nil, false
		}
		for _, c := range list {
			calls = append(calls, ToolCall{ID: newID(), Type: "function", Function: FunctionCall{Name: c.Name, Arguments: compactJSON(string(c.Parameters))}})
		}
		return calls, true
	}
	return nil, false
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}
