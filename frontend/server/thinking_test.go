package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// thinkServer serves the fake engine with the qwen3 reasoning parser.
func thinkServer(t *testing.T, f *fakeEngine) string {
	t.Helper()
	r, _ := reasoning.Lookup("qwen3")
	return newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen, c.NumBlocks, c.MaxRequestBody, c.ReasoningParser = 4096, 512, "64K", r
	}, tokenizer.NewByte()).URL
}

// TestChatReasoning: with a reasoning parser the think block comes back
// as reasoning (and reasoning_content), the rest as content, streamed as
// not; include_reasoning false drops it; a constrained answer is split
// too (its constraint applies after the think block).
func TestChatReasoning(t *testing.T) {
	answer := []string{"<thi", "nk>\nFirst, ", "add.\n</", "think>\n\nIt is ", "4."}
	tests := []struct {
		name, extra        string
		reasoning, content string
		hasReasoning       bool
	}{
		{"split", ``, "First, add.", "It is 4.", true},
		{"include_reasoning false", `,"include_reasoning":false`, "", "It is 4.", false},
		{"reasoning_format none: left in the content", `,"reasoning_format":"none"`, "", strings.Join(answer, ""), false},
		{"reasoning_format deepseek", `,"reasoning_format":"deepseek"`, "First, add.", "It is 4.", true},
		{"constrained: the constraint follows the reasoning", `,"structured_outputs":{"regex":".*"}`, "First, add.", "It is 4.", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(wire.FinishStop, eosIf(wire.FinishStop), answer...)
			}}
			url := thinkServer(t, f)
			req := `{"messages":[{"role":"user","content":"2+2?"}],"max_tokens":50` + tc.extra
			code, body := post(t, url, req+`}`)
			var out struct {
				Choices []struct {
					Message struct {
						Content          string
						Reasoning        *string
						ReasoningContent *string `json:"reasoning_content"`
					}
				}
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || len(out.Choices) != 1 {
				t.Fatalf("%d %s", code, body)
			}
			m := out.Choices[0].Message
			if m.Content != tc.content || (m.Reasoning != nil) != tc.hasReasoning || m.Reasoning != nil && (*m.Reasoning != tc.reasoning || *m.ReasoningContent != tc.reasoning) {
				t.Errorf("not streamed: %s", body)
			}
			code, body = post(t, url, req+`,"stream":true}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var r, c string
			type chunk struct {
				Choices []struct {
					Delta struct {
						Content          string
						Reasoning        string
						ReasoningContent string `json:"reasoning_content"`
					}
				}
			}
			chunks, datas := sseLines[chunk](t, body)
			for i, ch := range chunks {
				data := datas[i]
				for _, choice := range ch.Choices {
					if choice.Delta.Reasoning != choice.Delta.ReasoningContent {
						t.Fatalf("reasoning and reasoning_content differ: %s", data)
					}
					r += choice.Delta.Reasoning
					c += choice.Delta.Content
				}
			}
			if r != tc.reasoning || c != tc.content {
				t.Errorf("streamed: reasoning %q, content %q\n%s", r, c, body)
			}
		})
	}
}

// TestConstrainedThinking: a constrained request, or one with a
// thinking budget, tells the engine the think tags to follow (the start
// tag too when the answer may open the block), none when the prompt
// closed the block or nothing needs them; the budget is the request's
// (vLLM's thinking_token_budget, llama-server's reasoning_budget_tokens,
// Anthropic's budget_tokens), else the server's --reasoning-budget with
// its message.
func TestConstrainedThinking(t *testing.T) {
	user := `{"role":"user","content":"?"}`
	opened := `,{"role":"assistant","content":"<think>\n"}],"continue_final_message":true,"add_generation_prompt":false`
	closed := `,{"role":"assistant","content":"<think>\n\n</think>\n\n"}],"continue_final_message":true,"add_generation_prompt":false`
	tests := []struct {
		name, path, body string
		serverBudget     *int
		start, end       string
		budget           *int
	}{
		{name: "json_object", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"response_format":{"type":"json_object"}}`, start: "<think>", end: "</think>"},
		{name: "the prompt opened the block", path: "/v1/chat/completions", body: `{"messages":[` + user + opened + `,"response_format":{"type":"json_object"}}`, end: "</think>"},
		{name: "the prompt closed the block", path: "/v1/chat/completions", body: `{"messages":[` + user + closed + `,"response_format":{"type":"json_object"},"thinking_token_budget":5}`},
		{name: "unconstrained", path: "/v1/chat/completions", body: `{"messages":[` + user + `]}`},
		{name: "tool_choice required", path: "/v1/chat/completions",
			body: `{"messages":[` + user + `],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`, start: "<think>", end: "</think>"},
		{name: "responses json_schema", path: "/v1/responses",
			body: `{"input":"?","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}}`, start: "<think>", end: "</think>"},
		{name: "messages forced tool", path: "/v1/messages",
			body: `{"model":"dummy","max_tokens":20,"messages":[` + user + `],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`, start: "<think>", end: "</think>"},
		{name: "ollama format", path: "/api/chat", body: `{"model":"dummy","stream":false,"messages":[` + user + `],"format":"json"}`, start: "<think>", end: "</think>"},
		{name: "thinking_token_budget", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"thinking_token_budget":5}`, start: "<think>", end: "</think>", budget: ptr(5)},
		{name: "thinking_token_budget 0, the prompt opened the block", path: "/v1/chat/completions", body: `{"messages":[` + user + opened + `,"thinking_token_budget":0}`, end: "</think>", budget: ptr(0)},
		{name: "reasoning_budget_tokens", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"reasoning_budget_tokens":7}`, start: "<think>", end: "</think>", budget: ptr(7)},
		{name: "reasoning_budget_tokens -1: the server's", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"reasoning_budget_tokens":-1}`},
		{name: "reasoning_budget_tokens -1 with a server budget", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"reasoning_budget_tokens":-1}`,
			serverBudget: ptr(9), start: "<think>", end: "</think>", budget: ptr(9)},
		{name: "anthropic budget_tokens", path: "/v1/messages",
			body: `{"model":"dummy","max_tokens":2000,"messages":[` + user + `],"thinking":{"type":"enabled","budget_tokens":1024}}`, start: "<think>", end: "</think>", budget: ptr(1024)},
		{name: "llama-server's thinking_budget_tokens alias", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"thinking_budget_tokens":6}`, start: "<think>", end: "</think>", budget: ptr(6)},
		{name: "thinking_token_budget -1 is unset", path: "/v1/chat/completions", body: `{"messages":[` + user + `],"thinking_token_budget":-1}`},
		{name: "completions with a budget", path: "/v1/completions", body: `{"prompt":"<|im_start|>assistant\n","thinking_token_budget":4}`, start: "<think>", end: "</think>", budget: ptr(4)},
		{name: "completions, the prompt opened the block", path: "/v1/completions", body: `{"prompt":[60,116,104,105,110,107,62,10],"thinking_token_budget":4}`, end: "</think>", budget: ptr(4)},
		{name: "completions without a budget", path: "/v1/completions", body: `{"prompt":"x","response_format":{"type":"json_object"}}`, serverBudget: ptr(3)},
		{name: "responses with a budget", path: "/v1/responses", body: `{"input":"?","thinking_token_budget":2}`, start: "<think>", end: "</think>", budget: ptr(2)},
		{name: "the server's budget on ollama", path: "/api/chat", body: `{"model":"dummy","stream":false,"messages":[` + user + `]}`,
			serverBudget: ptr(3), start: "<think>", end: "</think>", budget: ptr(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []wire.SamplingParams
			var mu sync.Mutex
			f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
				mu.Lock()
				got = append(got, r.SamplingParams)
				mu.Unlock()
				return outputs(wire.FinishStop, eosIf(wire.FinishStop), "{}")
			}}
			r, _ := reasoning.Lookup("qwen3")
			url := newTestServerWith(t, f, func(c *Config) {
				c.MaxModelLen, c.NumBlocks, c.MaxRequestBody, c.ReasoningParser = 4096, 512, "64K", r
				c.ReasoningBudget, c.ReasoningBudgetMsg = tc.serverBudget, "Enough."
			}, tokenizer.NewByte()).URL
			code, body := postTo(t, url, tc.path, tc.body)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("%d engine requests", len(got))
			}
			p, message := got[0], ""
			if tc.budget != nil {
				message = "Enough." // the server's --reasoning-budget-message
			}
			if p.ReasoningStart != tc.start || p.ReasoningEnd != tc.end || !reflect.DeepEqual(p.ThinkingTokenBudget, tc.budget) || p.ReasoningBudgetMessage != message {
				t.Fatalf("think tags %q %q, budget %v %q; want %q %q, %v %q", p.ReasoningStart, p.ReasoningEnd, p.ThinkingTokenBudget, p.ReasoningBudgetMessage,
					tc.start, tc.end, tc.budget, message)
			}
		})
	}
	url := thinkServer(t, &fakeEngine{})
	for _, bad := range []string{`"thinking_token_budget":-2`, `"thinking_token_budget":0.6`, `"reasoning_budget_tokens":-2`} {
		if code, body := post(t, url, `{"messages":[`+user+`],`+bad+`}`); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, code, body)
		}
	}
}

// TestForcedToolCallAfterThinking: tool_choice required on a thinking
// model: the calls after the think block are parsed, the block is the
// reasoning, streamed and not.
func TestForcedToolCallAfterThinking(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<think>\nThe user wants f.", "\n</think>\n\n", `[{"name": "f", `, `"parameters": {"x": 1}}]`)
	}}
	url := thinkServer(t, f)
	req := `{"messages":[{"role":"user","content":"?"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"`
	code, body := post(t, url, req+`}`)
	if code != http.StatusOK || !strings.Contains(body, `"reasoning":"The user wants f."`) || !strings.Contains(body, `"arguments":"{\"x\":1}"`) ||
		!strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Fatalf("%d %s", code, body)
	}
	code, body = post(t, url, req+`,"stream":true}`)
	if code != http.StatusOK || !strings.Contains(body, `"reasoning":"The user wants f."`) || !strings.Contains(body, `"name":"f"`) ||
		!strings.Contains(body, `"finish_reason":"tool_calls"`) || strings.Contains(body, `think>`) {
		t.Fatalf("streamed: %d %s", code, body)
	}
}

// TestReasoningFormatLegacy: llama-server's deepseek-legacy gives the
// reasoning apart and keeps it in the content; streamed, it stays in the
// content only. --reasoning-format sets the default, and an unknown
// format is a 400.
func TestReasoningFormatLegacy(t *testing.T) {
	answer := []string{"<think>a", "</think>b"}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), answer...)
	}}
	r, _ := reasoning.Lookup("qwen3")
	url := newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen, c.NumBlocks, c.ReasoningParser, c.ReasoningFormat = 4096, 512, r, "deepseek-legacy"
	}, tokenizer.NewByte()).URL
	req := `{"messages":[{"role":"user","content":"?"}]`
	if code, body := post(t, url, req+`}`); code != http.StatusOK || !strings.Contains(body, `"content":"\u003cthink\u003ea\u003c/think\u003eb","reasoning":"a","reasoning_content":"a"`) {
		t.Errorf("%d %s", code, body)
	}
	code, body := post(t, url, req+`,"stream":true}`)
	if code != http.StatusOK || strings.Contains(body, `"reasoning`) || !strings.Contains(body, `"content":"\u003cthink\u003ea"`) {
		t.Errorf("streamed: %d %s", code, body)
	}
	if code, body := post(t, url, req+`,"reasoning_format":"auto"}`); code != http.StatusOK || !strings.Contains(body, `"content":"b","reasoning":"a"`) {
		t.Errorf("the request's auto over the server's legacy: %d %s", code, body)
	}
	if code, body := post(t, url, req+`,"reasoning_format":"deepseek2"}`); code != http.StatusBadRequest || !strings.Contains(body, "reasoning_format") {
		t.Errorf("unknown format: %d %s", code, body)
	}
}

