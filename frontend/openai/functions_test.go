package openai

import (
	"encoding/json"
	"testing"
)

func TestAdoptFunctions(t *testing.T) {
	body := `{"messages":[{"role":"function","name":"f","content":"early"},
		{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"a\":1}"}},
		{"role":"function","name":"f","content":[{"type":"text","text":"one"}]},
		{"role":"assistant","function_call":{"name":"g","arguments":{"b":2}}},
		{"role":"function","name":"g","content":"two"},
		{"role":"user","content":"go on"}],
		"functions":[{"name":"f","parameters":{"type":"object"}},{"name":"g"}],"function_call":{"name":"g"}}`
	var r ChatCompletionRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent: a request validated twice is adopted once
		if e := r.Validate(); e != nil {
			t.Fatal(e)
		}
	}
	if !r.LegacyFunctions || r.Functions != nil || r.FunctionCall != nil {
		t.Fatalf("not adopted: %+v", r)
	}
	if got, want := string(r.Tools), `[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}},{"type":"function","function":{"name":"g"}}]`; got != want {
		t.Errorf("tools %s, want %s", got, want)
	}
	plan, e := r.ToolPlanOf()
	if e != nil || plan.Mode != ToolsNamed || plan.Name != "g" || !plan.OneCall {
		t.Errorf("plan %+v %v: want g named, one call", plan, e)
	}
	want := []string{
		`{"role":"tool","content":"early","name":"f","tool_call_id":"call_fn_0"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_fn_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`,
		`{"role":"tool","content":"one","name":"f","tool_call_id":"call_fn_1"}`,
		`{"role":"assistant","tool_calls":[{"id":"call_fn_3","type":"function","function":{"name":"g","arguments":"{\"b\":2}"}}]}`,
		`{"role":"tool","content":"two","name":"g","tool_call_id":"call_fn_3"}`,
		`{"role":"user","content":"go on"}`,
	}
	for i, m := range r.Messages {
		if got := string(m.Raw); got != want[i] {
			t.Errorf("message %d: %s, want %s", i, got, want[i])
		}
	}
	if r.Messages[0].Role != "tool" {
		t.Errorf("role %q", r.Messages[0].Role)
	}
}

func TestLegacyMessageAndDelta(t *testing.T) {
	ch := ChatChoice{FinishReason: FinishToolCalls, Message: AssistantMessage{Role: "assistant",
		ToolCalls: []ToolCall{{ID: "x", Type: "function", Function: FunctionCall{Name: "f", Arguments: "{}"}}}}}
	LegacyMessage(&ch)
	b, _ := json.Marshal(ch.Message)
	if string(b) != `{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}` || ch.FinishReason != FinishFunctionCall {
		t.Errorf("%s %s", b, ch.FinishReason)
	}
	f := FinishToolCalls
	d := ChatChunkChoice{Delta: ChatDelta{ToolCalls: []ToolCallDelta{{Index: 0, ID: "x", Type: "function", Function: FunctionCallDelta{Name: "f"}}}}, FinishReason: &f}
	LegacyDelta(&d)
	b, _ = json.Marshal(d.Delta)
	if string(b) != `{"function_call":{"name":"f","arguments":""}}` || *d.FinishReason != FinishFunctionCall {
		t.Errorf("%s %s", b, *d.FinishReason)
	}
}
