package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// "parameters", "strict"}. Only function tools are supported.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// FunctionTools returns the request's tools in chat's form, the form the
// chat template gets them in (as vLLM converts them).
func (r *ResponsesRequest) FunctionTools() ([]Tool, *Error) {
	raw := bytes.TrimSpace(r.Tools)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []ResponseTool
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, BadRequest("tools", "'tools' must be a list of {\"type\": \"function\", \"name\": …, \"parameters\": {…}} objects: %v", err)
	}
	tools := make([]Tool, len(list))
	for i, t := range list {
		if t.Type != "function" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].type", i), "Tools of type %q are not supported; only function tools are.", t.Type)
		}
		if t.Name == "" {
			return nil, BadRequest(fmt.Sprintf("tools[%d].name", i),
				"'tools[%d].name' is required: the Responses API's function tools are flat, {\"type\": \"function\", \"name\": …, \"parameters\": {…}}.", i)
		}
		tools[i] = Tool{Type: "function", Function: FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict}}
	}
	return tools, nil
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
