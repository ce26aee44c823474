package toolparse

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// forcedCase is an answer to tool_choice named (get_weather) or required
// (of tools), and what it reads as.
type forcedCase struct {
	name, text string
	content    string
	calls      []Call
}

// runForced checks each case whole, cut at every offset, and byte by
// byte.
func runForced(t *testing.T, newParser func() Parser, cases []forcedCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			content, calls, ok := ExtractWith(newParser(), tc.text)
			if ok != (len(tc.calls) > 0) || content != tc.content || !equalCalls(calls, tc.calls) {
				t.Fatalf("content %q calls %v, want %q %v", content, calls, tc.content, tc.calls)
			}
			for cut := 0; cut <= len(tc.text); cut++ {
				if c, cs := streamWith(newParser(), tc.text, []int{cut}); c != content || !equalCalls(cs, calls) {
					t.Fatalf("cut at %d: content %q calls %v", cut, c, cs)
				}
			}
			if c, cs := streamWith(newParser(), tc.text, bytesOf(tc.text)); c != content || !equalCalls(cs, calls) {
				t.Fatalf("byte by byte: content %q calls %v", c, cs)
			}
		})
	}
}

func TestNamed(t *testing.T) {
	runForced(t, func() Parser { return Named("get_weather") }, []forcedCase{
		{name: "an object", text: `{"city": "Paris"}`, calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "empty", text: `{}`, calls: []Call{{"get_weather", `{}`}}},
		{name: "whitespace around", text: " \n{ \"city\" :\t\"Paris\" }\n ", calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "nested, escapes and unicode", text: `{"q": "a\"b\\ \u00e9 東京", "n": [1, -2.5e3, {"x": [true, null]}], "o": {}}`,
			calls: []Call{{"get_weather", `{"q":"a\"b\\ \u00e9 東京","n":[1,-2.5e3,{"x":[true,null]}],"o":{}}`}}},
		{name: "cut short: the arguments so far", text: `{"city": "Zü`, calls: []Call{{"get_weather", `{"city":"Zü`}}},
		{name: "cut before the object: no call", text: "  ", content: "  "},
		{name: "not an object: content", text: `sunny`, content: `sunny`},
		{name: "text after the object", text: `{"a": 1} ok`, content: " ok", calls: []Call{{"get_weather", `{"a":1}`}}},
		{name: "broken object: the call keeps what it has", text: `{"a": 1 x`, content: "x", calls: []Call{{"get_weather", `{"a":1`}}},
	})
}

func TestRequired(t *testing.T) {
	runForced(t, func() Parser { return Required(tools) }, []forcedCase{
		{name: "one call", text: `[{"name": "get_weather", "parameters": {"city": "Paris"}}]`, calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "two calls", text: `[{"name": "get_weather", "parameters": {"city": "Zürich"}}, {"name": "get_time", "parameters": {}}]`,
			calls: []Call{{"get_weather", `{"city":"Zürich"}`}, {"get_time", `{}`}}},
		{name: "whitespace everywhere", text: "\n[\n  {\n    \"name\" : \"search\",\n    \"parameters\" : { \"q\" : [ 1 , 2 ] }\n  } ,\n  {\"name\":\"get_time\",\"parameters\":{}}\n]\n",
			calls: []Call{{"search", `{"q":[1,2]}`}, {"get_time", `{}`}}},
		{name: "arguments and members in another order", text: `[{"arguments": {"q": "x"}, "name": "search"}]`, calls: []Call{{"search", `{"q":"x"}`}}},
		{name: "escapes in the name and arguments", text: `[{"name": "get_\u0074ime", "parameters": {"s": "\"\\\/\n"}}]`, calls: []Call{{"get_time", `{"s":"\"\\\/\n"}`}}},
		{name: "cut inside the first name: content", text: `[{"name": "get_wea`, content: `[{"name": "get_wea`},
		{name: "cut inside arguments", text: `[{"name": "get_weather", "parameters": {"city": "Zü`, calls: []Call{{"get_weather", `{"city":"Zü`}}},
		{name: "cut inside the second name: dropped", text: `[{"name": "get_time", "parameters": {}}, {"name": "get_`, calls: []Call{{"get_time", `{}`}}},
		{name: "cut after a comma: dropped", text: `[{"name": "get_time", "parameters": {}}, `, calls: []Call{{"get_time", `{}`}}},
		{name: "an undeclared tool: content", text: `[{"name": "rm", "parameters": {}}]`, content: `[{"name": "rm", "parameters": {}}]`},
		{name: "not a list: content", text: `{"name": "get_time"}`, content: `{"name": "get_time"}`},
		{name: "text after the list", text: `[{"name": "get_time", "parameters": {}}] ok`, content: " ok", calls: []Call{{"get_time", `{}`}}},
	})
}

