package server

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
	"github.com/tandem-llm/tandem/wire"
)

// call is a tool call as the tests compare it: no id.
type call struct{ Name, Arguments string }

// foldedStream is choice 0 of a streamed chat completion, its chunks
// joined: the content, the calls (each call's argument fragments
// joined), the finish reason, and each tool_calls delta in order, as
// "index name arguments" (name "-" when absent).
type foldedStream struct {
	content string
	calls   []call
	finish  string
	deltas  []string
}

// foldChatStream joins a chat stream's chunks, checking the shape of the
// tool_calls deltas as OpenAI and vLLM stream them: one call delta per
// chunk; a call's first delta has the next index, an id, type
// "function", its name and arguments ""; its later ones the same index
// and only arguments; the finish reason comes once, last.
func foldChatStream(t *testing.T, body string) foldedStream {
	t.Helper()
	var f foldedStream
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   *string
					ToolCalls []struct {
						Index    int
						ID, Type *string
						Function struct{ Name, Arguments *string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if len(ch.Choices) == 0 {
			continue
		}
		if len(ch.Choices) != 1 || f.finish != "" {
			t.Fatalf("a chunk after the finish, or of %d choices: %s", len(ch.Choices), data)
		}
		c := ch.Choices[0]
		if c.Delta.Content != nil {
			f.content += *c.Delta.Content
		}
		if len(c.Delta.ToolCalls) > 1 {
			t.Fatalf("%d call deltas in one chunk: %s", len(c.Delta.ToolCalls), data)
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Function.Arguments == nil {
				t.Fatalf("a call delta without arguments: %s", data)
			}
			name := "-"
			switch tc.Index {
			case len(f.calls): // a new call
				if tc.ID == nil || !callIDs.MatchString(*tc.ID) || tc.Type == nil || *tc.Type != "function" ||
					tc.Function.Name == nil || *tc.Function.Name == "" || *tc.Function.Arguments != "" {
					t.Fatalf("a call's first delta without its id, type and name, or with arguments: %s", data)
				}
				name = *tc.Function.Name
				f.calls = append(f.calls, call{Name: name})
			case len(f.calls) - 1:
				if tc.ID != nil || tc.Type != nil || tc.Function.Name != nil {
					t.Fatalf("a later delta of a call with an id, type or name: %s", data)
				}
				f.calls[tc.Index].Arguments += *tc.Function.Arguments
			default:
				t.Fatalf("call delta of index %d after %d calls: %s", tc.Index, len(f.calls), data)
			}
			f.deltas = append(f.deltas, fmt.Sprintf("%d %s %s", tc.Index, name, *tc.Function.Arguments))
		}
		if c.FinishReason != nil {
			f.finish = *c.FinishReason
		}
	}
	return f
}

const (
	namedWeather = `{"type":"function","function":{"name":"get_weather"}}`
	requiredCall = `"required"`
)

// TestForcedToolStream: under tool_choice named or "required", the calls
// stream as the answer is generated, whatever the pieces it comes in
// (split inside a key, a string with escapes, a character, nested
// values, whitespace); each call's fragments join to the arguments the
// same answer gives not streamed. finish_reason is tool_calls for
// "required", stop for a named call, and length, after the calls so
// far, when max_tokens cut the answer.
func TestForcedToolStream(t *testing.T) {
	tests := []struct {
		name, choice string
		answer       []string // one engine output each
		reason       wire.FinishReason
		calls        []call
		finish       string
		deltas       []string // when set, the call deltas exactly
	}{
		{"named, split inside a key", namedWeather, []string{`{"ci`, `ty": `, `"Paris"}`}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Paris"}`}}, "stop",
			[]string{`0 get_weather `, `0 - {"ci`, `0 - ty":`, `0 - "Paris"}`}},
		{"named, split inside a string's escapes", namedWeather, []string{`{"city": "a\`, `"b\\`, `n\u00`, `e9 c"}`}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"a\"b\\n\u00e9 c"}`}}, "stop",
			[]string{`0 get_weather `, `0 - {"city":"a\`, `0 - "b\\`, `0 - n\u00`, `0 - e9 c"}`}},
		{"named, split inside a character", namedWeather, []string{"{\"city\": \"Z\xc3", "\xbcrich \xe6\x9d", "\xb1\xe4\xba\xac\"}"}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Zürich 東京"}`}}, "stop", nil},
		{"named, nested objects and arrays", namedWeather, []string{`{"city": "Oslo", "days": [1, {"a": [tr`, `ue, null]}, -2.5e`, `3], "o": {}}`}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Oslo","days":[1,{"a":[true,null]},-2.5e3],"o":{}}`}}, "stop", nil},
		{"named, whitespace around and inside", namedWeather, []string{" \n", "{\n  \"city\" :", " \"Rome\"\n", "}\n"}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Rome"}`}}, "stop",
			[]string{`0 get_weather `, `0 - {"city":`, `0 - "Rome"`, `0 - }`}},
		{"required, two calls", requiredCall, []string{`[{"name": "get_weather", "parameters": {"city": "Zü`, `rich"}}, {"na`, `me": "get_time", "parameters": {}}]`}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Zürich"}`}, {"get_time", `{}`}}, "tool_calls",
			[]string{`0 get_weather `, `0 - {"city":"Zü`, `0 - rich"}`, `1 get_time `, `1 - {}`}},
		{"required, whitespace and newlines", requiredCall, []string{"[\n  {\n    \"name\": \"get_time\",\n", "    \"parameters\": {}\n  },\n  {\"name\": ", "\"get_weather\", \"parameters\": { \"city\" : \"Bern\" }}\n]"}, wire.FinishStop,
			[]call{{"get_time", `{}`}, {"get_weather", `{"city":"Bern"}`}}, "tool_calls", nil},
		{"required, split inside a name", requiredCall, []string{`[{"name": "get_wea`, `ther", "parameters": {"city": "Nice"}}]`}, wire.FinishStop,
			[]call{{"get_weather", `{"city":"Nice"}`}}, "tool_calls", []string{`0 get_weather `, `0 - {"city":"Nice"}`}},
		{"named, cut by max_tokens: the arguments so far", namedWeather, []string{`{"city": `, `"Zü`}, wire.FinishLength,
			[]call{{"get_weather", `{"city":"Zü`}}, "length", nil},
		{"named, cut before any argument: no call", namedWeather, []string{` `}, wire.FinishLength, nil, "length", nil},
		{"required, cut inside the first name: nothing", requiredCall, []string{`[{"name": "get_wea`}, wire.FinishLength, nil, "length", nil},
		{"required, cut inside the second call's arguments", requiredCall, []string{`[{"name": "get_time", "parameters": {}}, `, `{"name": "get_weather", "parameters": {"ci`}, wire.FinishLength,
			[]call{{"get_time", `{}`}, {"get_weather", `{"ci`}}, "length", nil},
		{"required, cut inside the second call's name: the first", requiredCall, []string{`[{"name": "get_time", "parameters": {}}, {"name": "get_`}, wire.FinishLength,
			[]call{{"get_time", `{}`}}, "length", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, "", tokenizer.NewByte())
			req := `{"messages":[{"role":"user","content":"Weather?"}],` + toolsBody + `,"tool_choice":` + tc.choice + `,"max_tokens":100`
			code, body := post(t, url, req+`,"stream":true}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			got := foldChatStream(t, body)
			if got.content != "" || got.finish != tc.finish || !cmp.Equal(got.calls, tc.calls) {
				t.Errorf("content %q, finish %q, calls %v; want %q, %v\n%s", got.content, got.finish, got.calls, tc.finish, tc.calls, body)
			}
			if tc.deltas != nil {
				if diff := cmp.Diff(tc.deltas, got.deltas); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			}
			if tc.reason == wire.FinishLength && tc.choice == requiredCall {
				return // not streamed, vLLM's cut list has no calls
			}
			// Not streamed, the same calls.
			code, body = post(t, url, req+`}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			var out struct {
				Choices []struct {
					Message struct {
						ToolCalls []openai.ToolCall `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 {
				t.Fatalf("%v: %s", err, body)
			}
			if whole := callsOf(out.Choices[0].Message.ToolCalls); !cmp.Equal(whole, tc.calls) || out.Choices[0].FinishReason != tc.finish {
				t.Errorf("not streamed: calls %v, finish %q", whole, out.Choices[0].FinishReason)
			}
		})
	}
}

func callsOf(tcs []openai.ToolCall) []call {
	var out []call
	for _, c := range tcs {
		out = append(out, call{c.Function.Name, c.Function.Arguments})
	}
	return out
}

// TestForcedToolStreamSplits drives the streamer with answers cut at
// random places (between characters, as the detokenizer sends them):
// each call's fragments join to the arguments the answer gives whole
// (ToolPlan.ToolCalls, which reads it with encoding/json); cut by
// max_tokens at a random length, the calls so far are those calls'
// beginnings, and the answer not streamed has the same (named) or those
// of them that are whole (required).
func TestForcedToolStreamSplits(t *testing.T) {
	answers := []struct{ choice, text string }{
		{namedWeather, `{"city": "Zürich", "days": [1, 2, {"a": "b\"c\\d\u00e9 東京"}], "x": null, "y": -0.5E+2}`},
		{namedWeather, "\n{\n  \"city\" : \"Lyon\" ,\n  \"n\" : [ ]\n}\n"},
		{requiredCall, `[{"name": "get_weather", "parameters": {"city": "Zü\"rich", "o": {"u": [1, "C"]}}}, {"name": "get_time", "parameters": {}}]`},
		{requiredCall, "[ {\"name\":\"get_time\",\"parameters\":{ }} ,\n {\"name\": \"get_weather\", \"parameters\": {\"city\": \"\\u00e9\"}} ]"},
	}
	r := rand.New(rand.NewSource(1))
	for _, a := range answers {
		plan, e := (&openai.ChatCompletionRequest{Tools: json.RawMessage(`[` + toolsBody[len(`"tools":[`):]), ToolChoice: json.RawMessage(a.choice)}).ToolPlanOf()
		if e != nil {
			t.Fatal(e.Message)
		}
		whole, ok := plan.ToolCalls(a.text, toolCallID)
		if !ok {
			t.Fatalf("%q is not a whole answer", a.text)
		}
		want := callsOf(whole)
		wantFinish := "tool_calls"
		if plan.Mode == openai.ToolsNamed {
			wantFinish = "stop"
		}
		for range 200 {
			pieces := splitRandom(r, a.text)
			got := foldChatStream(t, streamPieces(t, plan, pieces, openai.FinishStop))
			if got.content != "" || got.finish != wantFinish || !cmp.Equal(got.calls, want) {
				t.Fatalf("%q in pieces %q: content %q, finish %q, calls %v; want %v", a.text, pieces, got.content, got.finish, got.calls, want)
			}

			n := r.Intn(len(a.text) + 1)
			for n < len(a.text) && !utf8.RuneStart(a.text[n]) {
				n--
			}
			pieces = splitRandom(r, a.text[:n])
			got = foldChatStream(t, streamPieces(t, plan, pieces, openai.FinishLength))
			if got.content != "" || got.finish != "length" || len(got.calls) > len(want) {
				t.Fatalf("%q cut at %d: content %q, finish %q, calls %v", a.text, n, got.content, got.finish, got.calls)
			}
			for i, c := range got.calls {
				if c.Name != want[i].Name || !strings.HasPrefix(want[i].Arguments, c.Arguments) {
					t.Fatalf("%q cut at %d: call %v is not the beginning of %v", a.text, n, c, want[i])
				}
			}
			var ch openai.ChatChoice
			cutToolAnswer(&ch, plan, a.text[:n], toolCallID)
			whole := got.calls // named: as streamed; required: the streamed calls that were whole
			if plan.Mode != openai.ToolsNamed {
				whole = slices.DeleteFunc(slices.Clone(got.calls), func(c call) bool { return !json.Valid([]byte(c.Arguments)) })
				if len(whole) == 0 {
					whole = nil
				}
				for i, c := range whole {
					if !cmp.Equal(c, want[i]) {
						t.Fatalf("%q cut at %d: whole call %v, want %v", a.text, n, c, want[i])
					}
				}
			}
			if cut := callsOf(ch.Message.ToolCalls); !cmp.Equal(whole, cut) {
				t.Fatalf("%q cut at %d: streamed %v, not streamed %v", a.text, n, whole, cut)
			}
		}
	}
}

// splitRandom cuts s at up to 8 random character boundaries, or at every
// one.
func splitRandom(r *rand.Rand, s string) []string {
	var cuts []int
	if r.Intn(8) == 0 {
		for i := 1; i < len(s); i++ {
			cuts = append(cuts, i)
		}
	} else {
		for k := r.Intn(9); k > 0 && len(s) > 1; k-- {
			cuts = append(cuts, 1+r.Intn(len(s)-1))
		}
	}
	cuts = slices.DeleteFunc(cuts, func(i int) bool { return !utf8.RuneStart(s[i]) })
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var pieces []string
	prev := 0
	for _, c := range append(cuts, len(s)) {
		pieces = append(pieces, s[prev:c])
		prev = c
	}
	return pieces
}

// streamPieces runs pieces through a chat streamer under plan, the last
// finishing with finish, and returns the SSE body its chunks make.
func streamPieces(t *testing.T, plan openai.ToolPlan, pieces []string, finish string) string {
	t.Helper()
	cs := &chatStreamer{id: "chatcmpl-x", tools: plan, parsers: map[int]toolparse.Parser{}, called: map[int]bool{}, newID: toolCallID}
	var b strings.Builder
	write := func(v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("data: " + string(data) + "\n\n")
	}
	for i, p := range pieces {
		ev := &choiceEvent{text: p}
		if i == len(pieces)-1 {
			ev.finish = finish
		}
		switch out := cs.chunk(ev, nil, nil).(type) {
		case nil:
		case chunks:
			for _, c := range out {
				write(c)
			}
		default:
			write(out)
		}
	}
	return b.String()
}
