package structured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A structural tag (vLLM's structural_tag, as its guidance backend reads
// it) constrains tool calls inside free text:
//
//	{"type": "structural_tag",
//	 "structures": [{"begin": "<function=get_weather>", "schema": {…}, "end": "</function>"}],
//	 "triggers": ["<function="]}
//
// The output is free text until a trigger appears; what follows must
// complete the begin of one of the structures starting with that trigger,
// then a JSON value of its schema, then its end; free text resumes. It
// may end anywhere in free text. Free text never holds a trigger other
// than as the start of a structure.

// structTag is the JSON of a structural_tag constraint.
type structTag struct {
	Structures []struct {
		Begin  string          `json:"begin"`
		Schema json.RawMessage `json:"schema"`
		End    string          `json:"end"`
	} `json:"structures"`
	Triggers []string        `json:"triggers"`
	Format   json.RawMessage `json:"format"`
}

// structTagLark translates a structural_tag to LLGuidance's Lark, as
// llguidance's StructTag.to_grammar does: per trigger, a lazy lexeme of
// free text that stops at the trigger, then one of that trigger's
// structures; at the end, free text without any trigger.
func structTagLark(data string) (string, error) {
	var st structTag
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&st); err != nil {
		return "", fmt.Errorf("%w: structural_tag is not valid JSON: %v", ErrInvalid, err)
	}
	if len(st.Format) > 0 && string(st.Format) != "null" {
		return "", fmt.Errorf("%w: structural_tag with \"format\" (xgrammar's structural tags) is not supported; give \"structures\" and \"triggers\"", ErrInvalid)
	}
	if len(st.Triggers) == 0 || len(st.Structures) == 0 {
		return "", fmt.Errorf("%w: structural_tag needs \"structures\" and \"triggers\"", ErrInvalid)
	}
	for i, t := range st.Triggers {
		if t == "" {
			return "", fmt.Errorf("%w: structural_tag triggers[%d] is empty", ErrInvalid, i)
		}
	}
	byTrigger := make([][]string, len(st.Triggers)) // Lark alternatives, per trigger
	for i, s := range st.Structures {
		trig := -1
		for j, t := range st.Triggers {
			if strings.HasPrefix(s.Begin, t) {
				trig = j
				break
			}
		}
		if trig < 0 {
			return "", fmt.Errorf("%w: structural_tag structures[%d] begins %q, with none of the triggers", ErrInvalid, i, s.Begin)
		}
		schema, err := schemaObject(s.Schema)
		if err != nil {
			return "", fmt.Errorf("%w: structural_tag structures[%d].schema: %v", ErrInvalid, i, err)
		}
		var alt []string
		if rest := s.Begin[len(st.Triggers[trig]):]; rest != "" {
			alt = append(alt, larkString(rest))
		}
		alt = append(alt, "%json "+schema)
		if s.End != "" {
			alt = append(alt, larkString(s.End))
		}
		byTrigger[trig] = append(byTrigger[trig], strings.Join(alt, " "))
	}
	var anyTrig []string
	for _, t := range st.Triggers {
		var b strings.Builder
		for _, r := range t {
			b.WriteString(regexRune(r, false))
		}
		anyTrig = append(anyTrig, b.String())
	}
	var lark strings.Builder
	lark.WriteString("start: seg* TEXT\n")
	var segs []string
	for j, alts := range byTrigger {
		if len(alts) == 0 {
			continue // a trigger no structure starts with only keeps free text from holding it
		}
		segs = append(segs, fmt.Sprintf("pre_%d (%s)", j, strings.Join(alts, " | ")))
		fmt.Fprintf(&lark, "pre_%d[stop=%s]: TEXT\n", j, larkString(st.Triggers[j]))
	}
	fmt.Fprintf(&lark, "seg: %s\n", strings.Join(segs, " | "))
	fmt.Fprintf(&lark, "TEXT: /(.|\\n)*/ & ~/(.|\\n)*(%s)(.|\\n)*/\n", strings.Join(anyTrig, "|"))
	return lark.String(), nil
}

// schemaObject is a JSON Schema given as an object (or a boolean) or as a
// string of its JSON, as compact JSON text for Lark's %json.
func schemaObject(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		raw = bytes.TrimSpace([]byte(s))
	}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return `{}`, nil // any JSON value, as an absent schema means
	case string(raw) == "true":
		return `{}`, nil
	case raw[0] != '{':
		return "", fmt.Errorf("want a JSON schema object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// larkString is s as a Lark string literal (Lark reads JSON strings).
func larkString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
