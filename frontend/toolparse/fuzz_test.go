package toolparse

import (
	"bytes"
	"encoding/json"
	"testing"
)

// maxFuzzText bounds the texts FuzzSplit tries: it streams each text cut
// at every offset, so the work grows with the square of its length.
const maxFuzzText = 400

var splitSeeds = []string{
	"Let me check.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {}, \"name\": \"get_time\"}\n</tool_call>",
	"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }}</tool_call> <tool_call>{\"name\": \"launch\"}",
	"<tool_call>{\"name\": \"search\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>x</tool_",
	`<|python_tag|>{"name": "get_weather", "parameters": {"city": "Zürich"}}; {"name": "get_time", "parameters": {}}`,
	`{"name": "get_time", "parameters": {"n": -1.5e-3}}; oops`,
	`Bonjour [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}, {"name": "rm"}]`,
	`[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Par"}[TOOL_CALLS]rm[ARGS]{}[TOOL_CALLS]get_time{}`,
	`[get_weather(city='San Francisco', days=3), get_time(zone=None, h=[1, 2.5], o={"a": 'b'})] done`,
	`[search(q="""a "b" ]""", r=r'\d')]`,
	"[Note: not a call]",
	"plain text with { braces } and [brackets] and <tags>",
}

// FuzzSplit: wherever a text is cut into pieces, every format's stream
// yields the content and calls Extract reads from the whole text; with no
// call, the content is the text; calls name declared tools, and complete
// arguments are compact JSON objects.
func FuzzSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) <= maxFuzzText {
			checkSplits(t, text)
		}
	})
}

// checkSplits checks FuzzSplit's property on text.
func checkSplits(t *testing.T, text string) {
	t.Helper()
	for _, format := range formats {
		content, calls, ok := format.Extract(text, tools)
		if !ok && content != text {
			t.Fatalf("%s: no call, but content %q differs from the text %q", format.Name, content, text)
		}
		for _, c := range calls {
			if !contains(tools, c.Name) {
				t.Fatalf("%s: call of undeclared %q", format.Name, c.Name)
			}
			var buf bytes.Buffer
			if json.Valid([]byte(c.Arguments)) && (c.Arguments[0] != '{' || json.Compact(&buf, []byte(c.Arguments)) != nil || buf.String() != c.Arguments) {
				t.Fatalf("%s: arguments %q are not a compact JSON object", format.Name, c.Arguments)
			}
		}
		for cut := 0; cut <= len(text); cut++ {
			gotContent, gotCalls := stream(format, text, []int{cut})
			if gotContent != content || !equalCalls(gotCalls, calls) {
				t.Fatalf("%s: %q cut at %d: content %q calls %v; whole: %q %v", format.Name, text, cut, gotContent, gotCalls, content, calls)
			}
		}
		gotContent, gotCalls := stream(format, text, bytesOf(text))
		if gotContent != content || !equalCalls(gotCalls, calls) {
			t.Fatalf("%s: %q byte by byte: content %q calls %v; whole: %q %v", format.Name, text, gotContent, gotCalls, content, calls)
		}
	}
}

func equalCalls(a, b []Call) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzValue: the JSON value reader accepts what json.Valid accepts, and
// keeps the bytes of json.Compact's form.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a": [1, -0.5e+3, true, null, "x\u00e9\n"]}`, ` [ ] `, `"s"`, `12`, `{"a":}`, `[01]`, `{"a" 1}`, `tru`, `{"k": "\ud83d"}`, "\"\x01\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v value
		var kept []byte
		ended, ok := false, true
		for _, b := range []byte(s + " ") { // the space ends a number at the top
			if ended {
				if !isSpace(b) {
					ok = false
				}
				continue
			}
			st, keep := v.step(b)
			if keep {
				kept = append(kept, b)
			}
			switch st {
			case bad:
				ok = false
			case done:
				ended = true
			case doneBefore: // b follows the value
				ended, ok = true, isSpace(b)
			}
			if !ok {
				break
			}
		}
		ok = ok && ended
		if valid := json.Valid([]byte(s)); ok != valid {
			t.Fatalf("%q: reader says %v, json.Valid %v", s, ok, valid)
		}
		if !ok {
			return
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, []byte(s))
		if buf.String() != string(kept) {
			t.Fatalf("%q: kept %q, compact %q", s, kept, buf.String())
		}
	})
}

// FuzzPythonic: the pythonic reader never panics, and the arguments of
// what it reads are JSON objects.
func FuzzPythonic(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Add(`[f(a='\x41\101\u00e9\U0001F600\N{DASH}', b=0o17, c=0b1, d=1.5j)]`)
	f.Fuzz(func(t *testing.T, s string) {
		calls, n, err := parseCalls([]byte(s))
		if err != nil {
			return
		}
		if n > len(s) || s[n-1] != ']' {
			t.Fatalf("%q: list ends at %d", s, n)
		}
		for _, c := range calls {
			var m map[string]any
			if json.Unmarshal([]byte(c.Arguments), &m) != nil {
				t.Fatalf("%q: arguments %q are not a JSON object", s, c.Arguments)
			}
		}
	})
}
