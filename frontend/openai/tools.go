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
	ToolsNamed                    // {"type":"function","function":{"name":…}} (Responses: {"type":"function","name":…}): a call of that function
)

// ToolPlan is a request's resolved tool_choice: the mode, the named
// function, the declared tools' names, whether at most one call may be
// made, and the constraint that makes the output a call (nil for
// ToolsFree and ToolsAuto).
type ToolPlan struct {
	Mode  ToolMode
	Name  string   // ToolsNamed
	Names []string // the tools' names, in order
	// Types are the tools' parameters' JSON Schema types (tool → parameter
	// → type), for tool-call formats that write arguments as untyped text
	// (toolparse.ParamTypes); set for ToolsAuto.
	Types      map[string]map[string]string
	OneCall    bool // parallel_tool_calls false: the first call only
	Constraint *wire.StructuredOutputs
}

// Forced reports whether the plan forces calls (ToolsRequired or
// ToolsNamed): the output is constrained to them.
func (p ToolPlan) Forced() bool { return p.Mode == ToolsRequired || p.Mode == ToolsNamed }

// ToolPlanOf resolves tools and tool_choice. "auto" (or no tool_choice,
// with tools) leaves the output free; the server reads calls out of it
// (the first only when parallel_tool_calls is false). With "required" the
// output is constrained to a JSON array of {"name", "parameters"}
// objects, one schema per tool (as vLLM does), at most one when
// parallel_tool_calls is false; with a named function, to its parameters'
// schema. Either way the arguments always parse and validate, and an
// object in them takes only the properties its schema names
// (additionalProperties false unless the schema sets it: a function's
// arguments are its parameters).
func (r *ChatCompletionRequest) ToolPlanOf() (ToolPlan, *Error) {
	var tools []Tool
	if raw := bytes.TrimSpace(r.Tools); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &tools); err != nil {
			return ToolPlan{}, BadRequest("tools", "'tools' must be a list of {\"type\": \"function\", \"function\": {…}} objects: %v", err)
		}
	}
	for i, t := range tools {
		if t.Type != "function" || t.Function.Name == "" {
			return ToolPlan{}, BadRequest(fmt.Sprintf("tools[%d]", i), "'tools[%d]' must be a function with a name.", i)
		}
	}
	choice, e := chatToolChoice(r.ToolChoice)
	if e != nil {
		return ToolPlan{}, e
	}
	return planTools(tools, choice, r.ParallelToolCalls)
}

// toolChoice is a decoded tool_choice.
type toolChoice struct {
	mode string // "none", "auto" or "required"; "" when absent or naming a function
	name string // the function it names
}

// chatToolChoice decodes chat's tool_choice: a mode or
// {"type": "function", "function": {"name": …}}.
func chatToolChoice(raw json.RawMessage) (toolChoice, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return toolChoice{}, nil
	}
	if choice, ok, e := toolMode(raw); ok {
		return choice, e
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return toolChoice{}, BadRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": …}}.")
	}
	return toolChoice{name: named.Function.Name}, nil
}

// toolMode decodes a tool_choice that is a string; ok is false when it is
// not one.
func toolMode(raw json.RawMessage) (choice toolChoice, ok bool, e *Error) {
	var mode string
	if json.Unmarshal(raw, &mode) != nil {
		return toolChoice{}, false, nil
	}
	switch mode {
	case "none", "auto", "required":
		return toolChoice{mode: mode}, true, nil
	}
	return toolChoice{}, true, BadRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function, got %q.", mode)
}

// planTools resolves a decoded tool_choice against the tools (see
// ToolPlanOf). Absent, tool_choice is "auto" with tools and "none"
// without, as OpenAI has it.
func planTools(tools []Tool, choice toolChoice, parallel *bool) (ToolPlan, *Error) {
	plan := ToolPlan{Names: make([]string, len(tools)), OneCall: parallel != nil && !*parallel}
	for i, t := range tools {
		plan.Names[i] = t.Function.Name
	}
	switch {
	case choice.name != "":
		for _, t := range tools {
			if t.Function.Name == choice.name {
				schema, e := parametersSchema(t)
				if e != nil {
					return ToolPlan{}, e
				}
				plan.Mode, plan.Name = ToolsNamed, t.Function.Name
				plan.Constraint = &wire.StructuredOutputs{JSON: schema, DisableAdditionalProperties: true}
				return plan, nil
			}
		}
		return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' names function %q, which is not in 'tools'.", choice.name)
	case choice.mode == "none":
	case choice.mode == "required":
		if len(tools) == 0 {
			return ToolPlan{}, BadRequest("tool_choice", "'tool_choice' \"required\" needs at least one tool in 'tools'.")
		}
		so, e := requiredSchema(tools, !plan.OneCall)
		if e != nil {
			return ToolPlan{}, e
		}
		plan.Mode, plan.Constraint = ToolsRequired, so
	case len(tools) > 0:
		plan.Mode, plan.Types = ToolsAuto, paramTypes(tools)
	}
	return plan, nil
}

// paramTypes reads each tool's parameters' types from its schema's
// properties, as vLLM's Qwen3-Coder parser does: "type" (of a list of
// types, the first that is not "null"), else the one type other than
// "null" an anyOf or oneOf allows ("object" when they allow several),
// else "string". nil when no tool declares a parameter.
func paramTypes(tools []Tool) map[string]map[string]string {
	out := make(map[string]map[string]string, len(tools))
	for _, t := range tools {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.Function.Parameters, &schema) != nil || len(schema.Properties) == 0 {
			continue
		}
		types := make(map[string]string, len(schema.Properties))
		for name, raw := range schema.Properties {
			types[name] = schemaType(raw)
		}
		out[t.Function.Name] = types
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// schemaType is the type a property's schema declares (see paramTypes).
func schemaType(raw json.RawMessage) string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return "string"
	}
	var one string
	var list []string
	switch {
	case json.Unmarshal(s.Type, &one) == nil && one != "":
		return one
	case json.Unmarshal(s.Type, &list) == nil:
		for _, t := range list {
			if t != "null" {
				return t
			}
		}
	}
	seen := map[string]bool{}
	for _, sub := range append(s.AnyOf, s.OneOf...) {
		if t := schemaType(sub); t != "null" {
			seen[t] = true
		}
	}
	switch len(seen) {
	case 0:
		return "string"
	case 1:
		for t := range seen {
			return t
		}
	}
	return "object"
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
	defs := map[string]json.RawMessage{}
	for i, t := range tools {
		params, e := parametersSchema(t)
		if e != nil {
			return nil, e
		}
		hoisted, err := hoistDefs([]byte(params), t.Function.Name, defs)
		if err != nil {
			return nil, BadRequest("tools", "the parameters of tool %q are not a usable JSON schema: %v", t.Function.Name, err)
		}
		name, _ := json.Marshal(t.Function.Name)
		alts[i] = json.RawMessage(`{"type":"object","properties":{"name":{"const":` + string(name) + `},"parameters":` + string(hoisted) +
			`},"required":["name","parameters"],"additionalProperties":false}`)
	}
	schema := map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"anyOf": alts}}
	if len(defs) > 0 {
		schema["$defs"] = defs
	}
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