// TestChatReasoningOpenedByPrompt: a prompt that ends inside the think
// block (an assistant prefill of "<think>\n", as DeepSeek-R1's template
// writes it) makes the answer reasoning until the end tag.
func TestChatReasoningOpenedByPrompt(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "Hmm.", "</think>", "Yes.")
	}}
	url := thinkServer(t, f)
	code, body := post(t, url, `{"messages":[{"role":"user","content":"?"},{"role":"assistant","content":"<think>\n"}],"continue_final_message":true,"add_generation_prompt":false,"max_tokens":50}`)
	if code != http.StatusOK || !strings.Contains(body, `"content":"Yes.","reasoning":"Hmm.","reasoning_content":"Hmm."`) {
		t.Errorf("%d %s", code, body)
	}
}

// TestOllamaThinking: Ollama's answers carry the reasoning as thinking.
func TestOllamaThinking(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<think>a ", "b</think>", "\nc")
	}}
	url := thinkServer(t, f)
	code, body := postTo(t, url, "/api/chat", `{"model":"dummy","messages":[{"role":"user","content":"?"}],"stream":false}`)
	if code != http.StatusOK || !strings.Contains(body, `"message":{"role":"assistant","content":"c","thinking":"a b"}`) {
		t.Errorf("%d %s", code, body)
	}
	_, body = postTo(t, url, "/api/chat", `{"model":"dummy","messages":[{"role":"user","content":"?"}]}`)
	var thinking, content string
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var l struct {
			Message struct{ Content, Thinking string }
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		thinking += l.Message.Thinking
		content += l.Message.Content
	}
	if thinking != "a b" || content != "c" {
		t.Errorf("streamed: %q %q\n%s", thinking, content, body)
	}
}

