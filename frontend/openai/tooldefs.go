package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The "required" constraint nests every tool's parameters schema inside
// one array schema, so a ref that is relative to the parameters' root
// ("#/$defs/Opt", "#/definitions/Opt", "#", "#/properties/a") would
// resolve against the combined schema and miss. hoistDefs moves what
// those refs point at into the combined schema's root "$defs" (as vLLM's
// _get_tool_schema_defs does for "$defs") and rewrites the refs to match.

// hoistDefs returns params with its "$defs" and "definitions" moved into
// defs, each under its own name unless an earlier tool took it (then
// name_2, name_3, …), and its refs pointed there. When a ref points
// elsewhere in params ("#", "#/properties/…"), the whole schema moves
// into defs under the tool's name too and the result is a $ref to it.
func hoistDefs(params []byte, tool string, defs map[string]json.RawMessage) ([]byte, error) {
	if !bytes.Contains(params, []byte(`"$ref"`)) {
		return params, nil // nothing points anywhere: the schema nests as is
	}
	members, err := objectMembers(params)
	if err != nil {
		return nil, err
	}
	renames := map[string]map[string]string{}
	var body []member
	for _, m := range members {
		if m.key != "$defs" && m.key != "definitions" {
			body = append(body, m)
			continue
		}
		inner, err := objectMembers(m.val)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", m.key, err)
		}
		renames[m.key] = map[string]string{}
		for _, d := range inner {
			name := freeName(d.key, defs)
			defs[name] = nil // taken; filled in below
			renames[m.key][d.key] = name
		}
	}
	whole := ""
	point := func(ref string) string {
		for _, kw := range []string{"$defs", "definitions"} {
			rest, ok := strings.CutPrefix(ref, "#/"+kw+"/")
			if !ok {
				continue
			}
			seg, tail := rest, ""
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				seg, tail = rest[:i], rest[i:]
			}
			if name, ok := renames[kw][unescapePointer(seg)]; ok {
				return "#/$defs/" + escapePointer(name) + tail
			}
		}
		if ref == "#" || strings.HasPrefix(ref, "#/") {
			if whole == "" {
				whole = freeName(tool, defs)
				defs[whole] = nil
			}
			return "#/$defs/" + escapePointer(whole) + ref[1:]
		}
		return ref // another document's, or an anchor: as the tool gave it
	}
	for _, m := range members {
		if m.key != "$defs" && m.key != "definitions" {
			continue
		}
		inner, _ := objectMembers(m.val)
		for _, d := range inner {
			v, err := mapRefs(d.val, false, point)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", d.key, err)
			}
			defs[renames[m.key][d.key]] = v
		}
	}
	out, err := mapRefs(writeObject(body), false, point)
	if err != nil {
		return nil, err
	}
	if whole == "" {
		return out, nil
	}
	defs[whole] = out
	return json.Marshal(map[string]string{"$ref": "#/$defs/" + escapePointer(whole)})
}

// freeName is name, or name_2, name_3, … when defs already holds it.
func freeName(name string, defs map[string]json.RawMessage) string {
	if !hasKey(defs, name) {
		return name
	}
	for n := 2; ; n++ {
		if c := name + "_" + strconv.Itoa(n); !hasKey(defs, c) {
			return c
		}
	}
}

func hasKey(defs map[string]json.RawMessage, k string) bool {
	_, ok := defs[k]
	return ok
}

// nameMaps are the keywords whose value maps names to schemas.
var nameMaps = map[string]bool{"properties": true, "patternProperties": true, "$defs": true,
	"definitions": true, "dependentSchemas": true}

// dataKeywords hold instance data, not schemas: a "$ref" in them is data.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// mapRefs is raw with every schema's string "$ref" replaced by f of it,
// keeping the order of object members (it is the order properties are
// generated in). names says raw is an object of names to schemas.
func mapRefs(raw json.RawMessage, names bool, f func(string) string) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return raw, nil
	}
	switch t[0] {
	case '{':
		members, err := objectMembers(t)
		if err != nil {
			return nil, err
		}
		for i, m := range members {
			var v json.RawMessage
			switch {
			case names:
				v, err = mapRefs(m.val, false, f)
			case m.key == "$ref":
				var s string
				if json.Unmarshal(m.val, &s) != nil {
					continue
				}
				v, err = json.Marshal(f(s))
			case dataKeywords[m.key]:
				continue
			default:
				v, err = mapRefs(m.val, nameMaps[m.key], f)
			}
			if err != nil {
				return nil, err
			}
			members[i].val = v
		}
		return writeObject(members), nil
	case '[':
		if names {
			return raw, nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		for i := range items {
			v, err := mapRefs(items[i], false, f)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		return json.Marshal(items)
	}
	return raw, nil
}

type member struct {
	key string
	val json.RawMessage
}

// objectMembers is a JSON object's members in their order.
func objectMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("schema: want a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

func writeObject(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// escapePointer and unescapePointer are a JSON Pointer segment's
// escaping (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func unescapePointer(s string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}
