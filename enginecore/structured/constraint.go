package structured

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind is what a constraint's Data holds, as vLLM's structured_outputs
// keys name them.
type Kind string

const (
	JSONSchema Kind = "json"        // Data: a JSON Schema (a JSON document)
	JSONObject Kind = "json_object" // any JSON object; Data unused
	Regex      Kind = "regex"       // Data: a regular expression (Rust regex syntax with ASCII \d and \w, anchored at both ends)
	Choice     Kind = "choice"      // Data: a JSON array of strings; the output is one of them
	Grammar    Kind = "grammar"     // Data: a grammar in LLGuidance's Lark syntax, or llama.cpp's GBNF (gbnf.go)
	// StructuralTag: Data is vLLM's structural_tag JSON: tool calls
	// between triggers and ends inside free text (structtag.go).
	StructuralTag Kind = "structural_tag"
)

// Constraint is one request's structured-output constraint.
type Constraint struct {
	Kind Kind
	Data string
}

// llg maps c to LLGuidance's constraint type and data.
func (c Constraint) llg() (kind, data string, err error) {
	switch c.Kind {
	case JSONSchema:
		if !json.Valid([]byte(c.Data)) {
			return "", "", fmt.Errorf("%w: the JSON schema is not valid JSON", ErrInvalid)
		}
		return "json", c.Data, nil
	case JSONObject:
		return "json", `{"type":"object"}`, nil
	case Regex:
		return "regex", asciiClasses(c.Data), nil
	case Choice:
		var choices []string
		if err := json.Unmarshal([]byte(c.Data), &choices); err != nil || len(choices) == 0 {
			return "", "", fmt.Errorf("%w: choice must be a non-empty list of strings", ErrInvalid)
		}
		alts := make([]string, len(choices))
		for i, s := range choices {
			q, _ := json.Marshal(s) // a Lark string literal is JSON-quoted
			alts[i] = string(q)
		}
		return "lark", "start: " + strings.Join(alts, " | "), nil
	case Grammar:
		if isGBNF(c.Data) {
			lark, err := GBNFToLark(c.Data)
			return "lark", lark, err
		}
		return "lark", c.Data, nil
	case StructuralTag:
		lark, err := structTagLark(c.Data)
		return "lark", lark, err
	}
	return "", "", fmt.Errorf("%w: unknown constraint kind %q", ErrInvalid, c.Kind)
}
