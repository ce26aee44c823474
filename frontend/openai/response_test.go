package openai_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	oai "github.com/openai/openai-go/v3"

	"github.com/tandem-llm/tandem/frontend/openai"
)

func str(s string) *string { return &s }

func lp(f float64) *openai.Logprob { l := openai.Logprob(f); return &l }

func TestResponseJSON(t *testing.T) {
	usage := openai.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 4}}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "chat completion",
			v: openai.ChatCompletion{
				ID: "chatcmpl-1", Object: openai.ObjectChatCompletion, Created: 1700000000, Model: "dummy",
				Choices: []openai.ChatChoice{{Index: 0, Message: openai.AssistantMessage{Role: "assistant", Content: ptr("hi")}, FinishReason: openai.FinishStop, StopReason: openai.StopString("###")}},
				Usage:   usage,
			},
			want: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"dummy","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"logprobs":null,"finish_reason":"stop","stop_reason":"###","token_ids":null}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":4}},"prompt_logprobs":null,"prompt_token_ids":null,"metrics":null}`,
		},
		{
			name: "chat completion, stop token, no choices",
			v: openai.ChatCompletion{
				ID: "c", Object: openai.ObjectChatCompletion, Model: "m", SystemFingerprint: "fp",
				Usage: openai.Usage{},
			},
			want: `{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"system_fingerprint":"fp","prompt_logprobs":null,"prompt_token_ids":null,"metrics":null}`,
		},
		{
			name: "first chat chunk",
			v: openai.ChatCompletionChunk{
				ID: "c", Object: openai.ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Role: "assistant", Content: str("")}}},
			},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		},
		{
			name: "content chat chunk",
			v: openai.ChatCompletionChunk{
				ID: "c", Object: openai.ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []openai.ChatChunkChoice{{Index: 1, Delta: openai.ChatDelta{Content: str("lo")}}},
			},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":{"content":"lo"},"logprobs":null,"finish_reason":null}]}`,
		},
		{
			name: "final chat chunk with stop token",
			v: openai.ChatCompletionChunk{
				ID: "c", Object: openai.ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{}, FinishReason: str(openai.FinishStop), StopReason: openai.StopToken(259)}},
			},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":259}]}`,
		},
		{
			name: "usage chunk has empty choices",
			v:    openai.ChatCompletionChunk{ID: "c", Object: openai.ObjectChatCompletionChunk, Created: 1, Model: "m", Usage: &usage},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":4}}}`,
		},
		{
			name: "chat logprobs",
			v: openai.ChatChoice{
				Message:      openai.AssistantMessage{Role: "assistant", Content: ptr("é")},
				FinishReason: openai.FinishLength,
				Logprobs: &openai.ChatLogprobs{Content: []openai.ChatTokenLogprob{{
					Token: "é", Logprob: -0.5, Bytes: openai.ByteValues("é"),
					TopLogprobs: []openai.ChatTopLogprob{{Token: "é", Logprob: -0.5, Bytes: []int{195, 169}}, {Token: "e", Logprob: openai.Logprob(math.Inf(-1)), Bytes: []int{101}}},
				}}},
			},
			want: `{"index":0,"message":{"role":"assistant","content":"é"},"logprobs":{"content":[{"token":"é","logprob":-0.5,"bytes":[195,169],"top_logprobs":[{"token":"é","logprob":-0.5,"bytes":[195,169]},{"token":"e","logprob":-9999,"bytes":[101]}]}]},"finish_reason":"length","stop_reason":null,"token_ids":null}`,
		},
		{
			name: "completion with logprobs",
			v: openai.Completion{
				ID: "cmpl-1", Object: openai.ObjectTextCompletion, Created: 2, Model: "m",
				Choices: []openai.CompletionChoice{{
					Text: "ab", FinishReason: openai.FinishLength,
					Logprobs: &openai.CompletionLogprobs{
						Tokens: []string{"a", "b"}, TokenLogprobs: []*openai.Logprob{nil, lp(-1.25)},
						TopLogprobs: []openai.TopLogprobs{nil, {{Token: "b", Logprob: -1.25}}}, TextOffset: []int{0, 1},
					},
				}},
				Usage: openai.Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2},
			},
			want: `{"id":"cmpl-1","object":"text_completion","created":2,"model":"m","choices":[{"index":0,"text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[null,-1.25],"top_logprobs":[null,{"b":-1.25}],"text_offset":[0,1]},"finish_reason":"length","stop_reason":null,"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"metrics":null}`,
		},
		{
			name: "completion chunk",
			v: openai.CompletionChunk{
				ID: "cmpl-1", Object: openai.ObjectTextCompletion, Created: 2, Model: "m",
				Choices: []openai.CompletionChunkChoice{{Text: "x"}},
			},
			want: `{"id":"cmpl-1","object":"text_completion","created":2,"model":"m","choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":null}]}`,
		},
		{
			name: "completion usage chunk",
			v:    openai.CompletionChunk{ID: "cmpl-1", Object: openai.ObjectTextCompletion, Created: 2, Model: "m", Usage: &openai.Usage{PromptTokens: 1, TotalTokens: 1}},
			want: `{"id":"cmpl-1","object":"text_completion","created":2,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`,
		},
		{
			name: "model list",
			v: openai.ModelList{Object: openai.ObjectList, Data: []openai.Model{{
				ID: "dummy", Object: openai.ObjectModel, Created: 3, OwnedBy: openai.OwnedBy, Root: &dummyRoot, MaxModelLen: 2048,
			}}},
			want: `{"object":"list","data":[{"id":"dummy","object":"model","created":3,"owned_by":"tandem","root":"dummy","parent":null,"max_model_len":2048,"permission":[]}]}`,
		},
		{
			name: "empty model list",
			v:    openai.ModelList{Object: openai.ObjectList},
			want: `{"object":"list","data":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

var dummyRoot = "dummy"

func TestLogprobMarshal(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{-0.25, "-0.25"}, {0, "0"}, {math.Inf(-1), "-9999"}, {math.NaN(), "-9999"}, {-1e-20, "-1e-20"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(openai.Logprob(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("Logprob(%v) = %s, want %s", tt.in, b, tt.want)
		}
	}
}

// TestOpenAIGoParses checks that the official Go SDK reads our responses.
func TestOpenAIGoParses(t *testing.T) {
	chat := openai.ChatCompletion{
		ID: "chatcmpl-1", Object: openai.ObjectChatCompletion, Created: 5, Model: "dummy",
		Choices: []openai.ChatChoice{{Message: openai.AssistantMessage{Role: "assistant", Content: ptr("hi")}, FinishReason: openai.FinishStop}},
		Usage:   openai.Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 2}},
	}
	b, _ := json.Marshal(chat)
	var got oai.ChatCompletion
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "hi" || got.Choices[0].FinishReason != "stop" || got.Usage.PromptTokensDetails.CachedTokens != 2 || got.Usage.TotalTokens != 4 {
		t.Errorf("openai-go read %+v", got)
	}

	chunk := openai.ChatCompletionChunk{
		ID: "c", Object: openai.ObjectChatCompletionChunk, Created: 5, Model: "dummy",
		Choices: []openai.ChatChunkChoice{{Delta: openai.ChatDelta{Content: str("yo")}}},
	}
	b, _ = json.Marshal(chunk)
	var gotChunk oai.ChatCompletionChunk
	if err := json.Unmarshal(b, &gotChunk); err != nil {
		t.Fatal(err)
	}
	if gotChunk.Choices[0].Delta.Content != "yo" || gotChunk.Choices[0].FinishReason != "" {
		t.Errorf("openai-go read chunk %+v", gotChunk)
	}

	cmpl := openai.Completion{ID: "x", Object: openai.ObjectTextCompletion, Model: "dummy", Choices: []openai.CompletionChoice{{Text: "t", FinishReason: openai.FinishLength}}}
	b, _ = json.Marshal(cmpl)
	var gotCmpl oai.Completion
	if err := json.Unmarshal(b, &gotCmpl); err != nil {
		t.Fatal(err)
	}
	if gotCmpl.Choices[0].Text != "t" || gotCmpl.Choices[0].FinishReason != "length" {
		t.Errorf("openai-go read completion %+v", gotCmpl)
	}

	var gotErr struct {
		Error oai.Error `json:"error"`
	}
	if err := json.Unmarshal(openai.ContextLengthExceeded(10, 5).JSON(), &gotErr); err != nil {
		t.Fatal(err)
	}
	if gotErr.Error.Code != openai.CodeContextLengthExceeded || gotErr.Error.Type != openai.TypeExceedContextSize {
		t.Errorf("openai-go read error %+v", gotErr.Error)
	}
}

func ptr[T any](v T) *T { return &v }
