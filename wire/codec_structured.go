package wire

import (
	"encoding/json"
	"fmt"
)

// encode writes every key, as msgspec writes a dataclass: unset strings
// as nil, and vLLM's _backend (nil: the engine's choice) and
// _backend_was_auto.
func (s *StructuredOutputs) encode(e *enc) {
	e.mapLen(11)
	e.str("json")
	e.optStr(s.JSON)
	e.str("regex")
	e.optStr(s.Regex)
	e.str("choice")
	e.optStrs(s.Choice)
	e.str("grammar")
	e.optStr(s.Grammar)
	e.str("json_object")
	if s.JSONObject {
		e.bool(true)
	} else {
		e.null()
	}
	e.str("disable_any_whitespace")
	e.bool(s.DisableAnyWhitespace)
	e.str("disable_additional_properties")
	e.bool(s.DisableAdditionalProperties)
	e.str("whitespace_pattern")
	e.optStr(s.WhitespacePattern)
	e.str("structural_tag")
	e.optStr(s.StructuralTag)
	e.str("_backend")
	e.null()
	e.str("_backend_was_auto")
	e.bool(false)
}

// decode reads the keys it knows, nil as unset; "json" may be a string or
// a map (vLLM's dict schema), which becomes its JSON text.
func (s *StructuredOutputs) decode(d *dec) error {
	return d.fieldMap("StructuredOutputs", func(key string) (bool, error) {
		if !structuredKeys[key] {
			return false, nil // skipped by fieldMap
		}
		isNil, err := d.takeNil()
		if isNil || err != nil {
			return true, err
		}
		switch key {
		case "json":
			var v any
			if v, err = d.any(); err != nil {
				return true, err
			}
			if s.JSON, err = jsonText(v); err != nil {
				return true, fmt.Errorf("%w: json schema: %v", ErrMalformed, err)
			}
		case "regex":
			s.Regex, err = d.str()
		case "choice":
			s.Choice, err = d.strs()
		case "grammar":
			s.Grammar, err = d.str()
		case "json_object":
			s.JSONObject, err = d.bool()
		case "disable_any_whitespace":
			s.DisableAnyWhitespace, err = d.bool()
		case "disable_additional_properties":
			s.DisableAdditionalProperties, err = d.bool()
		case "whitespace_pattern":
			s.WhitespacePattern, err = d.str()
		case "structural_tag":
			var v any
			if v, err = d.any(); err == nil {
				s.StructuralTag, _ = jsonText(v)
			}
		}
		return true, err
	})
}

var structuredKeys = map[string]bool{"json": true, "regex": true, "choice": true, "grammar": true, "json_object": true,
	"disable_any_whitespace": true, "disable_additional_properties": true, "whitespace_pattern": true, "structural_tag": true}

// jsonText is a decoded value that vLLM sends as a str or a dict: the str
// itself, or the dict's JSON text.
func jsonText(v any) (string, error) {
	if str, ok := v.(string); ok {
		return str, nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}
