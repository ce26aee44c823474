package toolparse

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var tools = []string{"get_weather", "get_time", "search"}

type extractCase struct {
	name    string
	text    string
	content string
	calls   []Call
}

// runExtract checks Extract on every case, and that streaming the text a
// byte at a time gives the same.
func runExtract(t *testing.T, format string, tests []extractCase) {
	t.Helper()
	f, err := Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content, calls, ok := f.Extract(tc.text, tools)
			if diff := cmp.Diff(tc.calls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if content != tc.content {
				t.Errorf("content = %q, want %q", content, tc.content)
			}
			if ok != (len(tc.calls) > 0) {
				t.Errorf("ok = %v with %d calls", ok, len(tc.calls))
			}
			gotContent, gotCalls := stream(f, tc.text, bytesOf(tc.text))
			if gotContent != content || !cmp.Equal(gotCalls, calls) {
				t.Errorf("byte-wise stream: content %q calls %v; whole: %q %v", gotContent, gotCalls, content, calls)
			}
		})
	}
}

func bytesOf(s string) []int {
	cuts := make([]int, 0, len(s))
	for i := 1; i < len(s); i++ {
		cuts = append(cuts, i)
	}
	return cuts
}

func TestHermes(t *testing.T) {
	runExtract(t, "hermes", []extractCase{
		{name: "plain text", text: "Hello there.\n", content: "Hello there.\n"},
		{name: "one call (Qwen2.5)", text: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "several calls", text: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"zone":"CET"}`}}},
		{name: "content before", text: "Let me check.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}\n</tool_call>",
			content: "Let me check.", calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "content after", text: "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>\nDone.",
			content: "\nDone.", calls: []Call{{"search", `{}`}}},
		{name: "arguments before name (Hermes 2 Pro)", text: "<tool_call>\n{\"arguments\": {\"city\": \"Oslo\"}, \"name\": \"get_weather\"}\n</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Oslo"}`}}},
		{name: "no closing tag at the end", text: "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}",
			calls: []Call{{"get_time", `{}`}}},
		{name: "no arguments", text: "<tool_call>{\"name\": \"get_time\"}</tool_call>", calls: []Call{{"get_time", `{}`}}},
		{name: "arguments as a JSON string", text: `<tool_call>{"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}</tool_call>`,
			calls: []Call{{"get_weather", `{"city":"Rome"}`}}},
		{name: "unicode", text: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich 東京\", \"e\": \"\\u00e9\"}}</tool_call>",
			calls: []Call{{"get_weather", `{"city":"Zürich 東京","e":"\u00e9"}`}}},
		{name: "braces and tags in strings", text: `<tool_call>{"name": "search", "arguments": {"q": "a } { ] [ \" </tool_call> <tool_call>", "n": {"deep": [1, {"x": null}]}}}</tool_call>`,
			calls: []Call{{"search", `{"q":"a } { ] [ \" </tool_call> <tool_call>","n":{"deep":[1,{"x":null}]}}`}}},
		{name: "extra members ignored", text: `<tool_call>{"id": 7, "name": "get_time", "arguments": {"z": 1.5e3}, "x": [true]}</tool_call>`,
			calls: []Call{{"get_time", `{"z":1.5e3}`}}},
		{name: "unknown tool is content", text: "<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>",
			content: "<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>"},
		{name: "unknown then known", text: "<tool_call>{\"name\": \"launch\"}</tool_call><tool_call>{\"name\": \"get_time\"}</tool_call>",
			content: "<tool_call>{\"name\": \"launch\"}</tool_call>", calls: []Call{{"get_time", `{}`}}},
		{name: "not JSON is content", text: "<tool_call>get_weather(city=\"Paris\")</tool_call>",
			content: "<tool_call>get_weather(city=\"Paris\")</tool_call>"},
		{name: "malformed before the name is content", text: "<tool_call>{\"name\" \"get_weather\"}</tool_call>",
			content: "<tool_call>{\"name\" \"get_weather\"}</tool_call>"},
		{name: "malformed arguments: the call keeps what parsed", text: "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }}</tool_call>",
			content: "}}</tool_call>", calls: []Call{{"get_weather", `{"city":`}}},
		{name: "cut in the arguments (max_tokens)", text: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa",
			calls: []Call{{"get_weather", `{"city":"Pa`}}},
		{name: "cut before the name", text: "Sure <tool_call>\n{\"na", content: "Sure <tool_call>\n{\"na"},
		{name: "cut in the opening tag", text: "Sure <tool_", content: "Sure <tool_"},
		{name: "cut in the closing tag", text: "<tool_call>{\"name\": \"get_time\"}\n</tool_", calls: []Call{{"get_time", `{}`}}},
		{name: "a lone closing tag is content", text: "a </tool_call> b", content: "a </tool_call> b"},
		{name: "two tags", text: "<tool_call><tool_call>{\"name\": \"get_time\"}", content: "<tool_call>", calls: []Call{{"get_time", `{}`}}},
		{name: "a call right after another's object", text: "<tool_call>{\"name\": \"get_time\"}<tool_call>{\"name\": \"search\"}</tool_call>",
			calls: []Call{{"get_time", `{}`}, {"search", `{}`}}},
	})
}

