package openai_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tandem-llm/tandem/frontend/openai"
)

func decodeChat(t *testing.T, body string) openai.ChatCompletionRequest {
	t.Helper()
	var req openai.ChatCompletionRequest
	if e := openai.Decode([]byte(body), &req); e != nil {
		t.Fatalf("Decode(%s): %v", body, e)
	}
	return req
}

func decodeCompletion(t *testing.T, body string) openai.CompletionRequest {
	t.Helper()
	var req openai.CompletionRequest
	if e := openai.Decode([]byte(body), &req); e != nil {
		t.Fatalf("Decode(%s): %v", body, e)
	}
	return req
}

func TestDecodeChatFull(t *testing.T) {
	body := `{
		"model": "dummy",
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "world"}]},
			{"role": "assistant", "content": null}
		],
		"max_tokens": 10, "max_completion_tokens": 20,
		"temperature": 0, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 0, "n": 2,
		"stop": "END", "stop_token_ids": [7, 8], "include_stop_str_in_output": true,
		"ignore_eos": true, "min_tokens": 2, "skip_special_tokens": false,
		"presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
		"logit_bias": {"42": -100}, "logprobs": true, "top_logprobs": 3, "echo": true,
		"stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true},
		"user": "u", "request_id": "r", "priority": -1, "cache_salt": "salt", "session_id": "s",
		"vllm_xargs": {"session_id": "x", "k": 1}, "add_generation_prompt": false,
		"continue_final_message": true, "chat_template_kwargs": {"enable_thinking": false},
		"response_format": {"type": "text"}, "use_beam_search": false,
		"tools": [], "some_future_field": {"nested": [1, 2, 3]}
	}`
	req := decodeChat(t, body)
	i := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	seed := int64(0)
	want := openai.ChatCompletionRequest{
		Params: openai.Params{
			Model: "dummy", MaxTokens: i(10), Temperature: f(0), TopP: f(0.9), TopK: 40, MinP: 0.05,
			Seed: &seed, N: i(2), Stop: openai.Stop{"END"}, StopTokenIDs: []int32{7, 8}, IncludeStopStr: true,
			IgnoreEOS: true, MinTokens: 2, SkipSpecialTokens: b(false), PresencePenalty: 0.5,
			FrequencyPenalty: -0.5, RepetitionPenalty: f(1.1), LogitBias: map[string]float64{"42": -100},
			Echo: true, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true, ContinuousUsageStats: true},
			ResponseFormat: &openai.ResponseFormat{Type: "text"},
			User:           "u", RequestID: "r", Priority: -1, CacheSalt: "salt", SessionID: "s",
			VLLMXArgs: map[string]any{"session_id": "x", "k": 1.0},
		},
		Messages: []openai.ChatMessage{
			{Role: "system", Content: openai.Content{Text: "Be brief."}},
			{Role: "user", Content: openai.Content{Text: "Hello\nworld", Parts: []openai.ContentPart{{Type: "text", Text: "Hello"}, {Type: "text", Text: "world"}}}},
			{Role: "assistant"},
		},
		MaxCompletionTokens: i(20), Logprobs: true, TopLogprobs: i(3), AddGenerationPrompt: b(false),
		ContinueFinalMessage: true, ChatTemplateKwargs: map[string]any{"enable_thinking": false},
		Tools: json.RawMessage(`[]`),
	}
	if diff := cmp.Diff(want, req, cmpopts.IgnoreFields(openai.ChatMessage{}, "Raw")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if e := req.Validate(); e != nil {
		t.Errorf("Validate: %v", e)
	}
	if n, ok := req.MaxOutputTokens(); n != 20 || !ok {
		t.Errorf("MaxOutputTokens = %d, %v; want 20 (max_completion_tokens wins)", n, ok)
	}
	if req.NumChoices() != 2 || req.SkipSpecial() || !req.IncludeUsage() || !req.ContinuousUsage() || req.AddGenPrompt() {
		t.Errorf("accessors: n=%d skip=%v usage=%v cont=%v gen=%v", req.NumChoices(), req.SkipSpecial(), req.IncludeUsage(), req.ContinuousUsage(), req.AddGenPrompt())
	}
}

