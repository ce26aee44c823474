package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tandem-llm/tandem/enginecore"
)

// TestDefaultModelForcedToolStream serves the real default model and
// streams forced tool calls (a named function, and "required") with the
// OpenAI Go SDK, greedy: each call comes as it is generated, its first
// delta with an id, type and name, then its arguments in several
// fragments; the SDK's accumulator joins them to the valid JSON the same
// request returns not streamed, with the same finish reason.
func TestDefaultModelForcedToolStream(t *testing.T) {
	path := defaultModel(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi",
		"--threads", strconv.Itoa(runtime.NumCPU()))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := ctxTimeout(t, 3*time.Minute)

	weather := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: shared.FunctionParameters{
		"type": "object", "required": []string{"city", "unit"},
		"properties": map[string]any{"city": map[string]any{"type": "string", "maxLength": 20}, "unit": map[string]any{"enum": []string{"celsius", "fahrenheit"}}},
	}})
	clock := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time", Parameters: shared.FunctionParameters{
		"type": "object", "required": []string{"zone"}, "properties": map[string]any{"zone": map[string]any{"enum": []string{"UTC", "CET"}}},
	}})
	tests := []struct {
		name   string
		choice openai.ChatCompletionToolChoiceOptionUnionParam
		finish string
	}{
		{"named", openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}), "stop"},
		{"required", openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}, "tool_calls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := openai.ChatCompletionNewParams{Model: enginecore.ServedName("", path), MaxTokens: openai.Int(200), Temperature: openai.Float(0),
				Messages:   []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris, in celsius?")},
				Tools:      []openai.ChatCompletionToolUnionParam{weather, clock},
				ToolChoice: tc.choice}
			whole, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Choices[0].FinishReason != tc.finish || len(whole.Choices[0].Message.ToolCalls) == 0 {
				t.Fatalf("not streamed: finish %q, message %+v", whole.Choices[0].FinishReason, whole.Choices[0].Message)
			}

			st := client.Chat.Completions.NewStreaming(ctx, params)
			var acc openai.ChatCompletionAccumulator
			fragments := map[int64]int{} // argument fragments per call
			for st.Next() {
				ch := st.Current()
				acc.AddChunk(ch)
				for _, c := range ch.Choices {
					if c.Delta.Content != "" {
						t.Errorf("content %q", c.Delta.Content)
					}
					for _, d := range c.Delta.ToolCalls {
						first := d.ID != ""
						if _, seen := fragments[d.Index]; first == seen || first != (d.Function.Name != "") || first != (d.Type == "function") {
							t.Errorf("call %d: delta %s (id, type and name on its first delta only)", d.Index, d.RawJSON())
						}
						if first {
							fragments[d.Index] = 0
						} else {
							fragments[d.Index]++
						}
					}
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			got, want := acc.Choices[0], whole.Choices[0]
			if got.FinishReason != want.FinishReason || len(got.Message.ToolCalls) != len(want.Message.ToolCalls) {
				t.Fatalf("streamed: finish %q, calls %+v; not streamed %q, %+v", got.FinishReason, got.Message.ToolCalls, want.FinishReason, want.Message.ToolCalls)
			}
			for i, c := range got.Message.ToolCalls {
				w := want.Message.ToolCalls[i].Function
				if c.Function.Name != w.Name || c.Function.Arguments != w.Arguments || !json.Valid([]byte(c.Function.Arguments)) {
					t.Errorf("call %d: streamed %s(%s), not streamed %s(%s)", i, c.Function.Name, c.Function.Arguments, w.Name, w.Arguments)
				}
				if fragments[int64(i)] < 2 {
					t.Errorf("call %d: arguments in %d fragments, not streamed as generated", i, fragments[int64(i)])
				}
			}
		})
	}
}