// FuzzForcedSplit: wherever a forced answer is cut into pieces, Named's and
// Required's streams read what they read from it whole; an answer that is
// valid JSON of the forced shape reads as encoding/json reads it, with
// arguments in compact form.
func FuzzForcedSplit(f *testing.F) {
	for _, s := range []string{`{"city": "Paris"}`, ` {"a": [1, {"b": "\u00e9\"x"}]} `, `{"a": 1 x`,
		`[{"name": "get_weather", "parameters": {"city": "Zürich"}}, {"name": "get_time", "parameters": {}}]`,
		`[{"name": "get_time", "parameters": {}}, {"name": "get_`, `[{"name": "rm", "parameters": {}}]`, `[]`, `hello`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > maxFuzzText {
			return
		}
		for _, newParser := range []func() Parser{func() Parser { return Named("get_weather") }, func() Parser { return Required(tools) }} {
			content, calls, _ := ExtractWith(newParser(), text)
			for cut := 0; cut <= len(text); cut++ {
				if c, cs := streamWith(newParser(), text, []int{cut}); c != content || !equalCalls(cs, calls) {
					t.Fatalf("%q cut at %d: content %q calls %v; whole: %q %v", text, cut, c, cs, content, calls)
				}
			}
		}
		if want, ok := namedCalls(text); ok {
			if content, calls, _ := ExtractWith(Named("get_weather"), text); content != "" || !cmp.Equal(calls, want) {
				t.Fatalf("named %q: content %q calls %v, want %v", text, content, calls, want)
			}
		}
		if want, ok := requiredCalls(text); ok {
			if content, calls, _ := ExtractWith(Required(tools), text); content != "" || !cmp.Equal(calls, want) {
				t.Fatalf("required %q: content %q calls %v, want %v", text, content, calls, want)
			}
		}
	})
}

// namedCalls reads a named answer with encoding/json: ok when it is an
// object.
func namedCalls(text string) ([]Call, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &m) != nil || m == nil {
		return nil, false
	}
	return []Call{{"get_weather", compact(text)}}, true
}

// requiredCalls reads a required answer with encoding/json: ok when it
// is a non-empty list of {"name", "parameters"} objects of declared tools.
func requiredCalls(text string) ([]Call, bool) {
	var list []json.RawMessage
	if json.Unmarshal([]byte(text), &list) != nil || len(list) == 0 {
		return nil, false
	}
	var calls []Call
	for _, raw := range list {
		var c map[string]json.RawMessage
		if json.Unmarshal(raw, &c) != nil || !uniqueKeys(raw) {
			return nil, false
		}
		var name string
		var params map[string]json.RawMessage
		if len(c) != 2 || json.Unmarshal(c["name"], &name) != nil || !contains(tools, name) || json.Unmarshal(c["parameters"], &params) != nil || params == nil {
			return nil, false
		}
		calls = append(calls, Call{name, compact(string(c["parameters"]))})
	}
	return calls, true
}

// uniqueKeys reports whether the JSON object raw has no key twice
// (encoding/json keeps the last, a call object the first).
func uniqueKeys(raw json.RawMessage) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	seen := map[string]bool{}
	if _, err := dec.Token(); err != nil {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		k, ok := tok.(string)
		if err != nil || !ok || seen[k] {
			return false
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return true
}

func compact(s string) string {
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(s))
	return b.String()
}