func TestChatDefaults(t *testing.T) {
	req := decodeChat(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if e := req.Validate(); e != nil {
		t.Fatalf("Validate: %v", e)
	}
	if _, ok := req.MaxOutputTokens(); ok {
		t.Error("MaxOutputTokens ok for a request without max tokens")
	}
	if req.NumChoices() != 1 || !req.SkipSpecial() || req.IncludeUsage() || !req.AddGenPrompt() {
		t.Errorf("defaults: n=%d skip=%v usage=%v gen=%v", req.NumChoices(), req.SkipSpecial(), req.IncludeUsage(), req.AddGenPrompt())
	}
	if req.Temperature != nil || req.TopP != nil || req.Seed != nil || req.N != nil || req.RepetitionPenalty != nil {
		t.Error("absent pointer fields are set")
	}
	req = decodeChat(t, `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`)
	if n, ok := req.MaxOutputTokens(); n != 5 || !ok {
		t.Errorf("MaxOutputTokens = %d, %v; want 5", n, ok)
	}
	req = decodeChat(t, `{"messages":[{"role":"assistant","content":"hi"}],"continue_final_message":true}`)
	if req.AddGenPrompt() {
		t.Error("AddGenPrompt with continue_final_message and no add_generation_prompt should be false")
	}
}

func TestContentForms(t *testing.T) {
	tests := []struct {
		name string
		json string
		want openai.Content
	}{
		{name: "string", json: `"hi"`, want: openai.Content{Text: "hi"}},
		{name: "empty string", json: `""`, want: openai.Content{}},
		{name: "null", json: `null`, want: openai.Content{}},
		{name: "one part", json: `[{"type":"text","text":"a"}]`, want: openai.Content{Text: "a", Parts: []openai.ContentPart{{Type: "text", Text: "a"}}}},
		{name: "parts joined with newline", json: `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, want: openai.Content{Text: "a\nb", Parts: []openai.ContentPart{{Type: "text", Text: "a"}, {Type: "text", Text: "b"}}}},
		{name: "non-text part kept for validation", json: `[{"type":"image_url","image_url":{"url":"x"}}]`, want: openai.Content{Parts: []openai.ContentPart{{Type: "image_url"}}}},
		{name: "empty array", json: `[]`, want: openai.Content{Parts: []openai.ContentPart{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c openai.Content
			if err := json.Unmarshal([]byte(tt.json), &c); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := json.Marshal(tt.want.Text); string(out) != string(want) {
				t.Errorf("MarshalJSON = %s, want %s", out, want)
			}
		})
	}
}

func TestPromptForms(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		want    openai.Prompt
		wantLen int
	}{
		{name: "string", json: `"hi"`, want: openai.Prompt{Kind: openai.PromptText, Texts: []string{"hi"}}, wantLen: 1},
		{name: "strings", json: `["a","b"]`, want: openai.Prompt{Kind: openai.PromptTexts, Texts: []string{"a", "b"}}, wantLen: 2},
		{name: "tokens", json: `[1, 2, 3]`, want: openai.Prompt{Kind: openai.PromptTokens, Tokens: [][]int32{{1, 2, 3}}}, wantLen: 1},
		{name: "negative token kept for Validate", json: `[-1]`, want: openai.Prompt{Kind: openai.PromptTokens, Tokens: [][]int32{{-1}}}, wantLen: 1},
		{name: "token batches", json: `[[1, 2], [3]]`, want: openai.Prompt{Kind: openai.PromptTokenBatches, Tokens: [][]int32{{1, 2}, {3}}}, wantLen: 2},
		{name: "empty array", json: `[]`, want: openai.Prompt{Kind: openai.PromptTexts, Texts: []string{}}, wantLen: 0},
		{name: "null", json: `null`, want: openai.Prompt{}, wantLen: 0},
		{name: "whitespace before array", json: " \n[ \"x\" ]", want: openai.Prompt{Kind: openai.PromptTexts, Texts: []string{"x"}}, wantLen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p openai.Prompt
			if err := json.Unmarshal([]byte(tt.json), &p); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, p); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if p.Len() != tt.wantLen {
				t.Errorf("Len = %d, want %d", p.Len(), tt.wantLen)
			}
			// Round trip keeps the form.
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var back openai.Prompt
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, back); diff != "" {
				t.Errorf("round trip via %s (-want +got):\n%s", out, diff)
			}
		})
	}
}

func TestStopForms(t *testing.T) {
	tests := []struct {
		json string
		want openai.Stop
	}{
		{`"x"`, openai.Stop{"x"}},
		{`["x","y"]`, openai.Stop{"x", "y"}},
		{`[]`, openai.Stop{}},
		{`null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var s openai.Stop
			if err := json.Unmarshal([]byte(tt.json), &s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompletionDefaults(t *testing.T) {
	req := decodeCompletion(t, `{"model":"m","prompt":"hi","logprobs":0,"suffix":""}`)
	if e := req.Validate(); e != nil {
		t.Fatalf("Validate: %v", e)
	}
	if n, ok := req.MaxOutputTokens(); n != 16 || !ok {
		t.Errorf("MaxOutputTokens = %d, %v; want 16, true", n, ok)
	}
	if req.Logprobs == nil || *req.Logprobs != 0 {
		t.Errorf("logprobs 0 not kept distinct from absent: %v", req.Logprobs)
	}
}

func TestUnknownFieldsIgnored(t *testing.T) {
	req := decodeCompletion(t, `{"prompt":"p","best_of":3,"guided_json":{"a":1},"x":[null,{}],"n":2}`)
	if req.NumChoices() != 2 || req.Prompt.Kind != openai.PromptText {
		t.Errorf("got %+v", req)
	}
}

func TestValidateChat(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name      string
		body      string
		wantParam string // "" = valid
		wantMsg   string
	}{
		{name: "valid", body: `{` + msgs + `}`},
		{name: "valid edges", body: `{` + msgs + `,"temperature":0,"top_p":1,"top_k":-1,"min_p":1,"n":128,"presence_penalty":-2,"frequency_penalty":2,"logprobs":true,"top_logprobs":20,"logit_bias":{"0":100,"5":-100}}`},
		{name: "high temperature allowed", body: `{` + msgs + `,"temperature":5}`},
		{name: "no messages", body: `{"messages":[]}`, wantParam: "messages", wantMsg: "at least one"},
		{name: "messages absent", body: `{}`, wantParam: "messages"},
		{name: "role missing", body: `{"messages":[{"role":"user","content":"a"},{"content":"b"}]}`, wantParam: "messages[1].role"},
		{name: "image part", body: `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}]}`, wantParam: "messages[0].content[1].type", wantMsg: `"image_url" is not supported`},
		{name: "two final assistant messages", body: `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant","content":"c"}]}`, wantParam: "messages", wantMsg: "2 or more assistant messages"},
		{name: "assistant prefill", body: `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`},
		{name: "max_tokens 0", body: `{` + msgs + `,"max_tokens":0}`, wantParam: "max_tokens"},
		{name: "max_completion_tokens 0", body: `{` + msgs + `,"max_completion_tokens":0}`, wantParam: "max_completion_tokens"},
		{name: "temperature negative", body: `{` + msgs + `,"temperature":-0.1}`, wantParam: "temperature"},
		{name: "top_p 0", body: `{` + msgs + `,"top_p":0}`, wantParam: "top_p"},
		{name: "top_p above 1", body: `{` + msgs + `,"top_p":1.01}`, wantParam: "top_p"},
		{name: "top_k -2", body: `{` + msgs + `,"top_k":-2}`, wantParam: "top_k"},
		{name: "min_p negative", body: `{` + msgs + `,"min_p":-0.1}`, wantParam: "min_p"},
		{name: "min_p above 1", body: `{` + msgs + `,"min_p":1.5}`, wantParam: "min_p"},
		{name: "n 0", body: `{` + msgs + `,"n":0}`, wantParam: "n"},
		{name: "n too big", body: `{` + msgs + `,"n":129}`, wantParam: "n"},
		{name: "presence_penalty", body: `{` + msgs + `,"presence_penalty":2.5}`, wantParam: "presence_penalty"},
		{name: "frequency_penalty", body: `{` + msgs + `,"frequency_penalty":-3}`, wantParam: "frequency_penalty"},
		{name: "repetition_penalty 0", body: `{` + msgs + `,"repetition_penalty":0}`, wantParam: "repetition_penalty"},
		{name: "min_tokens negative", body: `{` + msgs + `,"min_tokens":-1}`, wantParam: "min_tokens"},
		{name: "min_tokens above max", body: `{` + msgs + `,"min_tokens":5,"max_completion_tokens":4}`, wantParam: "min_tokens"},
		{name: "empty stop string", body: `{` + msgs + `,"stop":["a",""]}`, wantParam: "stop"},
		{name: "negative stop token", body: `{` + msgs + `,"stop_token_ids":[-1]}`, wantParam: "stop_token_ids"},
		{name: "logit_bias key", body: `{` + msgs + `,"logit_bias":{"abc":1}}`, wantParam: "logit_bias", wantMsg: `"abc"`},
		{name: "logit_bias negative key", body: `{` + msgs + `,"logit_bias":{"-3":1}}`, wantParam: "logit_bias"},
		{name: "logit_bias keys, every bad one named", body: `{` + msgs + `,"logit_bias":{"bad1":50,"7":1,"bad2":20}}`, wantParam: "logit_bias", wantMsg: `got "bad1", "bad2".`},
		{name: "logit_bias value", body: `{` + msgs + `,"logit_bias":{"3":101}}`, wantParam: "logit_bias"},
		{name: "top_logprobs 21 (the server checks the max logprobs)", body: `{` + msgs + `,"logprobs":true,"top_logprobs":21}`},
		{name: "top_logprobs -1 (the vocabulary; the server checks it)", body: `{` + msgs + `,"logprobs":true,"top_logprobs":-1}`},
		{name: "top_logprobs -2", body: `{` + msgs + `,"logprobs":true,"top_logprobs":-2}`, wantParam: "top_logprobs", wantMsg: "`top_logprobs` must be a positive value or -1."},
		{name: "logprob_token_ids", body: `{` + msgs + `,"logprobs":true,"logprob_token_ids":[1,2]}`},
		{name: "logprob_token_ids without logprobs", body: `{` + msgs + `,"logprob_token_ids":[1,2]}`, wantParam: "logprob_token_ids", wantMsg: "`logprobs` must be true"},
		{name: "top_logprobs without logprobs", body: `{` + msgs + `,"top_logprobs":2}`, wantParam: "top_logprobs", wantMsg: "requires 'logprobs'"},
		{name: "stream_options without stream", body: `{` + msgs + `,"stream_options":{"include_usage":true}}`, wantParam: "stream_options"},
		{name: "json_object", body: `{` + msgs + `,"response_format":{"type":"json_object"}}`},
		{name: "json_schema", body: `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}}}`},
		{name: "json_schema without schema", body: `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, wantParam: "response_format", wantMsg: "needs a JSON schema"},
		{name: "schema as a string", body: `{` + msgs + `,"structured_outputs":{"json":"{\"type\":\"string\"}"}}`},
		{name: "schema string not JSON", body: `{` + msgs + `,"guided_json":"{nope"}`, wantParam: "guided_json", wantMsg: "does not hold a JSON schema"},
		{name: "two constraints", body: `{` + msgs + `,"response_format":{"type":"json_object"},"guided_regex":"a+"}`, wantParam: "guided_regex", wantMsg: "both constrain"},
		{name: "structured_outputs sets two", body: `{` + msgs + `,"structured_outputs":{"regex":"a","choice":["b"]}}`, wantParam: "structured_outputs", wantMsg: "exactly one"},
		{name: "guided_choice", body: `{` + msgs + `,"guided_choice":["a","b"],"guided_decoding_backend":"xgrammar"}`},
		{name: "structural_tag", body: `{` + msgs + `,"response_format":{"type":"structural_tag","structures":[{"begin":"<f=a>","schema":{},"end":"</f>"}],"triggers":["<f="]}}`},
		{name: "structural_tag as a string", body: `{` + msgs + `,"structured_outputs":{"structural_tag":"{\"structures\":[],\"triggers\":[]}"}}`},
		{name: "structural_tag not an object", body: `{` + msgs + `,"structured_outputs":{"structural_tag":[1]}}`, wantParam: "structured_outputs.structural_tag", wantMsg: "JSON schema object"},
		{name: "unknown response_format", body: `{` + msgs + `,"response_format":{"type":"yaml"}}`, wantParam: "response_format", wantMsg: "Unknown"},
		{name: "beam search", body: `{` + msgs + `,"use_beam_search":true,"n":4,"length_penalty":0.5}`},
		{name: "beam too wide", body: `{` + msgs + `,"use_beam_search":true,"n":11}`, wantParam: "n", wantMsg: "at most 10"},
		{name: "beam search under a schema", body: `{` + msgs + `,"use_beam_search":true,"n":2,"response_format":{"type":"json_object"}}`},
		{name: "beam search under tool_choice required", body: `{` + msgs + `,"use_beam_search":true,"n":2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`, wantParam: "use_beam_search", wantMsg: "cannot be combined"},
		{name: "prompt_logprobs", body: `{` + msgs + `,"prompt_logprobs":1}`},
		{name: "prompt_logprobs -1", body: `{` + msgs + `,"prompt_logprobs":-1}`},
		{name: "prompt_logprobs -2", body: `{` + msgs + `,"prompt_logprobs":-2}`, wantParam: "prompt_logprobs", wantMsg: "`prompt_logprobs` must be a positive value or -1."},
		{name: "prompt_logprobs 21 (the server checks the max logprobs)", body: `{` + msgs + `,"prompt_logprobs":21}`},
		{name: "prompt_logprobs streamed", body: `{` + msgs + `,"prompt_logprobs":1,"stream":true}`, wantParam: "prompt_logprobs", wantMsg: "`prompt_logprobs` are not available when `stream=True`."},
		{name: "prompt_logprobs 0 streamed", body: `{` + msgs + `,"prompt_logprobs":0,"stream":true}`},
		{name: "allowed_token_ids", body: `{` + msgs + `,"allowed_token_ids":[3]}`},
		{name: "allowed_token_ids empty", body: `{` + msgs + `,"allowed_token_ids":[]}`, wantParam: "allowed_token_ids", wantMsg: "allowed_token_ids is not None and empty!"},
		{name: "allowed_token_ids null", body: `{` + msgs + `,"allowed_token_ids":null}`},
		{name: "chat_template", body: `{` + msgs + `,"chat_template":"{{x}}"}`, wantParam: "chat_template"},
		{name: "tool_choice auto", body: `{` + msgs + `,"tools":[],"tool_choice":"auto"}`},
		{name: "tool_choice required without tools", body: `{` + msgs + `,"tool_choice":"required"}`, wantParam: "tool_choice", wantMsg: "at least one tool"},
		{name: "tool_choice required", body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"required"}`},
		{name: "tool_choice named", body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`},
		{name: "tool_choice names an unknown tool", body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":{"type":"function","function":{"name":"nope"}}}`, wantParam: "tool_choice", wantMsg: "not in 'tools'"},
		{name: "tool_choice with response_format", body: `{` + msgs + `,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"required","response_format":{"type":"json_object"}}`, wantParam: "tool_choice", wantMsg: "both constrain"},
		{name: "bad tools", body: `{` + msgs + `,"tools":[{"type":"function","function":{}}],"tool_choice":"auto"}`, wantParam: "tools[0]"},
		{name: "continue and add_generation_prompt", body: `{` + msgs + `,"continue_final_message":true,"add_generation_prompt":true}`, wantParam: "continue_final_message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := decodeChat(t, tt.body)
			e := req.Validate()
			if tt.wantParam == "" {
				if e != nil {
					t.Fatalf("Validate: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Validate passed, want error on %s", tt.wantParam)
			}
			checkErr(t, e, 400, tt.wantParam, tt.wantMsg)
		})
	}
}

func TestValidateCompletion(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantParam string
		wantMsg   string
	}{
		{name: "valid string", body: `{"prompt":"hi"}`},
		{name: "valid tokens", body: `{"prompt":[1,2],"logprobs":20,"max_tokens":3,"min_tokens":3}`},
		{name: "valid batches", body: `{"prompt":[[1],[2,3]]}`},
		{name: "prompt missing", body: `{}`, wantParam: "prompt", wantMsg: "Either prompt or prompt_embeds must be provided and non-empty."},
		{name: "prompt null", body: `{"prompt":null}`, wantParam: "prompt", wantMsg: "Either prompt or prompt_embeds must be provided and non-empty."},
		{name: "prompt empty string", body: `{"prompt":""}`, wantParam: "prompt", wantMsg: "Either prompt or prompt_embeds must be provided and non-empty."},
		{name: "prompt empty array", body: `{"prompt":[]}`, wantParam: "prompt", wantMsg: "Either prompt or prompt_embeds must be provided and non-empty."},
		{name: "valid empty string in an array", body: `{"prompt":[""]}`},
		{name: "empty token batch", body: `{"prompt":[[1],[]]}`, wantParam: "prompt", wantMsg: "prompt[1]"},
		{name: "negative token", body: `{"prompt":[1,-2]}`, wantParam: "prompt", wantMsg: "greater than or equal to 0"},
		{name: "logprobs 21 (the server checks the max logprobs)", body: `{"prompt":"a","logprobs":21}`},
		{name: "logprobs -1 (the vocabulary; the server checks it)", body: `{"prompt":"a","logprobs":-1}`},
		{name: "logprobs -2", body: `{"prompt":"a","logprobs":-2}`, wantParam: "logprobs"},
		{name: "echo with logprobs", body: `{"prompt":"a","echo":true,"logprobs":2}`},
		{name: "logprob_token_ids", body: `{"prompt":"a","logprobs":2,"logprob_token_ids":[1,2]}`},
		{name: "logprob_token_ids without logprobs", body: `{"prompt":"a","logprob_token_ids":[1]}`, wantParam: "logprob_token_ids", wantMsg: "when using `logprob_token_ids`, `logprobs` must be set."},
		{name: "logprob_token_ids with beam search", body: `{"prompt":"a","logprobs":1,"logprob_token_ids":[1],"use_beam_search":true,"best_of":2}`, wantParam: "logprob_token_ids", wantMsg: "not supported with beam search"},
		{name: "logprob_token_ids too many", body: `{"prompt":"a","logprobs":1,"logprob_token_ids":[` + strings.Repeat("1,", 128) + `1]}`, wantParam: "logprob_token_ids", wantMsg: "Requested logprob_token_ids of length 129, which is greater than max allowed: 128"},
		{name: "suffix", body: `{"prompt":"a","suffix":"z"}`, wantParam: "suffix", wantMsg: "not supported"},
		{name: "min_tokens above default max", body: `{"prompt":"a","min_tokens":17}`, wantParam: "min_tokens"},
		{name: "shared field", body: `{"prompt":"a","temperature":-1}`, wantParam: "temperature"},
		{name: "beam search", body: `{"prompt":"a","use_beam_search":true,"best_of":4,"n":2,"stream":true}`},
		{name: "beam search under a regex", body: `{"prompt":"a","use_beam_search":true,"best_of":4,"n":2,"guided_regex":"a+"}`},
		{name: "best_of", body: `{"prompt":"a","best_of":3,"n":2}`},
		{name: "best_of below n", body: `{"prompt":"a","best_of":1,"n":2}`, wantParam: "best_of", wantMsg: "greater than or equal"},
		{name: "best_of with stream", body: `{"prompt":"a","best_of":3,"stream":true}`, wantParam: "best_of", wantMsg: "stream"},
		{name: "best_of too big", body: `{"prompt":"a","best_of":129}`, wantParam: "best_of"},
		// Bounded cost per request (issue #14).
		{name: "2048 prompts", body: `{"prompt":[` + repeatJSON(`"p"`, 2048) + `]}`},
		{name: "2049 prompts", body: `{"prompt":[` + repeatJSON(`"p"`, 2049) + `]}`, wantParam: "prompt", wantMsg: "at most 2048"},
		{name: "prompts × n", body: `{"prompt":[` + repeatJSON(`[1]`, 1000) + `],"n":128}`, wantParam: "n", wantMsg: "128000 sequences"},
		{name: "prompts × best_of", body: `{"prompt":[` + repeatJSON(`"p"`, 100) + `],"best_of":21}`, wantParam: "n", wantMsg: "2100 sequences"},
		{name: "long request_id", body: `{"prompt":"a","request_id":"` + strings.Repeat("x", 257) + `"}`, wantParam: "request_id", wantMsg: "257 bytes"},
		{name: "65 stops", body: `{"prompt":"a","stop":[` + repeatJSON(`"s"`, 65) + `]}`, wantParam: "stop", wantMsg: "65 strings"},
		{name: "long stop", body: `{"prompt":"a","stop":"` + strings.Repeat("s", 1025) + `"}`, wantParam: "stop", wantMsg: "1025 bytes"},
		{name: "many stop ids", body: `{"prompt":"a","stop_token_ids":[` + repeatJSON(`1`, 1025) + `]}`, wantParam: "stop_token_ids", wantMsg: "1025 ids"},
		{name: "many logit_bias", body: `{"prompt":"a","logit_bias":{` + biasJSON(1025) + `}}`, wantParam: "logit_bias", wantMsg: "1025 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := decodeCompletion(t, tt.body)
			e := req.Validate()
			if tt.wantParam == "" {
				if e != nil {
					t.Fatalf("Validate: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Validate passed, want error on %s", tt.wantParam)
			}
			checkErr(t, e, 400, tt.wantParam, tt.wantMsg)
		})
	}
}

func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"stop":["x"],"n":2}`,
		`{"temperature":"hot"}`, `[]`, `null`, `{"stop":5}`, `{"messages":[{"content":{}}]}`,
		`{"logit_bias":{"1":1e400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req openai.ChatCompletionRequest
		if e := openai.Decode(body, &req); e != nil {
			if e.Status != 400 && e.Status != 500 {
				t.Fatalf("status %d", e.Status)
			}
			_ = e.JSON()
			return
		}
		if e := req.Validate(); e != nil {
			if e.Status != 400 || e.Param == nil {
				t.Fatalf("validation error without param or 400: %+v", e)
			}
			return
		}
		if len(req.Messages) == 0 {
			t.Fatal("validated a request without messages")
		}
		req.MaxOutputTokens()
		req.AddGenPrompt()
	})
}

func FuzzDecodeCompletion(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi"}`, `{"prompt":["a","b"]}`, `{"prompt":[1,2]}`, `{"prompt":[[1],[2]]}`,
		`{"prompt":[1,"a"]}`, `{"prompt":[[1],[]]}`, `{"prompt":{}}`, `{"prompt":[[[1]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req openai.CompletionRequest
		if e := openai.Decode(body, &req); e != nil {
			if e.Status != 400 && e.Status != 500 {
				t.Fatalf("status %d", e.Status)
			}
			_ = e.JSON()
			return
		}
		if e := req.Validate(); e != nil {
			if e.Status != 400 || e.Param == nil {
				t.Fatalf("validation error without param or 400: %+v", e)
			}
			return
		}
		if req.Prompt.Len() == 0 {
			t.Fatal("validated an empty prompt")
		}
		if _, err := json.Marshal(req.Prompt); err != nil {
			t.Fatal(err)
		}
	})
}

// repeatJSON is n copies of v, comma-separated.
func repeatJSON(v string, n int) string {
	return strings.TrimSuffix(strings.Repeat(v+",", n), ",")
}

// biasJSON is n logit_bias entries {"0":1,"1":1,...}.
func biasJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"%d":1`, i)
	}
	return strings.Join(parts, ",")
}
