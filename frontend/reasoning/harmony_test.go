package reasoning

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestHarmonySplit(t *testing.T) {
	f, err := Lookup("openai_gptoss")
	if err != nil {
		t.Fatal(err)
	}
	const call = HarmonyCallPrefix + "get_weather<|channel|>commentary json<|message|>"
	tests := []struct {
		name, answer       string
		reasoning, content string
	}{
		{"analysis then final", "<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4.",
			"User asks 2+2.", "4."},
		{"final only", "<|channel|>final<|message|>Hi there.", "", "Hi there."},
		{"final ended by <|return|> in the text", "<|channel|>final<|message|>Hi<|return|>", "", "Hi"},
		{"a call, the recipient after the channel", "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
			"Need weather.", call + "{\"city\":\"Paris\"}<|call|>"},
		{"a call, the recipient before the channel", "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{}<|call|>",
			"", call + "{}<|call|>"},
		{"the first header with the recipient alone", " to=functions.get_weather<|channel|>commentary json<|message|>{\"a\":1}",
			"", call + "{\"a\":1}<|call|>"},
		{"a preamble, then a call", "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{}",
			"", "Checking." + call + "{}<|call|>"},
		{"two analysis messages", "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c",
			"ab", "c"},
		{"cut in the analysis", "<|channel|>analysis<|message|>still thinking", "still thinking", ""},
		{"cut in a header", "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|chan", "x", ""},
		{"cut in an end marker", "<|channel|>final<|message|>ok<|en", "", "ok<|en"},
		{"not harmony: plain text", "Hello, world.", "", "Hello, world."},
		{"a built-in tool's message stays by its channel", "<|channel|>analysis to=browser.search<|message|>{\"q\":1}<|end|>", "{\"q\":1}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, c := f.Split(tc.answer, f.OpensInPrompt("<|start|>assistant"))
			if r != tc.reasoning || c != tc.content {
				t.Errorf("Split(%q) =\n %q, %q\nwant\n %q, %q", tc.answer, r, c, tc.reasoning, tc.content)
			}
		})
	}
	long := make([]byte, harmonyMaxHeader+10)
	for i := range long {
		long[i] = 'x'
	}
	if r, c := f.Split(string(long)+"<|message|>y", true); r != "" || c != string(long)+"<|message|>y" {
		t.Errorf("a header over %d bytes: %q, %q; want it all content", harmonyMaxHeader, r, c)
	}
}

// TestHarmonyStreamsAsWhole cuts harmony answers anywhere: the pieces
// join to the whole answer's split.
func TestHarmonyStreamsAsWhole(t *testing.T) {
	f, _ := Lookup("openai_gptoss")
	parts := []string{"<|channel|>", "analysis", "final", "commentary", "<|message|>", "<|end|>", "<|start|>", "assistant",
		" to=functions.f", " <|constrain|>json", "<|call|>", "<|", "|>", "a", " ", "{\"x\":1}", "é"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		answer := ""
		for range rng.IntN(14) {
			answer += parts[rng.IntN(len(parts))]
		}
		wantR, wantC := f.Split(answer, true)
		if r, c := streamed(f.New(true), answer, rng); r != wantR || c != wantC {
			t.Fatalf("%q streamed: %q, %q; whole: %q, %q", answer, r, c, wantR, wantC)
		}
	}
}

// TestDetectHarmony: gpt-oss's template (llama.cpp's copy, which
// chattemplate's golden tests render) is harmony's; the engine follows
// the answer to the final channel.
func TestDetectHarmony(t *testing.T) {
	dir := os.Getenv("TANDEM_LLAMA_CPP_SRC")
	if dir == "" {
		t.Skip("TANDEM_LLAMA_CPP_SRC unset: set it to a llama.cpp checkout (make test does)")
	}
	src, err := os.ReadFile(filepath.Join(dir, "models", "templates", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := Detect(string(src))
	if !ok || f.Name != "openai_gptoss" || !f.Harmony || !f.Special {
		t.Fatalf("Detect(gpt-oss) = %+v, %v", f, ok)
	}
	if !f.OpensInPrompt("<|start|>user<|message|>hi<|end|><|start|>assistant") {
		t.Error("a harmony answer starts in the think block (the engine waits for the final channel)")
	}
}