func TestLlama3JSON(t *testing.T) {
	runExtract(t, "llama3_json", []extractCase{
		{name: "plain text", text: "The answer is 4.", content: "The answer is 4."},
		{name: "parameters", text: `{"name": "get_weather", "parameters": {"city": "Paris"}}`, calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "python_tag and arguments", text: `<|python_tag|>{"name": "get_time", "arguments": {"zone": "UTC"}}`, calls: []Call{{"get_time", `{"zone":"UTC"}`}}},
		{name: "several with ;", text: `{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
		{name: "several with newlines", text: "{\"name\": \"get_time\", \"parameters\": {}}\n{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}\n",
			calls: []Call{{"get_time", `{}`}, {"search", `{"q":"x"}`}}},
		{name: "leading whitespace", text: "\n\n{\"name\": \"get_time\", \"parameters\": {}}", calls: []Call{{"get_time", `{}`}}},
		{name: "JSON later in prose is content", text: `Try {"name": "get_time", "parameters": {}}`, content: `Try {"name": "get_time", "parameters": {}}`},
		{name: "prose then python_tag", text: `Checking. <|python_tag|>{"name": "get_time", "parameters": {}}`, content: "Checking.", calls: []Call{{"get_time", `{}`}}},
		{name: "JSON that is not a call", text: `{"answer": 42}`, content: `{"answer": 42}`},
		{name: "unknown tool", text: `{"name": "rm", "parameters": {"path": "/"}}`, content: `{"name": "rm", "parameters": {"path": "/"}}`},
		{name: "built-in tool call syntax", text: `<|python_tag|>brave_search.call(query="x")`, content: `<|python_tag|>brave_search.call(query="x")`},
		{name: "text after a call", text: `{"name": "get_time", "parameters": {}} Then I will answer.`, content: " Then I will answer.", calls: []Call{{"get_time", `{}`}}},
		{name: "dangling ;", text: `{"name": "get_time", "parameters": {}}; `, content: "; ", calls: []Call{{"get_time", `{}`}}},
		{name: "nested braces in strings", text: `{"name": "search", "parameters": {"q": "{\"a\": [}]"}}`, calls: []Call{{"search", `{"q":"{\"a\": [}]"}`}}},
	})
}

func TestMistral(t *testing.T) {
	runExtract(t, "mistral", []extractCase{
		{name: "plain text", text: "Bonjour.", content: "Bonjour."},
		{name: "list form (v0.3)", text: `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}]`, calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "list of two, ids (Nemo)", text: `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}, {"name": "get_time", "arguments": {}, "id": "123456789"}]`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
		{name: "content before", text: "Let me see.[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}]", content: "Let me see.", calls: []Call{{"search", `{"q":"x"}`}}},
		{name: "ARGS form (v11+)", text: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{}`}}},
		{name: "CALL_ID form (Small 3.2)", text: `[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{"zone": "UTC"}`, calls: []Call{{"get_time", `{"zone":"UTC"}`}}},
		{name: "name then brace (no [ARGS] in the text)", text: `[TOOL_CALLS]search{"q": "go"}`, calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "unknown tool, list form", text: `[TOOL_CALLS][{"name": "rm", "arguments": {}}]`, content: `[TOOL_CALLS][{"name": "rm", "arguments": {}}]`},
		{name: "unknown tool, ARGS form", text: `[TOOL_CALLS]rm[ARGS]{"path": "/"}`, content: `[TOOL_CALLS]rm[ARGS]{"path": "/"}`},
		{name: "unknown then known, ARGS form", text: `[TOOL_CALLS]rm[ARGS]{}[TOOL_CALLS]get_time[ARGS]{}`, content: `[TOOL_CALLS]rm[ARGS]{}`, calls: []Call{{"get_time", `{}`}}},
		{name: "malformed list is content", text: `[TOOL_CALLS] [get_weather]`, content: `[TOOL_CALLS] [get_weather]`},
		{name: "cut in the arguments", text: `[TOOL_CALLS]get_weather[ARGS]{"city": "Par`, calls: []Call{{"get_weather", `{"city":"Par`}}},
		{name: "cut in the marker", text: `Hm [TOOL_`, content: `Hm [TOOL_`},
		{name: "unicode and braces", text: `[TOOL_CALLS]search[ARGS]{"q": "café } {"}`, calls: []Call{{"search", `{"q":"café } {"}`}}},
		{name: "text after a list", text: "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]\nok", content: "\nok", calls: []Call{{"get_time", `{}`}}},
	})
}

