package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
	"github.com/tandem-llm/tandem/wire"
)

// TestHarmonyChat: a gpt-oss answer in harmony messages, with the
// openai_gptoss reasoning parser and the openai tool parser (what the
// template's detection picks), comes back as OpenAI's fields: the
// analysis channel as reasoning, a commentary preamble as content, a
// message to a function as a tool call, streamed as not; a final answer
// as content.
func TestHarmonyChat(t *testing.T) {
	r, _ := reasoning.Lookup("openai_gptoss")
	p, _ := toolparse.Lookup("openai")
	call := []string{"<|channel|>analysis<|message|>", "Need the ", "weather.", "<|end|>", "<|start|>assistant", "<|channel|>commentary<|message|>Checking.<|end|>",
		"<|start|>assistant", "<|channel|>commentary to=functions.get_weather <|constrain|>json", "<|message|>", `{"city":`, ` "Zürich"}`}
	final := []string{"<|channel|>analysis<|message|>Easy.<|end|>", "<|start|>assistant<|channel|>final<|message|>", "It is ", "4."}
	tests := []struct {
		name                     string
		answer                   []string
		reasoning, content, args string
		finish                   string
	}{
		{"a call", call, "Need the weather.", "Checking.", `{"city":"Zürich"}`, "tool_calls"},
		{"a final answer", final, "Easy.", "It is 4.", "", "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(wire.FinishStop, eosIf(wire.FinishStop), tc.answer...)
			}}
			url := newTestServerWith(t, f, func(c *Config) {
				c.MaxModelLen, c.NumBlocks, c.MaxRequestBody, c.ReasoningParser, c.ToolParser = 4096, 512, "64K", r, p
			}, tokenizer.NewByte()).URL
			req := `{"messages":[{"role":"user","content":"Weather in Zürich?"}],` + toolsBody + `,"max_tokens":100`
			code, body := post(t, url, req+`}`)
			var out struct {
				Choices []struct {
					Message struct {
						Content          *string
						ReasoningContent *string `json:"reasoning_content"`
						ToolCalls        []struct {
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || len(out.Choices) != 1 {
				t.Fatalf("%d %s", code, body)
			}
			m := out.Choices[0].Message
			var args string
			if len(m.ToolCalls) == 1 && m.ToolCalls[0].Function.Name == "get_weather" {
				args = m.ToolCalls[0].Function.Arguments
			}
			if m.Content == nil || *m.Content != tc.content || m.ReasoningContent == nil || *m.ReasoningContent != tc.reasoning ||
				args != tc.args || len(m.ToolCalls) != map[bool]int{true: 1}[tc.args != ""] || out.Choices[0].FinishReason != tc.finish {
				t.Errorf("not streamed: %s", body)
			}
			code, body = post(t, url, req+`,"stream":true}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var rs, cs, as string
			for _, line := range strings.Split(body, "\n") {
				data, ok := strings.CutPrefix(line, "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				var ch struct {
					Choices []struct {
						Delta struct {
							Content          string
							ReasoningContent string `json:"reasoning_content"`
							ToolCalls        []struct {
								Function struct{ Arguments string }
							} `json:"tool_calls"`
						}
					}
				}
				if err := json.Unmarshal([]byte(data), &ch); err != nil {
					t.Fatalf("%v: %s", err, data)
				}
				for _, c := range ch.Choices {
					rs, cs = rs+c.Delta.ReasoningContent, cs+c.Delta.Content
					for _, tcall := range c.Delta.ToolCalls {
						as += tcall.Function.Arguments
					}
				}
			}
			if rs != tc.reasoning || cs != tc.content || as != tc.args {
				t.Errorf("streamed: reasoning %q content %q arguments %q\n%s", rs, cs, as, body)
			}
		})
	}
}

// TestHarmonyConstrained: a constrained gpt-oss answer thinks first: the
// engine follows it from its first token (it starts in a header, inside
// the think block) to the final channel's header, where the constraint
// begins.
func TestHarmonyConstrained(t *testing.T) {
	r, _ := reasoning.Lookup("openai_gptoss")
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, eosIf(wire.FinishStop), "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final<|message|>", `{"a":1}`)
	}}
	url := newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen, c.NumBlocks, c.MaxRequestBody, c.ReasoningParser = 4096, 512, "64K", r
	}, tokenizer.NewByte()).URL
	code, body := post(t, url, `{"messages":[{"role":"user","content":"?"}],"response_format":{"type":"json_object"},"max_tokens":50}`)
	if code != http.StatusOK || !strings.Contains(body, `"content":"{\"a\":1}"`) || !strings.Contains(body, `"reasoning_content":"Hm."`) {
		t.Fatalf("%d %s", code, body)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("%d engine requests", len(f.reqs))
	}
	if p := f.reqs[0].SamplingParams; p.ReasoningStart != "" || p.ReasoningEnd != "<|end|><|start|>assistant<|channel|>final<|message|>" {
		t.Errorf("think tags %q %q: want none and the final channel's header", p.ReasoningStart, p.ReasoningEnd)
	}
}

// TestHarmonyThinking: with gpt-oss's parser, the reasoning a client
// sends back on an assistant message reaches the template as thinking
// (which gpt-oss's writes into the analysis channel), but not beside
// both content and tool calls, which that template refuses; another
// parser passes the messages as sent.
func TestHarmonyThinking(t *testing.T) {
	src := `{% for m in messages %}[{{ m.role }}|{{ m.thinking }}|{{ m.content }}]{% endfor %}`
	tmpl, err := chattemplate.New(src, chattemplate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const call = `"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{}"}}]`
	tests := []struct {
		name, parser, messages, want string
	}{
		{"reasoning_content", "openai_gptoss", `{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"}`, "[user||q][assistant|r|a]"},
		{"vLLM's reasoning, with a call", "openai_gptoss", `{"role":"assistant","content":null,"reasoning":"r",` + call + `}`, "[assistant|r|]"},
		{"content and a call: none", "openai_gptoss", `{"role":"assistant","content":"pre","reasoning_content":"r",` + call + `}`, "[assistant||pre]"},
		{"thinking as sent", "openai_gptoss", `{"role":"assistant","content":"a","thinking":"t","reasoning_content":"r"}`, "[assistant|t|a]"},
		{"another parser", "qwen3", `{"role":"assistant","content":"a","reasoning_content":"r"}`, "[assistant||a]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := reasoning.Lookup(tc.parser)
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
			ts := newTestServerWith(t, f, func(c *Config) { c.MaxModelLen, c.NumBlocks, c.ReasoningParser = 512, 64, r }, templateTok{tokenizer.NewByte(), tmpl})
			body := `{"messages":[` + tc.messages + `],"max_tokens":1,"add_generation_prompt":false}`
			if code, resp := do(t, ts, http.MethodPost, "/v1/chat/completions", body, nil); code != http.StatusOK {
				t.Fatalf("%d %s", code, resp)
			}
			if got := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false); got != tc.want {
				t.Errorf("prompt %q, want %q", got, tc.want)
			}
		})
	}
}
