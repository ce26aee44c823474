package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Object is a JSON object whose members keep their order, as a Python dict
// does. Chat templates print tools and tool-call arguments with tojson, and
// transformers prints keys in insertion order; a Go map would lose it.
//
// Values are what ParseJSON returns (nil, bool, string, json.Number, []any,
// Object) or any other value that Render accepts.
type Object []Member

// Member is one key/value pair of an Object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value of the first member named key.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// UnmarshalJSON decodes a JSON object, keeping its member order. Nested
// objects become Object, arrays []any, numbers json.Number.
func (o *Object) UnmarshalJSON(data []byte) error {
	v, err := ParseJSON(data)
	if err != nil {
		return err
	}
	obj, ok := v.(Object)
	if !ok {
		return fmt.Errorf("chattemplate: JSON value is not an object: %.40s", data)
	}
	*o = obj
	return nil
}

// MarshalJSON encodes o with its members in order (compact Go encoding, not
// Python's; use the template's tojson for that).
func (o Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("chattemplate: member %q: %w", m.Key, err)
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// ParseJSON decodes one JSON value, keeping object member order: objects
// become Object, arrays []any, numbers json.Number, and null nil. A member
// repeated in an object keeps its first position and its last value, as
// Python's json.loads does.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("chattemplate: parse JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("chattemplate: parse JSON: data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := Object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %T", kt)
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				obj = setMember(obj, key, v)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %v", t)
	default:
		return t, nil // nil, bool, string, json.Number
	}
}

func setMember(obj Object, key string, v any) Object {
	for i := range obj {
		if obj[i].Key == key {
			obj[i].Value = v
			return obj
		}
	}
	return append(obj, Member{Key: key, Value: v})
}
