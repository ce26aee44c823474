package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/wire"
)

// TestResponsesForcedToolStream: under tool_choice named or "required" a
// function_call item is added once its name is generated, and its
// arguments stream as function_call_arguments.delta events, piece by
// piece, before its done events; the items equal the same answer's not
// streamed.
func TestResponsesForcedToolStream(t *testing.T) {
	tests := []struct {
		name, choice string
		answer       []string
		reason       wire.FinishReason
		want         []string // the items' events, summed up
	}{
		{"named", `{"type":"function","name":"get_weather"}`, []string{`{"ci`, `ty": `, `"Zürich"}`}, wire.FinishStop, []string{
			"added function_call get_weather", `delta {"ci`, `delta ty":`, `delta "Zürich"}`,
			`arguments done {"city":"Zürich"}`, "item done function_call completed"}},
		{"required, two calls", `"required"`, []string{`[{"name": "get_weather", "parameters": {"city": "Zü`, `rich"}}, {"name": "get_time", `, `"parameters": {}}]`}, wire.FinishStop, []string{
			"added function_call get_weather", `delta {"city":"Zü`, `delta rich"}`, `arguments done {"city":"Zürich"}`, "item done function_call completed",
			"added function_call get_time", "delta {}", "arguments done {}", "item done function_call completed"}},
		{"named, cut by max_output_tokens", `{"type":"function","name":"get_weather"}`, []string{`{"city": `, `"Zü`}, wire.FinishLength, []string{
			"added function_call get_weather", `delta {"city":`, `delta "Zü`, `arguments done {"city":"Zü`, "item done function_call incomplete"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{script: func(*wire.EngineCoreRequest) []wire.EngineCoreOutput {
				return outputs(tc.reason, eosIf(tc.reason), tc.answer...)
			}}
			url := toolServer(t, f, "", tokenizer.NewByte())
			req := `{"input":"Weather?",` + respToolsBody + `,"tool_choice":` + tc.choice + `,"max_output_tokens":100`
			code, body := postTo(t, url, "/v1/responses", req+`,"stream":true}`)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, body)
			}
			evs := sseEvents(t, respCallIDs.ReplaceAllString(body, "call_ID"))
			var got []string
			for _, ev := range evs {
				var e struct {
					Delta, Arguments string
					Item             struct{ Type, Name, Status string }
				}
				if err := json.Unmarshal(ev.data, &e); err != nil {
					t.Fatal(err)
				}
				switch ev.typ {
				case "response.output_item.added":
					got = append(got, "added "+e.Item.Type+" "+e.Item.Name)
				case "response.function_call_arguments.delta":
					got = append(got, "delta "+e.Delta)
				case "response.function_call_arguments.done":
					got = append(got, "arguments done "+e.Arguments)
				case "response.output_item.done":
					got = append(got, "item done "+e.Item.Type+" "+e.Item.Status)
				case "response.output_text.delta":
					got = append(got, "text "+e.Delta)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s\n%s", diff, body)
			}
			var done struct {
				Response struct{ Output json.RawMessage }
			}
			if err := json.Unmarshal(evs[len(evs)-1].data, &done); err != nil {
				t.Fatal(err)
			}
			_, whole := postTo(t, url, "/v1/responses", req+`}`)
			var r struct{ Output json.RawMessage }
			if err := json.Unmarshal([]byte(respCallIDs.ReplaceAllString(whole, "call_ID")), &r); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(r.Output), string(done.Response.Output)); diff != "" || !strings.Contains(string(r.Output), `"function_call"`) {
				t.Errorf("not streamed (-) and streamed (+):\n%s", diff)
			}
		})
	}
}
