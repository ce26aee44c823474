package openai

import (
	"bytes"
	"encoding/json"

	"github.com/tandem-llm/tandem/wire"
)

// Constraint resolves the request's output constraint, from whichever of
// response_format, structured_outputs, the guided_* fields and llama.cpp's
// grammar and json_schema sets one (response_format json_object with a
// schema, llama.cpp's extension, is that schema),
// into the engine's structured_outputs; nil when the output is free. Two
// different constraints are a 400, as is an empty or malformed one. The
// engine compiles it and rejects what it cannot (naming the keyword).
func (p *Params) Constraint() (*wire.StructuredOutputs, *Error) {
	var found []*wire.StructuredOutputs
	var from []string
	add := func(field string, so *wire.StructuredOutputs) {
		found, from = append(found, so), append(from, field)
	}
	if f := p.ResponseFormat; f != nil {
		switch f.Type {
		case "", "text":
		case "json_object":
			if isSet(f.Schema) { // llama.cpp's extension: json_object with a schema is that schema
				text, e := schemaText("response_format.schema", f.Schema)
				if e != nil {
					return nil, e
				}
				add("response_format", &wire.StructuredOutputs{JSON: text})
				break
			}
			add("response_format", &wire.StructuredOutputs{JSONObject: true})
		case "json_schema":
			schema := f.Schema // the Responses API's flat form
			if f.JSONSchema != nil {
				schema = f.JSONSchema.Schema
			}
			text, e := schemaText("response_format", schema)
			if e != nil {
				return nil, e
			}
			add("response_format", &wire.StructuredOutputs{JSON: text})
		case "structural_tag":
			tag, _ := json.Marshal(struct {
				Type       string          `json:"type"`
				Structures json.RawMessage `json:"structures,omitempty"`
				Triggers   json.RawMessage `json:"triggers,omitempty"`
				Format     json.RawMessage `json:"format,omitempty"`
			}{f.Type, f.Structures, f.Triggers, f.Format})
			add("response_format", &wire.StructuredOutputs{StructuralTag: string(tag)})
		default:
			return nil, BadRequest("response_format", "Unknown 'response_format' type %q.", f.Type)
		}
	}
	if so := p.StructuredOutputs; so != nil {
		w := &wire.StructuredOutputs{Regex: so.Regex, Choice: so.Choice, Grammar: so.Grammar, JSONObject: so.JSONObject,
			DisableAnyWhitespace: so.DisableAnyWhitespace, DisableAdditionalProperties: so.DisableAdditionalProperties,
			WhitespacePattern: so.WhitespacePattern}
		if isSet(so.JSON) {
			text, e := schemaText("structured_outputs.json", so.JSON)
			if e != nil {
				return nil, e
			}
			w.JSON = text
		}
		if isSet(so.StructuralTag) {
			text, e := schemaText("structured_outputs.structural_tag", so.StructuralTag) // a JSON object, or a string of one
			if e != nil {
				return nil, e
			}
			w.StructuralTag = text
		}
		if n := countSet(w); n != 1 {
			return nil, BadRequest("structured_outputs", "'structured_outputs' must set exactly one of json, regex, choice, grammar, json_object, structural_tag; it sets %d.", n)
		}
		add("structured_outputs", w)
	}
	if isSet(p.GuidedJSON) {
		text, e := schemaText("guided_json", p.GuidedJSON)
		if e != nil {
			return nil, e
		}
		add("guided_json", &wire.StructuredOutputs{JSON: text, WhitespacePattern: p.GuidedWhitespacePattern})
	}
	if p.GuidedRegex != "" {
		add("guided_regex", &wire.StructuredOutputs{Regex: p.GuidedRegex})
	}
	if len(p.GuidedChoice) > 0 {
		add("guided_choice", &wire.StructuredOutputs{Choice: p.GuidedChoice})
	}
	if p.GuidedGrammar != "" {
		add("guided_grammar", &wire.StructuredOutputs{Grammar: p.GuidedGrammar})
	}
	if p.Grammar != "" {
		add("grammar", &wire.StructuredOutputs{Grammar: p.Grammar})
	}
	if isSet(p.JSONSchema) {
		text, e := schemaText("json_schema", p.JSONSchema)
		if e != nil {
			return nil, e
		}
		add("json_schema", &wire.StructuredOutputs{JSON: text})
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, BadRequest(from[1], "'%s' and '%s' both constrain the output; set one.", from[0], from[1])
}

// schemaText is a JSON Schema given as an object (or boolean), or as a
// string holding its JSON text, as JSON text.
func schemaText(field string, raw json.RawMessage) (string, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", BadRequest(field, "'%s' needs a JSON schema.", field)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !json.Valid([]byte(s)) {
			return "", BadRequest(field, "'%s' is a string that does not hold a JSON schema.", field)
		}
		return s, nil
	}
	if raw[0] != '{' && string(raw) != "true" && string(raw) != "false" {
		return "", BadRequest(field, "'%s' must be a JSON schema object.", field)
	}
	return string(raw), nil
}

func isSet(raw json.RawMessage) bool {
	v := string(bytes.TrimSpace(raw))
	return v != "" && v != "null"
}

func countSet(so *wire.StructuredOutputs) int {
	n := 0
	for _, set := range []bool{so.JSON != "", so.Regex != "", len(so.Choice) > 0, so.Grammar != "", so.JSONObject, so.StructuralTag != ""} {
		if set {
			n++
		}
	}
	return n
}

func ptrStr(s string) *string { return &s }
