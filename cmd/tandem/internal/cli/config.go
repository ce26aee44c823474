package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Entry is one key of a --config file and its value as a flag takes it.
type Entry struct {
	Key   string // as written: max_model_len or max-model-len
	Value string
}

// ParseConfig reads a --config file, the YAML mapping vLLM's --config
// takes:
//
//	model: models/SmolLM2-135M-Instruct.Q4_1.gguf
//	port: 8001
//	threads: 2
//	routing: prefix
//	engines: [tcp://a:5555, tcp://b:5555] # a list joins with commas
//
// Scalars become the flag's text (numbers as written, true/false); a list
// of scalars joins with commas. Anything else (a nested mapping, a null)
// is an error naming the key. Entries come back sorted by key.
func ParseConfig(data []byte) ([]Entry, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // keep 8000 and 0.9 as written
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, nil // an empty file
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a mapping of flag names to values, not %s", kind(doc))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	entries := make([]Entry, 0, len(keys))
	for _, k := range keys {
		v, err := flagText(m[k])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		entries = append(entries, Entry{Key: k, Value: v})
	}
	return entries, nil
}

// flagText is a YAML value as a flag's text.
func flagText(v any) (string, error) {
	if list, ok := v.([]any); ok {
		parts := make([]string, len(list))
		for i, e := range list {
			s, ok := scalarText(e)
			if !ok {
				return "", fmt.Errorf("item %d is %s; want a scalar", i+1, kind(e))
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	s, ok := scalarText(v)
	if !ok {
		return "", fmt.Errorf("%s; want a scalar or a list", kind(v))
	}
	return s, nil
}

func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}
