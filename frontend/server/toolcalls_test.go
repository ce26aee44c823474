package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/chattemplate"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
	"github.com/tandem-llm/tandem/wire"
)

// outputs scripts one engine output per piece (its bytes as byte-tokenizer
// ids), the last finishing with reason and ending with extra ids.
func outputs(reason wire.FinishReason, extra []int32, parts ...string) []wire.EngineCoreOutput {
	outs := make([]wire.EngineCoreOutput, len(parts))
	for i, p := range parts {
		for _, b := range []byte(p) {
			outs[i].NewTokenIDs = append(outs[i].NewTokenIDs, int32(b))
		}
	}
	last := &outs[len(outs)-1]
	last.NewTokenIDs = append(last.NewTokenIDs, extra...)
	last.FinishReason = reason
	return outs
}

const eosIMEnd = 259 // the byte tokenizer's <|im_end|>

// hermesAnswer is a Qwen2.5-style answer: content, then two calls.
var hermesAnswer = []string{"Checking both.\n", "<tool_", "call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"city\":", " \"Zürich\"}}\n</tool_call>\n",
	"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"}

const toolsBody = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},` +
	`{"type":"function","function":{"name":"get_time"}}]`

// toolServer serves the fake engine with a tool-call parser.
func toolServer(t *testing.T, f *fakeEngine, format string, tok tokenizer.Tokenizer) string {
	t.Helper()
	var parser *toolparse.Format
	if format != "" {
		var err error
		if parser, err = toolparse.Lookup(format); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServerWith(t, f, func(c *Config) {
		c.MaxModelLen, c.NumBlocks, c.MaxRequestBody, c.ToolParser = 4096, 512, "64K", parser
	}, tok)
	return ts.URL
}

var callIDs = regexp.MustCompile(`chatcmpl-tool-[0-9a-f]{32}`)

func TestAutoToolCalls(t *testing.T) {
	tests := []struct {
		name, format, choice string
		answer               []string
		reason               wire.FinishReason
		want                 string // the choice's JSON, call ids replaced by ID
	}{
		{"content and two calls", "hermes", "", hermesAnswer, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"Checking both.","tool_calls":[` +
				`{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zürich\"}"}},` +
				`{"id":"ID","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}`},
		{"tool_choice auto, a call only", "hermes", `,"tool_choice":"auto"`, []string{"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}`},
		{"plain text", "hermes", "", []string{"It is ", "sunny."}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"It is sunny."},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}`},
		{"an undeclared tool is text", "hermes", "", []string{"<tool_call>{\"name\": \"rm\"}</tool_call>"}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"\u003ctool_call\u003e{\"name\": \"rm\"}\u003c/tool_call\u003e"},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}`},
		{"cut by max_tokens", "hermes", "", []string{"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zü"}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zü"}}]},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"parallel_tool_calls false: the first call", "hermes", `,"parallel_tool_calls":false`, hermesAnswer, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"Checking both.","tool_calls":[` +
				`{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zürich\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}`},
		{"tool_choice none", "hermes", `,"tool_choice":"none"`, []string{"<tool_call>{\"name\": \"get_time\"}</tool_call>"}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"\u003ctool_call\u003e{\"name\": \"get_time\"}\u003c/tool_call\u003e"},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}`},
		{"no parser", "", "", []string{"<tool_call>{\"name\": \"get_time\"}</tool_call>"}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":"\u003ctool_call\u003e{\"name\": \"get_time\"}\u003c/tool_call\u003e"},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}`},
		{"named", "", `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, []string{`{"city": `, `"Zürich"}`}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zürich\"}"}}]},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}`},
		{"named, cut by max_tokens: the partial arguments", "", `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, []string{`{"city": `, `"Zü`}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zü"}}]},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"required, cut by max_tokens: the whole calls", "", `,"tool_choice":"required"`, []string{`[{"name": "get_time", "parameters": {}}, `, `{"name": "get_weather", "parameters": {"city": "Zü`}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"required, cut inside the first call's arguments: no call", "", `,"tool_choice":"required"`, []string{`[{"name": "get_weather", "parameters": {"city": "Zü`}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"named, cut before any argument: no call", "", `,"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, []string{` `}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"required, cut inside the first name: no text", "", `,"tool_choice":"required"`, []string{`[{"name": "get_wea`}, wire.FinishLength,
			`{"index":0,"message":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}`},
		{"llama3_json", "llama3_json", "", []string{`{"name": "get_weather", "parameters": {"city": "Oslo"}}`}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}`},
		{"pythonic", "pythonic", "", []string{`[get_weather(city="Oslo"), get_time()]`}, wire.FinishStop,
			`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"ID","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},` +
				`{"id":"ID","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, tc.format, tokenizer.NewByte())
			body := `{"messages":[{"role":"user","content":"Weather and time in Zürich?"}],` + toolsBody + tc.choice + `,"max_tokens":100}`
			code, resp := post(t, url, body)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, resp)
			}
			var out struct{ Choices []json.RawMessage }
			if err := json.Unmarshal([]byte(resp), &out); err != nil || len(out.Choices) != 1 {
				t.Fatalf("%v: %s", err, resp)
			}
			if diff := cmp.Diff(tc.want, callIDs.ReplaceAllString(string(out.Choices[0]), "ID")); diff != "" {
				t.Errorf("choice (-want +got):\n%s", diff)
			}
		})
	}
}

func eosIf(reason wire.FinishReason) []int32 {
	if reason == wire.FinishStop {
		return []int32{eosIMEnd}
	}
	return nil
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return postTo(t, url, "/v1/chat/completions", body)
}

func postTo(t *testing.T, url, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "fixed")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// TestAutoToolCallsStream: the SSE transcript (golden), and the deltas
// joined as the OpenAI SDKs join them equal the non-streamed answer.
func TestAutoToolCallsStream(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...)
	}}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	code, body := post(t, url, `{"messages":[{"role":"user","content":"Weather and time in Zürich?"}],`+toolsBody+`,"stream":true,"max_tokens":100}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	golden(t, "chat_auto_tools.sse", callIDs.ReplaceAllString(body, "ID"))

	var content strings.Builder
	var calls []openai.ToolCall
	finish := ""
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		d := ch.Choices[0].Delta
		if d.Content != nil {
			content.WriteString(*d.Content)
		}
		for _, tc := range d.ToolCalls {
			if tc.ID != "" {
				if tc.Index != len(calls) || tc.Type != "function" || tc.Function.Name == "" || tc.Function.Arguments != "" {
					t.Fatalf("first delta of a call: %+v", tc)
				}
				calls = append(calls, openai.ToolCall{ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name}})
				continue
			}
			if tc.Type != "" || tc.Function.Name != "" {
				t.Fatalf("a later delta carries more than arguments: %+v", tc)
			}
			calls[tc.Index].Function.Arguments += tc.Function.Arguments
		}
		if r := ch.Choices[0].FinishReason; r != nil {
			finish = *r
		}
	}
	want := []openai.ToolCall{{Type: "function", Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Zürich"}`}},
		{Type: "function", Function: openai.FunctionCall{Name: "get_time", Arguments: `{}`}}}
	for i := range calls {
		calls[i].ID = ""
	}
	if diff := cmp.Diff(want, calls); diff != "" || content.String() != "Checking both." || finish != "tool_calls" {
		t.Errorf("content %q finish %q calls (-want +got):\n%s", content.String(), finish, diff)
	}
}