func TestPythonic(t *testing.T) {
	runExtract(t, "pythonic", []extractCase{
		{name: "plain text", text: "It is sunny.", content: "It is sunny."},
		{name: "one call", text: `[get_weather(city="Paris")]`, calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "several calls, literals", text: `[get_weather(city='San Francisco', days=3, metric=True), get_time(zone=None, hours=[1, 2.5, -3], opts={'a': "b", "c": False})]`,
			calls: []Call{{"get_weather", `{"city":"San Francisco","days":3,"metric":true}`}, {"get_time", `{"zone":null,"hours":[1,2.5,-3],"opts":{"a":"b","c":false}}`}}},
		{name: "no arguments", text: `[get_time()]`, calls: []Call{{"get_time", `{}`}}},
		{name: "escapes and unicode", text: `[search(q='it\'s "x"\n\u00e9 東京 <&>', r=r'\d+')]`, calls: []Call{{"search", `{"q":"it's \"x\"\né 東京 <&>","r":"\\d+"}`}}},
		{name: "triple quotes and numbers", text: `[search(q="""a "b" c""", n=1_000, f=.5, g=5., h=0x1f, e=1e3)]`,
			calls: []Call{{"search", `{"q":"a \"b\" c","n":1000,"f":0.5,"g":5.0,"h":31,"e":1e3}`}}},
		{name: "whitespace and trailing commas", text: "[\n  get_time(\n    zone = 'UTC',\n  ),\n]", calls: []Call{{"get_time", `{"zone":"UTC"}`}}},
		{name: "text after the list", text: `[get_time()] and then`, content: " and then", calls: []Call{{"get_time", `{}`}}},
		{name: "a list that is prose", text: `[Note: this is not a call]`, content: `[Note: this is not a call]`},
		{name: "a numbered reference", text: `[1] First point.`, content: `[1] First point.`},
		{name: "unknown tool: the list is content", text: `[get_time(), launch(x=1)]`, content: `[get_time(), launch(x=1)]`},
		{name: "positional arguments are not read", text: `[get_weather("Paris")]`, content: `[get_weather("Paris")]`},
		{name: "non-literal argument", text: `[get_weather(city=home)]`, content: `[get_weather(city=home)]`},
		{name: "repeated keyword", text: `[get_time(z=1, z=2)]`, content: `[get_time(z=1, z=2)]`},
		{name: "empty list", text: `[]`, content: `[]`},
		{name: "cut short", text: `[get_weather(city="Par`, content: `[get_weather(city="Par`},
		{name: "leading whitespace", text: "\n [get_time()]", calls: []Call{{"get_time", `{}`}}},
		{name: "brackets in strings", text: `[search(q="])}[({")]`, calls: []Call{{"search", `{"q":"])}[({"}`}}},
	})
}

// stream feeds text cut at cuts (increasing offsets) and returns the
// content and calls the deltas add up to.
func stream(f *Format, text string, cuts []int) (string, []Call) {
	return streamWith(f.New(tools), text, cuts)
}

// streamWith is stream with a new Parser p.
func streamWith(p Parser, text string, cuts []int) (string, []Call) {
	var all Delta
	prev := 0
	for _, c := range append(cuts, len(text)) {
		all.Append(checked(p.Push(text[prev:c])))
		prev = c
	}
	all.Append(checked(p.Finish()))
	var calls []Call
	for _, c := range all.Calls {
		if c.Name != "" {
			calls = append(calls, Call{Name: c.Name})
		}
		calls[c.Index].Arguments += c.Arguments
	}
	return all.Content, calls
}

// checked panics on a Delta whose first delta of a call carries
// arguments (they must come in later deltas).
func checked(d Delta) Delta {
	for _, c := range d.Calls {
		if c.Name != "" && c.Arguments != "" {
			panic("a call's first delta has arguments")
		}
	}
	return d
}

