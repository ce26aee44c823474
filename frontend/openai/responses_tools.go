package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Item types of the Responses API's input and output.
const (
	ItemMessage            = "message"
	ItemReasoning          = "reasoning"            // a reasoning turn: content reasoning_text parts (or summary)
	ItemFunctionCall       = "function_call"        // a call the model made: call_id, name, arguments
	ItemFunctionCallOutput = "function_call_output" // the caller's result of a call: call_id, output
)

// ResponseTool is one entry of a Responses request's tools. Unlike chat's,
// a function tool is flat: {"type": "function", "name", "description",
// "parameters", "strict"}. A namespace tool ({"type": "namespace", "name",
// "tools": [function tools]}) groups functions; the model sees each as
// <namespace>__<function>, and its calls come back as function_call items
// with name and namespace apart, as vLLM does. Other types are refused.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Tools       []ResponseTool  `json:"tools,omitempty"` // a namespace's functions
}

// Tool types of the Responses API that Tandem serves.
const (
	ToolFunction  = "function"
	ToolNamespace = "namespace"
)

// NamespaceSeparator joins a namespace and one of its functions into the
// name the model sees: mcp__computer_use + __ + get_app_state.
const NamespaceSeparator = "__"

// ToolCallName is a function call's name as the Responses API reports it:
// Name, within Namespace for a namespace tool's function.
type ToolCallName struct {
	Name, Namespace string
}

// Flat is the name the model sees and writes.
func (n ToolCallName) Flat() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + NamespaceSeparator + n.Name
}

// responseTools decodes tools.
func (r *ResponsesRequest) responseTools() ([]ResponseTool, *Error) {
	raw := bytes.TrimSpace(r.Tools)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []ResponseTool
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, BadRequest("tools", "'tools' must be a list of {\"type\": \"function\", \"name\": …, \"parameters\": {…}} objects: %v", err)
	}
	return list, nil
}

// FunctionTools returns the request's tools in chat's form, the form the
// chat template gets them in (as vLLM converts them): a namespace's
// functions flattened to <namespace>__<function>, in request order.
func (r *ResponsesRequest) FunctionTools() ([]Tool, *Error) {
	list, e := r.responseTools()
	if e != nil || list == nil {
		return nil, e
	}
	tools := make([]Tool, 0, len(list))
	function := func(field string, t ResponseTool, namespace string) *Error {
		if t.Name == "" {
			return BadRequest(field+".name",
				"'%s.name' is required: the Responses API's function tools are flat, {\"type\": \"function\", \"name\": …, \"parameters\": {…}}.", field)
		}
		name := ToolCallName{Name: t.Name, Namespace: namespace}.Flat()
		tools = append(tools, Tool{Type: "function", Function: FunctionDef{Name: name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}})
		return nil
	}
	for i, t := range list {
		field := fmt.Sprintf("tools[%d]", i)
		switch t.Type {
		case ToolFunction:
			if e := function(field, t, ""); e != nil {
				return nil, e
			}
		case ToolNamespace:
			if t.Name == "" {
				return nil, BadRequest(field+".name", "'%s.name' is required: a namespace tool is {\"type\": \"namespace\", \"name\": …, \"tools\": [function tools]}.", field)
			}
			for j, sub := range t.Tools {
				subField := fmt.Sprintf("%s.tools[%d]", field, j)
				if sub.Type != ToolFunction {
					return nil, BadRequest(subField+".type", "Tools of type %q are not supported in a namespace; only function tools are.", sub.Type)
				}
				if e := function(subField, sub, t.Name); e != nil {
					return nil, e
				}
			}
		default:
			return nil, BadRequest(field+".type", "Tools of type %q are not supported; only function and namespace tools are.", t.Type)
		}
	}
	return tools, nil
}

// ToolCallNames maps the names the model writes for namespace functions
// (<namespace>__<function>) to their names apart; nil without namespaces.
// A name it lacks is a plain function's.
func (r *ResponsesRequest) ToolCallNames() map[string]ToolCallName {
	list, _ := r.responseTools()
	var names map[string]ToolCallName
	for _, t := range list {
		if t.Type != ToolNamespace {
			continue
		}
		for _, sub := range t.Tools {
			if names == nil {
				names = map[string]ToolCallName{}
			}
			n := ToolCallName{Name: sub.Name, Namespace: t.Name}
			names[n.Flat()] = n
		}
	}
	return names
}

// resolveToolChoice turns a named tool_choice into the name the model
// sees among tools (FunctionTools'): a function's own name, a namespace function's flat name, or a
// namespace function's own name when exactly one namespace has it (vLLM's
// rule; two are ambiguous, a 400).
func (r *ResponsesRequest) resolveToolChoice(name string, tools []Tool) (string, *Error) {
	var candidates []string
	for _, t := range tools {
		if t.Function.Name == name {
			return name, nil
		}
	}
	for flat, n := range r.ToolCallNames() {
		if n.Name == name {
			candidates = append(candidates, flat)
		}
	}
	switch len(candidates) {
	case 0:
		return name, nil // planTools says it is not there
	case 1:
		return candidates[0], nil
	}
	slices.Sort(candidates)
	return "", BadRequest("tool_choice", "Tool choice '%s' is ambiguous: it is defined in more than one namespace (%s). Select it by its full '<namespace>__<name>' name.",
		name, strings.Join(candidates, ", "))
}