// TestAutoToolCallsStreamOneCall: with parallel_tool_calls false a stream
// sends the first call only, and still ends with tool_calls.
func TestAutoToolCallsStreamOneCall(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, hermesAnswer...)
	}}
	url := toolServer(t, f, "hermes", tokenizer.NewByte())
	code, body := post(t, url, `{"messages":[{"role":"user","content":"Weather and time in Zürich?"}],`+toolsBody+`,"parallel_tool_calls":false,"stream":true,"max_tokens":100}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var names []string
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			if tc.Index != 0 {
				t.Fatalf("a second call: %s", data)
			}
			if tc.Function.Name != "" {
				names = append(names, tc.Function.Name)
			}
		}
	}
	if !cmp.Equal(names, []string{"get_weather"}) || !strings.Contains(body, `"finish_reason":"tool_calls"`) {
		t.Errorf("calls %v in %s", names, body)
	}
}

// specialTok is the byte tokenizer where Hermes 2 Pro's tags are special
// tokens (ids 300 and 301).
type specialTok struct{ tokenizer.Tokenizer }

func (t specialTok) TokenBytes(id int32) ([]byte, bool) {
	switch id {
	case 300:
		return []byte("<tool_call>"), true
	case 301:
		return []byte("</tool_call>"), true
	}
	return t.Tokenizer.TokenBytes(id)
}

// TestAutoToolCallsKeepSpecial: with tools, a hermes answer keeps special
// tokens (its tags may be), unless the request says otherwise.
func TestAutoToolCallsKeepSpecial(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		outs := outputs(wire.FinishStop, []int32{301, eosIMEnd}, `{"name": "get_time"}`)
		return append([]wire.EngineCoreOutput{{NewTokenIDs: []int32{300}}}, outs...)
	}}
	url := toolServer(t, f, "hermes", specialTok{tokenizer.NewByte()})
	for _, tc := range []struct{ extra, want string }{
		{"", `"finish_reason":"tool_calls"`},
		{`,"skip_special_tokens":true`, `"content":"{\"name\": \"get_time\"}"`},
	} {
		code, body := post(t, url, `{"messages":[{"role":"user","content":"time?"}],`+toolsBody+tc.extra+`,"max_tokens":100}`)
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %s", tc.extra, code, body, tc.want)
		}
	}
}

// TestMistralCallIDs: Mistral's templates take only 9-character ids.
func TestMistralCallIDs(t *testing.T) {
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, `[TOOL_CALLS]get_time[ARGS]{}`)
	}}
	url := toolServer(t, f, "mistral", tokenizer.NewByte())
	code, body := post(t, url, `{"messages":[{"role":"user","content":"time?"}],`+toolsBody+`,"max_tokens":100}`)
	var out openai.ChatCompletion
	if err := json.Unmarshal([]byte(body), &out); code != http.StatusOK || err != nil || len(out.Choices) != 1 || len(out.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("%d %v %s", code, err, body)
	}
	if id := out.Choices[0].Message.ToolCalls[0].ID; !regexp.MustCompile(`^[a-zA-Z0-9]{9}$`).MatchString(id) {
		t.Errorf("id %q", id)
	}
}

// TestToolLoopPrompt: a call → result → answer conversation reaches the
// Qwen2.5 template as vLLM passes it (assistant content null, arguments
// parsed into objects, "" as {}, tool messages with tool_call_id): the
// prompt equals transformers' render (testdata/tool_loop_qwen2.5.py).
func TestToolLoopPrompt(t *testing.T) {
	src, err := os.ReadFile("../chattemplate/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chattemplate.New(string(src), chattemplate.Options{EOSToken: "<|im_end|>"})
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("testdata/tool_loop_qwen2.5.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/tool_loop_qwen2.5.txt")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput { return tokens("a", wire.FinishLength) }}
	url := toolServer(t, f, "hermes", templateTok{tokenizer.NewByte(), tmpl})
	if code, resp := post(t, url, string(body)); code != http.StatusOK {
		t.Fatalf("%d %s", code, resp)
	}
	got := tokenizer.NewByte().Decode(f.requests()[0].PromptTokenIDs, false)
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("prompt (-want +got):\n%s", diff)
	}
}

// TestToolChoiceCutStream: a named or required answer that max_tokens
// cuts streams its calls so far with finish_reason length, as vLLM (and
// never its text as content); a whole named call finishes "stop".
func TestToolChoiceCutStream(t *testing.T) {
	tests := []struct {
		name, choice string
		answer       []string
		finish       wire.FinishReason
		calls        []call // the stream's calls, deltas joined
		want         string // its finish reason
	}{
		{"named", namedWeather, []string{`{"city": `, `"Zü`}, wire.FinishLength, []call{{"get_weather", `{"city":"Zü`}}, "length"},
		{"required", requiredCall, []string{`[{"name": "get_weather", "parameters": {"ci`}, wire.FinishLength, []call{{"get_weather", `{"ci`}}, "length"},
		{"required, cut inside the first name: no text", requiredCall, []string{`[{"name": "get_wea`}, wire.FinishLength, nil, "length"},
		{"named, whole: finish_reason stop", namedWeather, []string{`{"city": `, `"Zü"}`}, wire.FinishStop, []call{{"get_weather", `{"city":"Zü"}`}}, "stop"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.finish, eosIf(tc.finish), tc.answer...)
			}}
			url := toolServer(t, f, "", tokenizer.NewByte())
			code, body := post(t, url, `{"messages":[{"role":"user","content":"Weather?"}],`+toolsBody+`,"tool_choice":`+tc.choice+`,"stream":true,"max_tokens":5}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			got := foldChatStream(t, body)
			if got.content != "" || got.finish != tc.want || !cmp.Equal(got.calls, tc.calls) {
				t.Errorf("content %q, finish %q, calls %v; want %q %v\n%s", got.content, got.finish, got.calls, tc.want, tc.calls, body)
			}
		})
	}
}

// TestRequiredToolWithDefs: a tool whose parameters $ref their own $defs
// under tool_choice "required" reaches the engine with the defs at the
// combined schema's root.
func TestRequiredToolWithDefs(t *testing.T) {
	var schema string
	f := &fakeEngine{script: func(r *wire.EngineCoreRequest) []wire.EngineCoreOutput {
		if so := r.SamplingParams.StructuredOutputs; so != nil {
			schema = so.JSON
		}
		return outputs(wire.FinishStop, []int32{eosIMEnd}, `[{"name": "get_weather", "parameters": {"city": "Oslo", "options": {"unit": "C"}}}]`)
	}}
	url := toolServer(t, f, "", tokenizer.NewByte())
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},` +
		`"options":{"$ref":"#/$defs/Opt"}},"$defs":{"Opt":{"type":"object","properties":{"unit":{"type":"string"}}}}}}}]`
	code, body := post(t, url, `{"messages":[{"role":"user","content":"Weather?"}],`+tools+`,"tool_choice":"required","max_tokens":50}`)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	if !strings.Contains(body, `"arguments":"{\"city\":\"Oslo\",\"options\":{\"unit\":\"C\"}}"`) {
		t.Errorf("no call in %s", body)
	}
	var got struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(schema), &got); err != nil || got.Defs["Opt"] == nil {
		t.Errorf("the constraint's root has no $defs.Opt (%v): %s", err, schema)
	}
}

// TestQwen3CoderToolCalls: Qwen3-Coder's XML calls (qwen3_coder) come
// out with each argument typed by the tool's schema, whole and streamed
// alike: an integer, a boolean, a string that looks like a number, a
// nullable string and an array.
func TestQwen3CoderToolCalls(t *testing.T) {
	answer := []string{"I'll look.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n", "10115\n</parameter>\n<parameter=days>\n3\n</para",
		"meter>\n<parameter=hourly>\nTrue\n</parameter>\n<parameter=units>\nmetric\n</parameter>\n<parameter=fields>\n[\"rain\", \"wind\"]\n</parameter>\n</function>\n</tool_call>"}
	f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
		return outputs(wire.FinishStop, []int32{eosIMEnd}, answer...)
	}}
	url := toolServer(t, f, "qwen3_coder", tokenizer.NewByte())
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{` +
		`"city":{"type":"string"},"days":{"type":"integer"},"hourly":{"type":"boolean"},"units":{"type":["string","null"]},` +
		`"fields":{"type":"array","items":{"type":"string"}}}}}}]`
	const want = `{"city":"10115","days":3,"hourly":true,"units":"metric","fields":["rain","wind"]}`
	for _, stream := range []bool{false, true} {
		code, body := post(t, url, `{"messages":[{"role":"user","content":"Weather in Berlin 10115?"}],`+tools+fmt.Sprintf(`,"stream":%v,"max_tokens":200}`, stream))
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		args, content := "", ""
		if !stream {
			var out openai.ChatCompletion
			if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 || len(out.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("%v: %s", err, body)
			}
			args = out.Choices[0].Message.ToolCalls[0].Function.Arguments
			if c := out.Choices[0].Message.Content; c != nil {
				content = *c
			}
		}
		for _, line := range strings.Split(body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !stream || !ok || data == "[DONE]" {
				continue
			}
			var ch openai.ChatCompletionChunk
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				t.Fatal(err)
			}
			if d := ch.Choices[0].Delta; d.Content != nil {
				content += *d.Content
			}
			for _, tc := range ch.Choices[0].Delta.ToolCalls {
				args += tc.Function.Arguments
			}
		}
		if args != want || content != "I'll look." {
			t.Errorf("stream %v: content %q, arguments %s; want %q, %s", stream, content, args, "I'll look.", want)
		}
	}
}
