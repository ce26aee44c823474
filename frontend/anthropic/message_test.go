package anthropic

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStopReasonOf(t *testing.T) {
	seq := "END"
	tests := []struct {
		name     string
		finish   string
		stop     *string
		toolUse  bool
		want     string
		wantStop *string
	}{
		{"eos", "stop", nil, false, StopEndTurn, nil},
		{"stop sequence", "stop", &seq, false, StopSequence, &seq},
		{"tool use", "stop", nil, true, StopToolUse, nil},
		{"tool use wins over a stop sequence", "stop", &seq, true, StopToolUse, nil},
		{"length", "length", nil, false, StopMaxTokens, nil},
		{"length with a cut call", "length", nil, true, StopMaxTokens, nil},
		{"abort", "abort", nil, false, StopEndTurn, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, stop := StopReasonOf(tc.finish, tc.stop, tc.toolUse)
			if got != tc.want || stop != tc.wantStop {
				t.Errorf("got %q %v, want %q %v", got, stop, tc.want, tc.wantStop)
			}
		})
	}
}

func TestUsageOf(t *testing.T) {
	tests := []struct {
		prompt, cached, out int
		want                Usage
	}{
		{10, 0, 3, Usage{InputTokens: 10, OutputTokens: 3}},
		{10, 4, 3, Usage{InputTokens: 6, CacheReadInputTokens: 4, OutputTokens: 3}},
		{10, 12, 0, Usage{CacheReadInputTokens: 10}},
		{10, -1, 0, Usage{InputTokens: 10}},
	}
	for _, tc := range tests {
		if got := UsageOf(tc.prompt, tc.cached, tc.out); got != tc.want {
			t.Errorf("UsageOf(%d, %d, %d) = %+v, want %+v", tc.prompt, tc.cached, tc.out, got, tc.want)
		}
	}
}

func TestBuilder(t *testing.T) {
	var b Builder
	b.InputJSON(`{"lost":1}`) // no tool_use open: dropped
	b.Text("Hel")
	b.Text("")
	b.Text("lo")
	b.ToolUse("toolu_1", "get")
	b.InputJSON(`{"city":`)
	b.InputJSON(` "Paris"}`)
	b.ToolUse("toolu_2", "cut")
	b.InputJSON(`{"ci`)
	b.ToolUse("toolu_3", "none")
	b.Text("after")
	if !b.ToolUsed() {
		t.Error("ToolUsed false")
	}
	got, err := json.Marshal(NewResponse("msg_1", "m", UsageOf(5, 1, 2)).Finished(b.Blocks(), StopToolUse, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hello"},` +
		`{"type":"tool_use","id":"toolu_1","name":"get","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"cut","input":{}},` +
		`{"type":"tool_use","id":"toolu_3","name":"none","input":{}},{"type":"text","text":"after"}],"stop_reason":"tool_use","stop_sequence":null,` +
		`"usage":{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":1,"output_tokens":2}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var empty Builder
	if got, _ := json.Marshal(NewResponse("m", "m", Usage{}).Finished(empty.Blocks(), StopEndTurn, nil)); !json.Valid(got) || empty.ToolUsed() {
		t.Errorf("empty: %s", got)
	}
}

func TestInputObject(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": [1, 2]}`: `{"a":[1,2]}`,
		`{"a":`:         `{}`,
		`[1]`:           `{}`,
		`"x"`:           `{}`,
		``:              `{}`,
	} {
		if got := string(InputObject(in)); got != want {
			t.Errorf("InputObject(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{http.StatusBadRequest, "invalid_request_error"},
		{http.StatusUnauthorized, "authentication_error"},
		{http.StatusForbidden, "permission_error"},
		{http.StatusNotFound, "not_found_error"},
		{http.StatusMethodNotAllowed, "invalid_request_error"},
		{http.StatusRequestEntityTooLarge, "request_too_large"},
		{http.StatusTooManyRequests, "rate_limit_error"},
		{http.StatusInternalServerError, "api_error"},
		{http.StatusServiceUnavailable, "overloaded_error"},
		{529, "overloaded_error"},
		{http.StatusGatewayTimeout, "timeout_error"},
	}
	for _, tc := range tests {
		if got := TypeOf(tc.status); got != tc.want {
			t.Errorf("TypeOf(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
	got, _ := json.Marshal(NewError(http.StatusNotFound, "no such route"))
	if want := `{"type":"error","error":{"type":"not_found_error","message":"no such route"}}`; string(got) != want {
		t.Errorf("%s, want %s", got, want)
	}
}
