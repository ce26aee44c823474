package toolparse

import (
	"math/rand"
	"testing"
)

func init() {
	// FuzzSplit's and TestSplitProperty's seeds for the list formats.
	splitSeeds = append(splitSeeds,
		"Sure.\n<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich ]\"}}, {\"arguments\": \"{\\\"q\\\": 1}\", \"name\": \"search\"}]\nDone.",
		" [{\"name\": \"get_time\"}, {\"name\": \"launch\"}] <tool_call>[{\"name\": \"get_time\", \"arguments\": {\"a\": }}]",
		"<|tool_call|> <tool_<tool_call>[{\"name\": \"get_time\"}, ",
		`I will check. functools[{"name": "search", "parameters": {"q": [[1], "]"]}}, {"name": "get_time"}] functools [] functools[{"na`,
	)
}

func TestGranite(t *testing.T) {
	runExtract(t, "granite", []extractCase{
		{name: "plain text", text: "Hello there.\n", content: "Hello there.\n"},
		{name: "one call (3.3)", text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "several calls", text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"zone":"CET"}`}}},
		{name: "a bare list at the start (3.0, special token skipped)", text: "\n[{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}]",
			calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "<tool_call> (3.1)", text: `<tool_call>[{"name": "get_time", "arguments": {}}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "both markers", text: "<|tool_call|> <tool_call>\n[{\"name\": \"get_time\"}]", calls: []Call{{"get_time", `{}`}}},
		{name: "content before", text: "Let me check.\n<|tool_call|>[{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}]",
			content: "Let me check.", calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "content after", text: "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]\nDone.",
			content: "\nDone.", calls: []Call{{"get_time", `{}`}}},
		{name: "whitespace in and around the list", text: "<|tool_call|>\n[\n  {\"name\": \"get_time\", \"arguments\": {}} ,\n  {\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n]\n",
			calls: []Call{{"get_time", `{}`}, {"search", `{"q":"x"}`}}},
		{name: "arguments absent", text: `<|tool_call|>[{"name": "get_time"}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "arguments before the name", text: `<|tool_call|>[{"arguments": {"city": "Oslo"}, "name": "get_weather"}]`,
			calls: []Call{{"get_weather", `{"city":"Oslo"}`}}},
		{name: "arguments as a JSON string", text: `<|tool_call|>[{"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}]`,
			calls: []Call{{"get_weather", `{"city":"Rome"}`}}},
		{name: "unicode", text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Zürich 東京", "e": "\u00e9"}}]`,
			calls: []Call{{"get_weather", `{"city":"Zürich 東京","e":"\u00e9"}`}}},
		{name: "brackets and markers in strings", text: `<|tool_call|>[{"name": "search", "arguments": {"q": "a ] [ } { \" <|tool_call|> <tool_call>", "n": [[1], {"x": null}]}}]`,
			calls: []Call{{"search", `{"q":"a ] [ } { \" <|tool_call|> <tool_call>","n":[[1],{"x":null}]}`}}},
		{name: "extra members ignored", text: `<|tool_call|>[{"id": 7, "name": "get_time", "arguments": {"z": 1.5e3}, "x": [true]}]`,
			calls: []Call{{"get_time", `{"z":1.5e3}`}}},
		{name: "a second list later", text: `<|tool_call|>[{"name": "get_time"}] then <|tool_call|>[{"name": "search"}]`,
			content: " then", calls: []Call{{"get_time", `{}`}, {"search", `{}`}}},
		{name: "a bare list only at the start", text: `[{"name": "get_time"}] [{"name": "search"}]`,
			content: ` [{"name": "search"}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "a bare list later in prose is content", text: `Try [{"name": "get_time"}]`, content: `Try [{"name": "get_time"}]`},
		{name: "unknown tool is content", text: `<|tool_call|>[{"name": "launch", "arguments": {}}]`, content: `<|tool_call|>[{"name": "launch", "arguments": {}}]`},
		{name: "unknown after known", text: `<|tool_call|>[{"name": "get_time"}, {"name": "launch"}]`,
			content: `, {"name": "launch"}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "a list that is not calls", text: "[1, 2, 3] are the numbers", content: "[1, 2, 3] are the numbers"},
		{name: "an empty list", text: "<|tool_call|>[]", content: "<|tool_call|>[]"},
		{name: "an object that is not in a list", text: `<tool_call>{"name": "get_time"}</tool_call>`, content: `<tool_call>{"name": "get_time"}</tool_call>`},
		{name: "not JSON is content", text: `<|tool_call|>get_time()`, content: `<|tool_call|>get_time()`},
		{name: "malformed before the name is content", text: `<|tool_call|>[{"name" "get_weather"}]`, content: `<|tool_call|>[{"name" "get_weather"}]`},
		{name: "malformed arguments: the call keeps what parsed", text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": }}]`,
			content: "}}]", calls: []Call{{"get_weather", `{"city":`}}},
		{name: "cut in the arguments (max_tokens)", text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Pa`,
			calls: []Call{{"get_weather", `{"city":"Pa`}}},
		{name: "cut after a call", text: "<|tool_call|>[{\"name\": \"get_time\"}\n", calls: []Call{{"get_time", `{}`}}},
		{name: "cut before the name", text: "Sure <|tool_call|>[{\"na", content: "Sure <|tool_call|>[{\"na"},
		{name: "cut in the marker", text: "Sure <|tool_", content: "Sure <|tool_"},
		{name: "cut in the second marker", text: "<|tool_call|><tool_", content: "<|tool_call|><tool_"},
		{name: "a repeated second marker", text: `<|tool_call|><tool_call><tool_call>[{"name": "get_time"}]`,
			content: "<|tool_call|><tool_call>", calls: []Call{{"get_time", `{}`}}},
		{name: "a broken second marker", text: `<|tool_call|><tool_<tool_call>[{"name": "get_time"}]`,
			content: "<|tool_call|><tool_", calls: []Call{{"get_time", `{}`}}},
	})
}

func TestPhi4MiniJSON(t *testing.T) {
	runExtract(t, "phi4_mini_json", []extractCase{
		{name: "plain text", text: "Warsaw is the capital of Poland.", content: "Warsaw is the capital of Poland."},
		{name: "one call", text: `functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "several calls, parameters", text: `functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "parameters": {"zone": "UTC"}}]`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"zone":"UTC"}`}}},
		{name: "content before (FireFunction v2)", text: "I will look it up. functools[{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}]",
			content: "I will look it up.", calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "content after", text: "functools[{\"name\": \"get_time\"}]\nDone.", content: "\nDone.", calls: []Call{{"get_time", `{}`}}},
		{name: "whitespace in the list", text: "functools[\n {\"name\": \"get_time\"},\n {\"name\": \"search\", \"arguments\": {}}\n]",
			calls: []Call{{"get_time", `{}`}, {"search", `{}`}}},
		{name: "arguments absent", text: `functools[{"name": "get_time"}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "arguments as a JSON string (FireFunction v2)", text: `functools[{"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}]`,
			calls: []Call{{"get_weather", `{"city":"Rome"}`}}},
		{name: "unicode", text: `functools[{"name": "get_weather", "arguments": {"city": "Zürich 東京", "e": "\u00e9"}}]`,
			calls: []Call{{"get_weather", `{"city":"Zürich 東京","e":"\u00e9"}`}}},
		{name: "brackets and markers in strings, nested arrays", text: `functools[{"name": "search", "arguments": {"q": "a ] functools[ } {", "n": [[1, 2], []]}}]`,
			calls: []Call{{"search", `{"q":"a ] functools[ } {","n":[[1,2],[]]}`}}},
		{name: "a bare list is content", text: `[{"name": "get_time"}]`, content: `[{"name": "get_time"}]`},
		{name: "space before the list is content", text: `functools [{"name": "get_time"}]`, content: `functools [{"name": "get_time"}]`},
		{name: "functools in prose", text: "Use functools.partial here.", content: "Use functools.partial here."},
		{name: "unknown tool is content", text: `functools[{"name": "launch", "arguments": {}}]`, content: `functools[{"name": "launch", "arguments": {}}]`},
		{name: "unknown then known", text: `functools[{"name": "launch"}] functools[{"name": "get_time"}]`,
			content: `functools[{"name": "launch"}]`, calls: []Call{{"get_time", `{}`}}},
		{name: "an empty list", text: "functools[]", content: "functools[]"},
		{name: "malformed JSON is content", text: `functools[{"name": get_time}]`, content: `functools[{"name": get_time}]`},
		{name: "malformed arguments: the call keeps what parsed", text: `functools[{"name": "get_weather", "arguments": {"city" "Paris"}}]`,
			content: `"Paris"}}]`, calls: []Call{{"get_weather", `{"city"`}}},
		{name: "cut in the arguments (max_tokens)", text: `functools[{"name": "get_weather", "arguments": {"city": "Pa`,
			calls: []Call{{"get_weather", `{"city":"Pa`}}},
		{name: "cut before the name", text: `functools[{"name": "get_we`, content: `functools[{"name": "get_we`},
		{name: "cut in the marker", text: "ok functo", content: "ok functo"},
	})
}

// TestListSplitProperty is TestSplitProperty on texts built from the list
// formats' markers (its own words have none of them).
func TestListSplitProperty(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	words := []string{"<|tool_call|>", "<tool_call>", "<tool_", "functools[", "functools", "[", "]", "{", "}", `"`, ",", " ", "\n", ":",
		`"name": "get_time"`, `"name": "rm"`, `"arguments": {`, `"arguments": "{}"`, `"parameters": `, "1", "x", `\`, "é"}
	for range 500 {
		var b []byte
		for k := r.Intn(20); k > 0; k-- {
			b = append(b, words[r.Intn(len(words))]...)
		}
		checkSplits(t, string(b))
		if t.Failed() {
			return
		}
	}
}