// TestResponsesReasoning: the Responses API returns the reasoning as a
// reasoning item (content reasoning_text) before the message, streamed
// as response.reasoning_text.delta events, and keeps it in the stored
// conversation as the assistant turn's reasoning.
func TestResponsesReasoning(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<think>", "Add them.", "</think>\n", "It is 4.")
	}}
	url := thinkServer(t, f)
	code, body := postTo(t, url, "/v1/responses", `{"input":"2+2?"}`)
	var resp struct {
		ID     string
		Output []struct {
			Type    string
			Content []struct{ Type, Text string }
			Summary []any
		}
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil || len(resp.Output) != 2 {
		t.Fatalf("%d %s", code, body)
	}
	if o := resp.Output[0]; o.Type != "reasoning" || len(o.Content) != 1 || o.Content[0].Type != "reasoning_text" || o.Content[0].Text != "Add them." || o.Summary == nil {
		t.Errorf("reasoning item: %s", body)
	}
	if o := resp.Output[1]; o.Type != "message" || o.Content[0].Text != "It is 4." {
		t.Errorf("message item: %s", body)
	}

	_, body = postTo(t, url, "/v1/responses", `{"input":"2+2?","stream":true}`)
	var types []string
	var deltas string
	events, _ := sseLines[struct{ Type, Delta string }](t, body)
	for _, ev := range events {
		if strings.HasPrefix(ev.Type, "response.reasoning_text") || ev.Type == "response.output_item.added" || ev.Type == "response.output_item.done" {
			types = append(types, ev.Type)
		}
		if ev.Type == "response.reasoning_text.delta" {
			deltas += ev.Delta
		}
	}
	want := "response.output_item.added response.reasoning_text.delta response.reasoning_text.done response.output_item.done response.output_item.added response.output_item.done"
	if strings.Join(slices.Compact(types), " ") != want || deltas != "Add them." {
		t.Errorf("events %v, deltas %q\n%s", types, deltas, body)
	}

	// previous_response_id continues from the stored turn.
	code, body = postTo(t, url, "/v1/responses", `{"input":"And 3+3?","previous_response_id":"`+resp.ID+`"}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	reqs := f.requests()
	prompt := tokenizer.NewByte().Decode(reqs[len(reqs)-1].PromptTokenIDs, false)
	if !strings.Contains(prompt, "It is 4.") {
		t.Errorf("the next turn's prompt lacks the answer: %q", prompt)
	}
}

// TestAnthropicThinking: the Messages API returns the reasoning as a
// thinking block before the text, streamed as thinking_delta events.
func TestAnthropicThinking(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<think>\nAdd", " them.</think>", "\n\nIt is 4.")
	}}
	url := thinkServer(t, f)
	req := `{"model":"claude","max_tokens":50,"messages":[{"role":"user","content":"2+2?"}]`
	code, body := postTo(t, url, "/v1/messages", req+`}`)
	if code != http.StatusOK || !strings.Contains(body, `"content":[{"type":"thinking","thinking":"Add them.","signature":""},{"type":"text","text":"It is 4."}]`) {
		t.Errorf("%d %s", code, body)
	}
	_, body = postTo(t, url, "/v1/messages", req+`,"stream":true}`)
	var thinking, text string
	var starts []string
	events, _ := sseLines[struct {
		Type         string
		Index        int
		ContentBlock struct{ Type string } `json:"content_block"`
		Delta        struct{ Type, Text, Thinking string }
	}](t, body)
	for _, ev := range events {
		switch {
		case ev.Type == "content_block_start":
			starts = append(starts, ev.ContentBlock.Type)
		case ev.Delta.Type == "thinking_delta" && ev.Index == 0:
			thinking += ev.Delta.Thinking
		case ev.Delta.Type == "text_delta" && ev.Index == 1:
			text += ev.Delta.Text
		}
	}
	if strings.Join(starts, " ") != "thinking text" || thinking != "Add them." || text != "It is 4." {
		t.Errorf("blocks %v, thinking %q, text %q\n%s", starts, thinking, text, body)
	}
}

// TestBatchChatReasoning: vLLM's batch chat splits each conversation's
// answer as a chat completion does.
func TestBatchChatReasoning(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<think>a</think>", "b")
	}}
	url := thinkServer(t, f)
	body := `{"messages":[[{"role":"user","content":"?"}],[{"role":"user","content":"!"}]]`
	code, out := postTo(t, url, "/v1/chat/completions/batch", body+`}`)
	if code != http.StatusOK || strings.Count(out, `"content":"b","reasoning":"a","reasoning_content":"a"`) != 2 {
		t.Fatalf("%d %s", code, out)
	}
	code, out = postTo(t, url, "/v1/chat/completions/batch", body+`,"include_reasoning":false}`)
	if code != http.StatusOK || strings.Count(out, `"content":"b"`) != 2 || strings.Contains(out, `"reasoning"`) {
		t.Fatalf("include_reasoning false: %d %s", code, out)
	}
}

// TestReasoningBudgetMessage: llama-server's per-request
// reasoning_budget_message wins over --reasoning-budget-message.
func TestReasoningBudgetMessage(t *testing.T) {
	var got wire.SamplingParams
	var mu sync.Mutex
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		mu.Lock()
		got = r.SamplingParams
		mu.Unlock()
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "x")
	}}
	r, _ := reasoning.Lookup("qwen3")
	url := newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen, c.NumBlocks, c.ReasoningParser, c.ReasoningBudgetMsg = 4096, 512, r, "Enough."
	}, tokenizer.NewByte()).URL
	code, body := post(t, url, `{"messages":[{"role":"user","content":"?"}],"reasoning_budget_tokens":2,"reasoning_budget_message":"Time's up."}`)
	mu.Lock()
	defer mu.Unlock()
	if code != http.StatusOK || got.ReasoningBudgetMessage != "Time's up." || got.ThinkingTokenBudget == nil || *got.ThinkingTokenBudget != 2 {
		t.Fatalf("%d %s: budget %v, message %q", code, body, got.ThinkingTokenBudget, got.ReasoningBudgetMessage)
	}
}

// TestSpecialThinkTags: think tags that are special tokens (Mistral's
// [THINK]; here two of the byte tokenizer's reserved ones) stay in the
// detokenized answer, so the split sees them, unless the request sets
// skip_special_tokens itself.
func TestSpecialThinkTags(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := []wire.EngineCoreOutput{{NewTokenIDs: []int32{260, 'a'}}, {NewTokenIDs: []int32{261, 'b'}}} // <|reserved_0|>a<|reserved_1|>b
		outs[1].FinishReason = wire.FinishLength
		return outs
	}}
	special := &reasoning.Format{Name: "special", Start: "<|reserved_0|>", End: "<|reserved_1|>", Special: true}
	url := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen, c.NumBlocks, c.ReasoningParser = 4096, 512, special }, tokenizer.NewByte()).URL
	req := `{"messages":[{"role":"user","content":"?"}]`
	if code, body := post(t, url, req+`}`); code != http.StatusOK || !strings.Contains(body, `"content":"b","reasoning":"a"`) {
		t.Errorf("%d %s", code, body)
	}
	if code, body := post(t, url, req+`,"stream":true}`); code != http.StatusOK || !strings.Contains(body, `"reasoning":"a"`) || !strings.Contains(body, `"content":"b"`) {
		t.Errorf("streamed: %d %s", code, body)
	}
	if code, body := post(t, url, req+`,"skip_special_tokens":true}`); code != http.StatusOK || !strings.Contains(body, `"content":"ab"`) {
		t.Errorf("skip_special_tokens true: %d %s", code, body)
	}
	if code, body := postTo(t, url, "/api/chat", `{"model":"dummy","stream":false,"messages":[{"role":"user","content":"?"}]}`); code != http.StatusOK ||
		!strings.Contains(body, `"content":"b","thinking":"a"`) {
		t.Errorf("ollama: %d %s", code, body)
	}
}
