package server

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3/responses"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// respToolsBody is toolsBody in the Responses API's flat form.
const respToolsBody = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},` +
	`{"type":"function","name":"get_time"}]`

var respCallIDs = regexp.MustCompile(`call_[0-9a-f]{24}`)

// Output items of the tests' answers, call ids as call_ID.
const (
	itemChecking = `{"type":"message","id":"msg_fixed","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Checking both.","annotations":[],"logprobs":[]}]}`
	itemWeather1 = `{"type":"function_call","id":"fc_fixed_1","call_id":"call_ID","name":"get_weather","arguments":"{\"city\":\"Zürich\"}","status":"completed"}`
	itemTime2    = `{"type":"function_call","id":"fc_fixed_2","call_id":"call_ID","name":"get_time","arguments":"{}","status":"completed"}`
)

func TestResponsesToolCalls(t *testing.T) {
	tests := []struct {
		name, extra string // extra: tool_choice, parallel_tool_calls
		answer      []string
		reason      wire.FinishReason
		constrained bool   // the engine request carries a constraint
		status      string // the response's
		want        string // output
	}{
		{"auto: text and two calls", "", hermesAnswer, wire.FinishStop, false, "completed",
			`[` + itemChecking + `,` + itemWeather1 + `,` + itemTime2 + `]`},
		{"auto: parallel_tool_calls false keeps the first call", `,"parallel_tool_calls":false`, hermesAnswer, wire.FinishStop, false, "completed",
			`[` + itemChecking + `,` + itemWeather1 + `]`},
		{"auto: a call only", `,"tool_choice":"auto"`, []string{"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"}, wire.FinishStop, false, "completed",
			`[{"type":"function_call","id":"fc_fixed_0","call_id":"call_ID","name":"get_time","arguments":"{}","status":"completed"}]`},
		{"auto: text", "", []string{"It is ", "sunny."}, wire.FinishStop, false, "completed",
			`[{"type":"message","id":"msg_fixed","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is sunny.","annotations":[],"logprobs":[]}]}]`},
		{"auto: a call cut by max_output_tokens", "", []string{"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zü"}, wire.FinishLength, false, "incomplete",
			`[{"type":"function_call","id":"fc_fixed_0","call_id":"call_ID","name":"get_weather","arguments":"{\"city\":\"Zü","status":"incomplete"}]`},
		{"none: calls stay text", `,"tool_choice":"none"`, []string{"<tool_call>{\"name\": \"get_time\"}</tool_call>"}, wire.FinishStop, false, "completed",
			`[{"type":"message","id":"msg_fixed","status":"completed","role":"assistant","content":[{"type":"output_text","text":"\u003ctool_call\u003e{\"name\": \"get_time\"}\u003c/tool_call\u003e","annotations":[],"logprobs":[]}]}]`},
		{"required", `,"tool_choice":"required"`, []string{`[{"name": "get_weather", "parameters": {"city": "Zürich"}}, `, `{"name": "get_time", "parameters": {}}]`}, wire.FinishStop, true, "completed",
			`[{"type":"function_call","id":"fc_fixed_0","call_id":"call_ID","name":"get_weather","arguments":"{\"city\":\"Zürich\"}","status":"completed"},` +
				`{"type":"function_call","id":"fc_fixed_1","call_id":"call_ID","name":"get_time","arguments":"{}","status":"completed"}]`},
		{"named", `,"tool_choice":{"type":"function","name":"get_weather"}`, []string{`{"city": `, `"Zürich"}`}, wire.FinishStop, true, "completed",
			`[{"type":"function_call","id":"fc_fixed_0","call_id":"call_ID","name":"get_weather","arguments":"{\"city\":\"Zürich\"}","status":"completed"}]`},
		{"required, cut by max_output_tokens: text", `,"tool_choice":"required"`, []string{`[{"name": "get_wea`}, wire.FinishLength, true, "incomplete",
			`[{"type":"message","id":"msg_fixed","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"[{\"name\": \"get_wea","annotations":[],"logprobs":[]}]}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, "hermes", tokenizer.NewByte())
			code, body := postTo(t, url, "/v1/responses", `{"input":"Weather and time in Zürich?",`+respToolsBody+tc.extra+`,"max_output_tokens":100}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var out struct {
				Status string
				Output json.RawMessage
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if diff := cmp.Diff(tc.want, respCallIDs.ReplaceAllString(string(out.Output), "call_ID")); diff != "" || out.Status != tc.status {
				t.Errorf("status %q, want %q; output (-want +got):\n%s", out.Status, tc.status, diff)
			}
			if so := f.requests()[0].SamplingParams.StructuredOutputs; (so != nil) != tc.constrained {
				t.Errorf("constraint %+v, want one: %v", so, tc.constrained)
			}

			// Streamed, the same items.
			_, stream := postTo(t, url, "/v1/responses", `{"input":"Weather and time in Zürich?",`+respToolsBody+tc.extra+`,"max_output_tokens":100,"stream":true}`)
			evs := sseEvents(t, respCallIDs.ReplaceAllString(stream, "call_ID"))
			var done struct {
				Response struct{ Output json.RawMessage }
			}
			if err := json.Unmarshal(evs[len(evs)-1].data, &done); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(done.Response.Output)); diff != "" {
				t.Errorf("streamed output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesToolCallsSDK: the official Go SDK reads the function_call
// items.
func TestResponsesToolCallsSDK(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...)
	}}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	_, body := postTo(t, url, "/v1/responses", `{"input":"Weather and time in Zürich?",`+respToolsBody+`}`)
	var r sdk.Response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 3 || r.OutputText() != "Checking both." {
		t.Fatalf("output %s", body)
	}
	fc := r.Output[1].AsFunctionCall()
	if fc.Type != "function_call" || fc.ID != "fc_fixed_1" || !respCallIDs.MatchString(fc.CallID) || fc.Name != "get_weather" ||
		fc.Arguments != `{"city":"Zürich"}` || fc.Status != "completed" {
		t.Errorf("function call %+v", fc)
	}
}

// TestResponsesToolCallsStream: the SSE transcript (golden); read with the
// SDK's event types, every delta lands on the item it names, each done
// event repeats what its deltas joined to, and the items equal the
// completed response's output and the same answer not streamed.
func TestResponsesToolCallsStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...)
	}}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	req := `{"input":"Weather and time in Zürich?",` + respToolsBody
	code, body := postTo(t, url, "/v1/responses", req+`,"stream":true}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	body = respCallIDs.ReplaceAllString(body, "call_ID")
	golden(t, "responses_tools.sse", body)

	var items []json.RawMessage // at output_item.done
	var joined []string         // each item's deltas
	var ids []string
	var completed sdk.Response
	for i, ev := range sseEvents(t, body) {
		var e sdk.ResponseStreamEventUnion
		if err := json.Unmarshal(ev.data, &e); err != nil || e.Type != ev.typ || e.SequenceNumber != int64(i) {
			t.Fatalf("event %d (%v): %s", i, err, ev.data)
		}
		check := func(index int64, id string) {
			t.Helper()
			if open := len(ids) - 1; int(index) != open || id != ids[open] {
				t.Fatalf("event %d is for item %d %q, not the open one (%d of %q)", i, index, id, open, ids)
			}
		}
		switch e.Type {
		case "response.output_item.added":
			a := e.AsResponseOutputItemAdded()
			if int(a.OutputIndex) != len(ids) || a.Item.Status != "in_progress" {
				t.Fatalf("added %s", ev.data)
			}
			ids, joined = append(ids, a.Item.ID), append(joined, "")
		case "response.output_text.delta":
			d := e.AsResponseOutputTextDelta()
			check(d.OutputIndex, d.ItemID)
			joined[d.OutputIndex] += d.Delta
		case "response.function_call_arguments.delta":
			d := e.AsResponseFunctionCallArgumentsDelta()
			check(d.OutputIndex, d.ItemID)
			joined[d.OutputIndex] += d.Delta
		case "response.output_text.done":
			d := e.AsResponseOutputTextDone()
			check(d.OutputIndex, d.ItemID)
			if d.Text != joined[d.OutputIndex] {
				t.Errorf("text done %q, deltas %q", d.Text, joined[d.OutputIndex])
			}
		case "response.function_call_arguments.done":
			d := e.AsResponseFunctionCallArgumentsDone()
			check(d.OutputIndex, d.ItemID)
			if d.Arguments != joined[d.OutputIndex] {
				t.Errorf("arguments done %q, deltas %q", d.Arguments, joined[d.OutputIndex])
			}
		case "response.output_item.done":
			d := e.AsResponseOutputItemDone()
			check(d.OutputIndex, d.Item.ID)
			items = append(items, json.RawMessage(d.Item.RawJSON()))
		case "response.completed":
			completed = e.AsResponseCompleted().Response
		}
	}
	if len(items) != 3 || completed.Status != "completed" {
		t.Fatalf("%d items, status %q", len(items), completed.Status)
	}
	streamed, _ := json.Marshal(items)
	if diff := cmp.Diff(completed.JSON.Output.Raw(), string(streamed)); diff != "" {
		t.Errorf("completed output (-) and the items streamed (+):\n%s", diff)
	}
	_, whole := postTo(t, url, "/v1/responses", req+`}`)
	var r struct{ Output json.RawMessage }
	if err := json.Unmarshal([]byte(respCallIDs.ReplaceAllString(whole, "call_ID")), &r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(r.Output), string(streamed)); diff != "" {
		t.Errorf("not streamed (-) and streamed (+):\n%s", diff)
	}
}

type sseEvent struct {
	typ  string
	data json.RawMessage
}

// sseEvents splits a Responses stream into its events.
func sseEvents(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSpace(body), "\n\n") {
		typ, data, ok := strings.Cut(block, "\ndata: ")
		typ, isEvent := strings.CutPrefix(typ, "event: ")
		if !ok || !isEvent {
			t.Fatalf("not an event: %q", block)
		}
		out = append(out, sseEvent{typ, json.RawMessage(data)})
	}
	return out
}

// TestResponsesToolLoop: the call → result → answer conversation of
// TestToolLoopPrompt, told as Responses items, reaches the Qwen2.5
// template as chat's messages do (the prompt transformers renders), both
// resent as input items and continued through previous_response_id
// (calls and results stored with the responses).
func TestResponsesToolLoop(t *testing.T) {
	want, err := os.ReadFile("testdata/tool_loop_qwen2.5.txt")
	if err != nil {
		t.Fatal(err)
	}
	answers := [][]string{
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"°C\"}}\n</tool_call>\n", "<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>"},
		{"Paris: 18°C, cloudy. Zürich: 14:05."},
		{"Bye."},
	}
	f := &fakeEngine{}
	f.script = func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		a := answers[0]
		answers = answers[1:]
		return outputs(wire.FinishStop, []int32{eosIMEnd}, a...)
	}
	url := toolServer(t, f, "hermes", qwenTok(t))
	const tools = `"tools":[{"type":"function","name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}},` +
		`{"type":"function","name":"get_time","parameters":{"type":"object","properties":{}}}]`
	const common = `"instructions":"You are terse.",` + tools
	lastPrompt := func() string {
		reqs := f.requests()
		return tokenizer.NewByte().Decode(reqs[len(reqs)-1].PromptTokenIDs, false)
	}
	respond := func(body string) (id string, calls []sdk.ResponseFunctionToolCall) {
		t.Helper()
		code, resp := postTo(t, url, "/v1/responses", body)
		var r sdk.Response
		if err := json.Unmarshal([]byte(resp), &r); code != http.StatusOK || err != nil {
			t.Fatalf("%d %v %s", code, err, resp)
		}
		for _, it := range r.Output {
			if it.Type == "function_call" {
				calls = append(calls, it.AsFunctionCall())
			}
		}
		return r.ID, calls
	}

	id, calls := respond(`{"input":"Weather in Paris, and the time in Zürich?",` + common + `}`)
	if len(calls) != 2 || calls[0].Name != "get_weather" || calls[1].Arguments != "{}" {
		t.Fatalf("calls %+v", calls)
	}
	results := `[{"type":"function_call_output","call_id":"` + calls[0].CallID + `","output":"18°C, cloudy"},` +
		`{"type":"function_call_output","call_id":"` + calls[1].CallID + `","output":[{"type":"input_text","text":"14:05"}]}]`
	id, _ = respond(`{"previous_response_id":"` + id + `","input":` + results + `,` + common + `}`)
	respond(`{"previous_response_id":"` + id + `","input":"Thanks!",` + common + `}`)
	if diff := cmp.Diff(string(want), lastPrompt()); diff != "" {
		t.Errorf("through previous_response_id, prompt (-want +got):\n%s", diff)
	}

	answers = [][]string{{"Bye."}}
	respond(`{"input":[{"role":"user","content":"Weather in Paris, and the time in Zürich?"},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\": \"Paris\", \"unit\": \"°C\"}","status":"completed"},` +
		`{"type":"function_call","call_id":"call_2","name":"get_time","arguments":""},` +
		`{"type":"function_call_output","call_id":"call_1","output":"18°C, cloudy"},{"type":"function_call_output","call_id":"call_2","output":"14:05"},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Paris: 18°C, cloudy. Zürich: 14:05."}]},` +
		`{"role":"user","content":"Thanks!"}],` + common + `}`)
	if diff := cmp.Diff(string(want), lastPrompt()); diff != "" {
		t.Errorf("as input items, prompt (-want +got):\n%s", diff)
	}
}

func TestResponsesToolErrors(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("x", wire.FinishStop, eosIMEnd) }}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	tests := []struct{ name, body, param string }{
		{"web_search tool", `{"input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"chat's nested form", `{"input":"x","tools":[{"type":"function","function":{"name":"f"}}]}`, "tools[0].name"},
		{"file_search tool_choice", `{"input":"x",` + respToolsBody + `,"tool_choice":{"type":"file_search"}}`, "tool_choice"},
		{"unknown function", `{"input":"x",` + respToolsBody + `,"tool_choice":{"type":"function","name":"rm"}}`, "tool_choice"},
		{"required and text.format", `{"input":"x",` + respToolsBody + `,"tool_choice":"required","text":{"format":{"type":"json_object"}}}`, "tool_choice"},
		{"call without call_id", `{"input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := postTo(t, url, "/v1/responses", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(body, `"param":"`+tc.param+`"`) {
				t.Errorf("%d %s, want 400 for %s", code, body, tc.param)
			}
		})
	}
}
