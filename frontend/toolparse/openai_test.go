package toolparse

import (
	"os"
	"path/filepath"
	"testing"
)

func init() {
	// FuzzSplit's and TestSplitProperty's seeds for the harmony calls.
	splitSeeds = append(splitSeeds,
		"Checking.<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Zürich <|call|>\"}<|call|>",
		"<|start|>assistant to=functions.launch<|channel|>commentary json<|message|>{}<|call|><|start|>assistant to=functions.search<|chan",
	)
}

func TestOpenAI(t *testing.T) {
	const open = "<|start|>assistant to=functions."
	const hdr = "<|channel|>commentary json<|message|>"
	runExtract(t, "openai", []extractCase{
		{name: "plain text", text: "It is sunny.", content: "It is sunny."},
		{name: "one call", text: open + "get_weather" + hdr + `{"city": "Paris"}<|call|>`,
			calls: []Call{{"get_weather", `{"city":"Paris"}`}}},
		{name: "a preamble, then two calls", text: "Let me check." + open + "get_weather" + hdr + `{"city":"Oslo"}<|call|>` + open + "get_time" + hdr + `{}<|call|>`,
			content: "Let me check.", calls: []Call{{"get_weather", `{"city":"Oslo"}`}, {"get_time", `{}`}}},
		{name: "cut before <|call|>", text: open + "search" + hdr + `{"q": "go"}`, calls: []Call{{"search", `{"q":"go"}`}}},
		{name: "cut in the arguments", text: open + "search" + hdr + `{"q": "g`, calls: []Call{{"search", `{"q":"g`}}},
		{name: "a constrained header", text: open + "get_time <|constrain|>json<|message|>{}<|call|>", calls: []Call{{"get_time", `{}`}}},
		{name: "markers inside strings", text: open + "search" + hdr + `{"q": "<|call|> <|start|>"}<|call|>`,
			calls: []Call{{"search", `{"q":"<|call|> <|start|>"}`}}},
		{name: "an undeclared function is content", text: open + "launch" + hdr + `{}<|call|>`, content: open + "launch" + hdr + `{}<|call|>`},
		{name: "arguments that are not an object are content", text: open + "get_time" + hdr + `now<|call|>`, content: open + "get_time" + hdr + `now<|call|>`},
		{name: "text after a call", text: open + "get_time" + hdr + "{}<|call|> Done.", content: " Done.", calls: []Call{{"get_time", `{}`}}},
	})
	if f, ok := Detect(`{{- "<|start|>assistant to=" }}{{- "functions." + tool_call.name + "<|channel|>commentary " }}{{- "<|call|>" }}`); !ok || f.Name != "openai" {
		t.Errorf("Detect(gpt-oss's template) = %v, %v", f, ok)
	}
}

// TestDetectGPTOSS: gpt-oss's own template (llama.cpp's copy) picks the
// openai format.
func TestDetectGPTOSS(t *testing.T) {
	dir := os.Getenv("TANDEM_LLAMA_CPP_SRC")
	if dir == "" {
		t.Skip("TANDEM_LLAMA_CPP_SRC unset: set it to a llama.cpp checkout (make test does)")
	}
	src, err := os.ReadFile(filepath.Join(dir, "models", "templates", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := Detect(string(src)); !ok || f.Name != "openai" {
		t.Errorf("Detect = %v, %v", f, ok)
	}
}
