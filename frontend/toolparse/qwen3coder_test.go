package toolparse

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// qcCall is the canonical Qwen3-Coder call of get_weather.
const qcCall = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"

// TestQwen3Coder reads Qwen3-Coder's XML calls without parameter types:
// every value is a string, as vLLM leaves a parameter its schema does
// not name.
func TestQwen3Coder(t *testing.T) {
	runExtract(t, "qwen3_coder", []extractCase{
		{name: "plain text", text: "Hello there.\n", content: "Hello there.\n"},
		{name: "one call", text: qcCall, calls: []Call{{"get_weather", `{"city":"Paris","days":"3"}`}}},
		{name: "content before", text: "Let me look that up.\n\n" + qcCall,
			content: "Let me look that up.", calls: []Call{{"get_weather", `{"city":"Paris","days":"3"}`}}},
		{name: "two calls", text: qcCall + "\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Paris","days":"3"}`}, {"get_time", `{}`}}},
		{name: "two functions in one tool_call", text: "<tool_call>\n<function=get_time>\n</function>\n<function=search>\n<parameter=q>\ngo\n</parameter>\n</function>\n</tool_call>",
			calls: []Call{{"get_time", `{}`}, {"search", `{"q":"go"}`}}},
		{name: "no tool_call around it", text: "<function=search>\n<parameter=q>\nrust\n</parameter>\n</function>",
			calls: []Call{{"search", `{"q":"rust"}`}}},
		{name: "multi-line value keeps its inner newlines", text: "<tool_call>\n<function=search>\n<parameter=q>\n\nline 1\nline 2\n\n</parameter>\n</function>\n</tool_call>",
			calls: []Call{{"search", `{"q":"\nline 1\nline 2\n"}`}}},
		{name: "value without newlines", text: "<tool_call><function=search><parameter=q>go</parameter></function></tool_call>",
			calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "missing </parameter>", text: "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n<parameter=days>\n2\n</function>\n</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Oslo","days":"2"}`}}},
		{name: "tags and quotes in a value", text: "<tool_call>\n<function=search>\n<parameter=q>\na \"b\" <tool_call> {x} \\ é\n</parameter>\n</function>\n</tool_call>",
			calls: []Call{{"search", `{"q":"a \"b\" <tool_call> {x} \\ é"}`}}},
		{name: "null", text: "<function=search>\n<parameter=q>\nNULL\n</parameter>\n</function>", calls: []Call{{"search", `{"q":null}`}}},
		{name: "undeclared tool stays content", text: "<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
			content: "<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>"},
		{name: "tool_call without a function stays content", text: "<tool_call>\n{\"name\": \"search\"}\n</tool_call>",
			content: "<tool_call>\n{\"name\": \"search\"}\n</tool_call>"},
		{name: "tool_call, then a call", text: "<tool_call><tool_call>\n<function=get_time>\n</function>\n</tool_call>",
			content: "<tool_call>", calls: []Call{{"get_time", `{}`}}},
		{name: "cut in a value keeps what was read", text: "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
			calls: []Call{{"get_weather", `{"city":"Par"}`}}},
		{name: "cut after a parameter", text: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
			calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "cut in the function name is content", text: "Sure. <tool_call>\n<function=get_wea", content: "Sure. <tool_call>\n<function=get_wea"},
		{name: "cut closing tag", text: "<function=get_time>\n</function>\n</tool_c", calls: []Call{{"get_time", `{}`}}},
		{name: "text after", text: "<function=get_time>\n</function>\nDone.", content: "\nDone.", calls: []Call{{"get_time", `{}`}}},
		{name: "an empty value", text: "<function=search>\n<parameter=q>\n</parameter>\n</function>", calls: []Call{{"search", `{"q":""}`}}},
	})
}

// TestQwen3CoderTypes converts values by the tools' parameter types, as
// vLLM's _convert_param_value does, whole and streamed byte by byte.
func TestQwen3CoderTypes(t *testing.T) {
	types := ParamTypes{"search": {
		"s": "string", "i": "integer", "n": "number", "b": "boolean", "o": "object", "a": "array", "e": "enum", "u": "Integer",
	}}
	f, err := Lookup("qwen3_xml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, param, value, want string
	}{
		{"string", "s", "42", `"42"`},
		{"integer", "i", "42", `42`},
		{"negative integer", "i", "-7", `-7`},
		{"integer type in any case", "u", "5", `5`},
		{"not an integer stays a string", "i", "4.5", `"4.5"`},
		{"number", "n", "2.5", `2.5`},
		{"integral number is an integer", "n", "3.0", `3`},
		{"exponent", "n", "1.5e-7", `1.5e-07`},
		{"not a number", "n", "many", `"many"`},
		{"boolean true", "b", "True", `true`},
		{"boolean other", "b", "yes", `false`},
		{"null of any type", "i", "null", `null`},
		{"object as JSON", "o", "{\"a\": [1, 2], \"b\": \"x y\"}", `{"a":[1,2],"b":"x y"}`},
		{"array as JSON", "a", "[1, \"two\", null]", `[1,"two",null]`},
		{"array as a Python literal", "a", "['x', True, None]", `["x",true,null]`},
		{"object that is neither", "o", "{not json", `"{not json"`},
		{"enum", "e", "red", `"red"`},
		{"undeclared parameter", "z", "9", `"9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "<tool_call>\n<function=search>\n<parameter=" + tc.param + ">\n" + tc.value + "\n</parameter>\n</function>\n</tool_call>"
			want := []Call{{"search", `{"` + tc.param + `":` + tc.want + `}`}}
			_, calls, _ := ExtractWith(f.NewTyped(tools, types), text)
			if diff := cmp.Diff(want, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if _, got := streamWith(f.NewTyped(tools, types), text, bytesOf(text)); !cmp.Equal(got, calls) {
				t.Errorf("byte-wise stream %v, whole %v", got, calls)
			}
		})
	}
}

// TestQwen3CoderStreamsParameters: a call's name goes out as soon as
// its function tag closes, and each parameter as soon as it ends.
func TestQwen3CoderStreamsParameters(t *testing.T) {
	f, _ := Lookup("qwen3_coder")
	p := f.NewTyped(tools, ParamTypes{"get_weather": {"days": "integer"}})
	var got []Delta
	for _, piece := range []string{"Checking.\n<tool_call>\n<function=get_weather>\n", "<parameter=city>\nParis\n</parameter>\n", "<parameter=days>\n3\n</parameter>\n", "</function>\n</tool_call>"} {
		got = append(got, p.Push(piece))
	}
	got = append(got, p.Finish())
	want := []Delta{
		{Content: "Checking.", Calls: []CallDelta{{Index: 0, Name: "get_weather"}, {Index: 0, Arguments: "{"}}},
		{Calls: []CallDelta{{Index: 0, Arguments: `"city":"Paris"`}}},
		{Calls: []CallDelta{{Index: 0, Arguments: `,"days":3`}}},
		{Calls: []CallDelta{{Index: 0, Arguments: "}"}}},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}