// ToolPlanOf resolves tools, tool_choice ("none", "auto", "required" or
// {"type": "function", "name": …}) and parallel_tool_calls as chat's
// ToolPlanOf does.
func (r *ResponsesRequest) ToolPlanOf() (ToolPlan, *Error) {
	tools, e := r.FunctionTools()
	if e != nil {
		return ToolPlan{}, e
	}
	choice, e := responseToolChoice(r.ToolChoice)
	if e != nil {
		return ToolPlan{}, e
	}
	if choice.name != "" {
		if choice.name, e = r.resolveToolChoice(choice.name, tools); e != nil {
			return ToolPlan{}, e
		}
	}
	return planTools(tools, choice, r.ParallelToolCalls)
}

// responseToolChoice decodes the Responses API's tool_choice: a mode or
// {"type": "function", "name": …}; the choices of other tool types
// (file_search, mcp, allowed_tools, …) are 400s naming the type.
func responseToolChoice(raw json.RawMessage) (toolChoice, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return toolChoice{}, nil
	}
	if choice, ok, e := toolMode(raw); ok {
		return choice, e
	}
	var named struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return toolChoice{}, BadRequest("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": …}.")
	}
	if named.Type != "function" {
		return toolChoice{}, BadRequest("tool_choice", "'tool_choice' of type %q is not supported; only function tools are.", named.Type)
	}
	if named.Name == "" {
		return toolChoice{}, BadRequest("tool_choice", "'tool_choice' {\"type\": \"function\"} needs the function's 'name'.")
	}
	return toolChoice{name: named.Name}, nil
}

// validateItem checks input item i: a message, a function call or a
// function call's output.
func validateItem(i int, it ResponseInputItem) *Error {
	field := func(name string) string { return fmt.Sprintf("input[%d].%s", i, name) }
	switch it.Type {
	case "", ItemMessage:
		if !responseRoles[it.Role] {
			return BadRequest(field("role"), "'input[%d].role' must be user, system, developer or assistant, got %q.", i, it.Role)
		}
		for j, p := range it.Content.Parts {
			if !isTextPart(p.Type) {
				return BadRequest(fmt.Sprintf("input[%d].content[%d].type", i, j), "Content part type %q is not supported; only text parts are.", p.Type)
			}
		}
	case ItemFunctionCall:
		if it.CallID == "" {
			return BadRequest(field("call_id"), "'input[%d].call_id' is required.", i)
		}
		if it.Name == "" {
			return BadRequest(field("name"), "'input[%d].name' is required.", i)
		}
	case ItemFunctionCallOutput:
		if it.CallID == "" {
			return BadRequest(field("call_id"), "'input[%d].call_id' is required.", i)
		}
		if it.Output == nil {
			return BadRequest(field("output"), "'input[%d].output' is required.", i)
		}
		for j, p := range it.Output.Parts {
			if !isTextPart(p.Type) {
				return BadRequest(fmt.Sprintf("input[%d].output[%d].type", i, j), "Output part type %q is not supported; only text parts are.", p.Type)
			}
		}
	case ItemReasoning:
		if it.EncryptedContent != nil && *it.EncryptedContent != "" {
			return BadRequest("input", "Encrypted content is not supported.")
		}
		for j, p := range it.Content.Parts {
			if p.Type != "reasoning_text" && !isTextPart(p.Type) {
				return BadRequest(fmt.Sprintf("input[%d].content[%d].type", i, j), "Reasoning content part type %q is not supported; only reasoning_text parts are.", p.Type)
			}
		}
	default:
		return BadRequest(field("type"), "Input items of type %q are not supported; only messages, reasoning, function_call and function_call_output are.", it.Type)
	}
	return nil
}

// validateTools checks tools and tool_choice, and that a tool_choice that
// constrains the output (required, a named function) is not set with
// text.format or another constraint.
func (r *ResponsesRequest) validateTools() *Error {
	plan, e := r.ToolPlanOf()
	if e != nil {
		return e
	}
	if plan.Constraint != nil {
		if so, _ := r.Params.Constraint(); so != nil {
			return BadRequest("tool_choice", "'tool_choice' %s and a text format both constrain the output; set one.", r.ToolChoice)
		}
	}
	return nil
}

// ResponseFunctionCallArgumentsDeltaEvent is
// response.function_call_arguments.delta: the next fragment of a
// function_call item's arguments.
type ResponseFunctionCallArgumentsDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
}

// ResponseFunctionCallArgumentsDoneEvent is
// response.function_call_arguments.done: a call's whole arguments, with
// its name (as OpenAI and vLLM send it; the SDKs' older types ignore it).
type ResponseFunctionCallArgumentsDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
}
