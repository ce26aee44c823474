package openai_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/tandem-llm/tandem/frontend/openai"
)

// TestChunkAppendJSON checks the fast encoder against json.Marshal on
// the chunks a stream sends and on random ones.
func TestChunkAppendJSON(t *testing.T) {
	base := openai.ChatCompletionChunk{ID: "chatcmpl-1", Object: openai.ObjectChatCompletionChunk, Created: 1796218807, Model: "dummy", SystemFingerprint: "fp_1"}
	with := func(f func(c *openai.ChatCompletionChunk)) openai.ChatCompletionChunk {
		c := base
		c.Choices = []openai.ChatChunkChoice{{Index: 0, Delta: openai.ChatDelta{Content: ptr("T")}}}
		f(&c)
		return c
	}
	tests := map[string]openai.ChatCompletionChunk{
		"content": with(func(c *openai.ChatCompletionChunk) {}),
		"role first": with(func(c *openai.ChatCompletionChunk) {
			c.Choices[0].Delta = openai.ChatDelta{Role: "assistant", Content: ptr("")}
		}),
		"finish": with(func(c *openai.ChatCompletionChunk) { c.Choices[0].FinishReason = ptr("length") }),
		"finish, empty": with(func(c *openai.ChatCompletionChunk) {
			c.Choices[0].Delta.Content = nil
			c.Choices[0].FinishReason = ptr("stop")
		}),
		"stop reason": with(func(c *openai.ChatCompletionChunk) { c.Choices[0].StopReason = openai.StopString("</s>") }),
		"escapes":     with(func(c *openai.ChatCompletionChunk) { c.Choices[0].Delta.Content = ptr("a\"b\\c\n<&>\u2028é\xff") }),
		"usage":       with(func(c *openai.ChatCompletionChunk) { c.Usage = &openai.Usage{PromptTokens: 3} }),
		"no choices":  base,
		"no fingerprint": with(func(c *openai.ChatCompletionChunk) {
			c.SystemFingerprint = ""
			c.Choices[0].Index = 7
		}),
		"logprobs":   with(func(c *openai.ChatCompletionChunk) { c.Choices[0].Logprobs = &openai.ChatLogprobs{} }),
		"tool calls": with(func(c *openai.ChatCompletionChunk) { c.Choices[0].Delta.ToolCalls = []openai.ToolCallDelta{{ID: "x"}} }),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("ab <>&\"\\\n\t\u2028é😀")
	for i := range 200 {
		r := make([]rune, rng.IntN(6))
		for j := range r {
			r[j] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(r)
		if rng.IntN(4) == 0 {
			s += "\xc3" // a cut multi-byte sequence
		}
		tests["random "+string(rune('A'+i%26))+string(rune('a'+i/26))] = with(func(c *openai.ChatCompletionChunk) {
			c.ID = s
			c.Choices[0].Delta.Content = ptr(s)
		})
	}
	for name, c := range tests {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.AppendJSON([]byte("x"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got[1:]) != string(want) || got[0] != 'x' {
			t.Errorf("%s:\n got %s\nwant x%s", name, got, want)
		}
	}
}

func BenchmarkChunkJSON(b *testing.B) {
	c := openai.ChatCompletionChunk{ID: "chatcmpl-0f63c7c9a513824d275c271f66ba2740", Object: openai.ObjectChatCompletionChunk, Created: 1796218807,
		Model: "dummy", SystemFingerprint: "fp_aa15f2ce88", Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Content: ptr("fox")}}}}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			var err error
			if buf, err = c.AppendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