func TestLookupAndNames(t *testing.T) {
	for _, n := range Names() {
		if _, err := Lookup(n); err != nil {
			t.Errorf("Lookup(%q): %v", n, err)
		}
	}
	_, err := Lookup("qwen")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "hermes, llama3_json") {
		t.Errorf("Lookup(qwen) = %v", err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ template, want string }{
		{`{{- "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" }}`, "hermes"},
		{`{{- '<tool_call>\n<function=' + tool_call.name + '>\n' }}`, ""}, // Qwen3-Coder XML
		{`<tool_call>{{ tc.name }}<arg_key>{{ k }}</arg_key>`, ""},        // GLM 4.5
		{`{{- "<|python_tag|>" + tool_call.name + ".call(" }}`, "llama3_json"},
		{`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.`, "llama3_json"},
		{`{{- '[TOOL_CALLS]' + name + '[ARGS]' + arguments }}`, "mistral"},
		{`[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]`, "pythonic"},
		{`{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}`, ""},
	}
	for _, tc := range tests {
		f, ok := Detect(tc.template)
		got := ""
		if ok {
			got = f.Name
		}
		if got != tc.want {
			t.Errorf("Detect(%.50q) = %q, want %q", tc.template, got, tc.want)
		}
	}
}

// TestArgumentsAreJSONObjects: every complete call's arguments parse.
func TestArgumentsAreJSONObjects(t *testing.T) {
	f, _ := Lookup("hermes")
	_, calls, _ := f.Extract("<tool_call>{\"name\": \"search\", \"arguments\": {\"a\": [1, 2, {\"b\": \"\\\"}\"}]}}</tool_call>", tools)
	var v map[string]any
	if len(calls) != 1 || json.Unmarshal([]byte(calls[0].Arguments), &v) != nil {
		t.Fatalf("calls %v", calls)
	}
}

// BenchmarkPush streams a long answer in token-sized pieces: plain text
// (every tool_choice auto answer pays this) and one big call.
func BenchmarkPush(b *testing.B) {
	plain := strings.Repeat("The weather in Paris is mild; <b>bring</b> [a coat]. ", 80)
	call := "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"" + strings.Repeat("long argument text ", 200) + "\"}}\n</tool_call>"
	for _, tc := range []struct{ name, text string }{{"plain", plain}, {"call", call}} {
		for _, format := range formats {
			b.Run(tc.name+"/"+format.Name, func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				for b.Loop() {
					p := format.New(tools)
					for i := 0; i < len(tc.text); i += 4 {
						p.Push(tc.text[i:min(i+4, len(tc.text))])
					}
					p.Finish()
				}
			})
		}
	}
}

// TestDetectRealTemplates reads llama.cpp's collection of real chat
// templates ($TANDEM_LLAMA_CPP_SRC, skipped without it).
func TestDetectRealTemplates(t *testing.T) {
	dir := filepath.Join(os.Getenv("TANDEM_LLAMA_CPP_SRC"), "models/templates")
	if _, err := os.Stat(dir); os.Getenv("TANDEM_LLAMA_CPP_SRC") == "" || err != nil {
		t.Skip("no llama.cpp source ($TANDEM_LLAMA_CPP_SRC)")
	}
	want := map[string]string{
		"Qwen-Qwen2.5-7B-Instruct": "hermes", "Qwen-Qwen3-0.6B": "hermes", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": "hermes",
		"ibm-granite-granite-4.0": "hermes", "meta-llama-Llama-3.1-8B-Instruct": "llama3_json", "meta-llama-Llama-3.2-3B-Instruct": "llama3_json",
		"meta-llama-Llama-3.3-70B-Instruct": "llama3_json", "mistralai-Mistral-Nemo-Instruct-2407": "mistral",
		"Mistral-Small-3.2-24B-Instruct-2506": "mistral", "unsloth-mistral-Devstral-Small-2507": "mistral",
		"Qwen3-Coder": "qwen3_coder", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": "qwen3_coder", "GLM-4.6": "", "ibm-granite-granite-3.3-2B-Instruct": "granite", "fireworks-ai-llama-3-firefunction-v2": "phi4_mini_json", "deepseek-ai-DeepSeek-V3.1": "", "google-gemma-2-2b-it": "",
	}
	for name, w := range want {
		src, err := os.ReadFile(filepath.Join(dir, name+".jinja"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got := ""
		if f, ok := Detect(string(src)); ok {
			got = f.Name
		}
		if got != w {
			t.Errorf("Detect(%s) = %q, want %q", name, got, w)
		}
	}
}
