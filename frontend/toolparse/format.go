package toolparse

import (
	"errors"
	"fmt"
	"strings"
)

// Call is one tool call read out of a text.
type Call struct {
	Name      string
	Arguments string // a JSON object, compact
}

// CallDelta is one piece of a call as it streams. A call's first delta
// has its Name and Arguments ""; the later ones have no Name and the next
// fragment of the arguments. The fragments of one call, joined, are its
// Arguments.
type CallDelta struct {
	Index     int // the call's number in the text, from 0
	Name      string
	Arguments string
}

// Delta is what a Parser returns for one piece of text: the new content and
// the new call deltas, in order. A Delta's content may stand before or
// after its calls in the text; clients join content and calls apart.
type Delta struct {
	Content string
	Calls   []CallDelta
}

// Append adds o after d, joining argument fragments of one call.
func (d *Delta) Append(o Delta) {
	d.Content += o.Content
	for _, c := range o.Calls {
		d.add(c)
	}
}

func (d *Delta) add(c CallDelta) {
	if n := len(d.Calls); n > 0 && c.Name == "" && d.Calls[n-1].Index == c.Index && d.Calls[n-1].Name == "" {
		d.Calls[n-1].Arguments += c.Arguments
		return
	}
	d.Calls = append(d.Calls, c)
}

// Parser reads the tool calls of one choice's text as it arrives. It is
// not safe for concurrent use; use one per choice.
type Parser interface {
	// Push takes the next piece of the text. It holds back what may still
	// turn out to be part of a call (a marker's beginning, a call whose
	// tool name is not read yet).
	Push(text string) Delta
	// Finish ends the text: what was held back is returned, a call cut
	// short keeps the arguments it has. Push must not be called after it.
	Finish() Delta
}

// Format is one syntax models write tool calls in: one of vLLM's
// --tool-call-parser values.
type Format struct {
	Name    string
	Aliases []string // other vLLM names for the same syntax
	// KeepSpecial: the calls' markers are special tokens in some models
	// (Hermes 2 Pro's <tool_call>, Mistral's [TOOL_CALLS]), so the text
	// must keep special tokens (skip_special_tokens false) for the calls
	// to be seen, as vLLM's parser sets.
	KeepSpecial bool
	// ShortIDs: the format's chat templates refuse call ids other than 9
	// letters and digits (Mistral's raise an exception), so a call sent
	// back in a tool loop must have such an id.
	ShortIDs  bool
	newParser func(tools map[string]bool) Parser
	// newTyped, when set, is newParser for a format whose arguments are
	// untyped text that the tools' parameter types make JSON.
	newTyped func(tools map[string]bool, types ParamTypes) Parser
}

// ParamTypes are the JSON Schema types of the declared tools' parameters:
// tool name → parameter name → "string", "integer", "number", "boolean",
// "object", "array", …, as the request's tools declare them (the first
// type other than "null" of a list of types). A format that writes
// arguments as untyped text (qwen3_coder) needs them; the others ignore
// them.
type ParamTypes map[string]map[string]string

// New returns a Parser that accepts calls of the named tools.
func (f *Format) New(tools []string) Parser { return f.NewTyped(tools, nil) }

// NewTyped is New with the tools' parameter types.
func (f *Format) NewTyped(tools []string, types ParamTypes) Parser {
	set := make(map[string]bool, len(tools))
	for _, t := range tools {
		set[t] = true
	}
	if f.newTyped != nil {
		return f.newTyped(set, types)
	}
	return f.newParser(set)
}

// Extract reads the calls out of a whole text: its content, its calls,
// and whether there is at least one call. With no call, content is text.
func (f *Format) Extract(text string, tools []string) (content string, calls []Call, ok bool) {
	return ExtractWith(f.New(tools), text)
}

// ExtractWith reads the calls out of a whole text with p, a new Parser
// (Extract's, or Named's or Required's for a forced answer): as p streams
// them, joined.
func ExtractWith(p Parser, text string) (content string, calls []Call, ok bool) {
	d := p.Push(text)
	d.Append(p.Finish())
	for _, c := range d.Calls {
		if c.Name != "" {
			calls = append(calls, Call{Name: c.Name})
		}
		calls[c.Index].Arguments += c.Arguments
	}
	return d.Content, calls, len(calls) > 0
}

var formats = []*Format{
	{Name: "hermes", KeepSpecial: true, newParser: newHermes},
	{Name: "llama3_json", Aliases: []string{"llama4_json"}, newParser: newLlama},
	{Name: "mistral", KeepSpecial: true, ShortIDs: true, newParser: newMistral},
	{Name: "pythonic", Aliases: []string{"llama4_pythonic"}, newParser: newPythonic},
	{Name: "granite", KeepSpecial: true, newParser: newGranite},
	{Name: "phi4_mini_json", newParser: newPhi4Mini},
	{Name: "qwen3_coder", Aliases: []string{"qwen3_xml"}, KeepSpecial: true, newTyped: newQwen3Coder},
	{Name: "openai", KeepSpecial: true, newParser: newOpenAI},
}

// ErrUnknown is wrapped by Lookup's error for a name it does not know.
var ErrUnknown = errors.New("toolparse: unknown tool call parser")

// Names returns the formats' names, aliases included.
func Names() []string {
	var names []string
	for _, f := range formats {
		names = append(names, f.Name)
		names = append(names, f.Aliases...)
	}
	return names
}

// Lookup returns the format of a --tool-call-parser name.
func Lookup(name string) (*Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
		for _, a := range f.Aliases {
			if a == name {
				return f, nil
			}
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Detect returns the format a chat template tells its model to write calls
// in, read from the template's text, and false when it names none Tandem
// reads: Qwen3-Coder's XML calls (<function=…> with <parameter=…>, which
// Nemotron 3 Nano's template asks for too) are qwen3_coder, and GLM's
// <arg_key> calls are not Hermes JSON even inside <tool_call>.
func Detect(template string) (*Format, bool) {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(template, x) {
				return true
			}
		}
		return false
	}
	name := ""
	switch {
	case has("<|channel|>") && has("<|call|>"):
		name = "openai" // gpt-oss's harmony messages
	case has("[TOOL_CALLS]"):
		name = "mistral"
	case has("[func_name1(", "[func_name(", "<|python_start|>"):
		name = "pythonic" // vLLM's Llama 3.2 pythonic and Llama 4 templates
	case has("<|python_tag|>", `"parameters": dictionary of argument name`):
		name = "llama3_json" // Llama 3.1 (python_tag), 3.2 and 3.3 (the JSON format)
	case has("<function=") && has("<parameter="):
		name = "qwen3_coder" // Qwen3-Coder's XML calls
	case has("<|tool_call|>"):
		name = "granite" // Granite 3.x
	case has("functools["):
		name = "phi4_mini_json" // vLLM's Phi-4-mini template, FireFunction v2
	case has("<tool_call>") && !has("<function=", "<arg_key>"):
		name = "hermes"
	default:
		return nil, false
	}
	f, _ := Lookup(name)
	return f, true
}
