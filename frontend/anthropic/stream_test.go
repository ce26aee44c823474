package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// transcript is a stream's events as `name data` lines.
func transcript(t *testing.T, evs []Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		j, err := json.Marshal(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name + " " + string(j) + "\n")
	}
	return b.String()
}

func TestStream(t *testing.T) {
	u := Usage{InputTokens: 7, CacheReadInputTokens: 3, OutputTokens: 4}
	start := `message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,` +
		`"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":0}}}` + "\n"
	end := func(reason string) string {
		return `message_delta {"type":"message_delta","delta":{"stop_reason":"` + reason + `","stop_sequence":null},` +
			`"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":4}}` + "\n" +
			`message_stop {"type":"message_stop"}` + "\n"
	}
	tests := []struct {
		name  string
		write func(s *Stream)
		want  string
	}{
		{"text", func(s *Stream) { s.Text("Hi"); s.Text(""); s.Text(" there"); s.Finish(StopEndTurn, nil, u) },
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n" +
				`ping {"type":"ping"}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":0}` + "\n" + end("end_turn")},
		{"no content", func(s *Stream) { s.Text(""); s.InputJSON("{}"); s.Finish(StopEndTurn, nil, u) },
			`ping {"type":"ping"}` + "\n" + end("end_turn")},
		{"text then tools", func(s *Stream) {
			s.Text("Let me check.")
			s.ToolUse("toolu_1", "get")
			s.InputJSON(`{"city":`)
			s.InputJSON("")
			s.InputJSON(`"Paris"}`)
			s.ToolUse("toolu_2", "time")
			s.Finish(StopToolUse, nil, u)
		},
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n" +
				`ping {"type":"ping"}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":0}` + "\n" +
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":1}` + "\n" +
				`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"time","input":{}}}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":2}` + "\n" + end("tool_use")},
		{"tool first, text after", func(s *Stream) {
			s.ToolUse("toolu_1", "get")
			s.Text("done")
			s.InputJSON(`{}`) // the tool block is closed: dropped
			s.Finish(StopToolUse, nil, u)
		},
			`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}` + "\n" +
				`ping {"type":"ping"}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":0}` + "\n" +
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}` + "\n" +
				`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"done"}}` + "\n" +
				`content_block_stop {"type":"content_block_stop","index":1}` + "\n" + end("tool_use")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Stream
			resp := NewResponse("msg_1", "m", Usage{InputTokens: 7, CacheReadInputTokens: 3})
			resp.StopReason = ptr("ignored") // message_start never carries one
			s.Start(resp)
			tc.write(&s)
			if diff := cmp.Diff(start+tc.want, transcript(t, s.Take())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(s.Take()) != 0 {
				t.Error("Take twice returned events twice")
			}
		})
	}
}

func TestStreamStopSequenceAndError(t *testing.T) {
	var s Stream
	seq := "END"
	s.Finish(StopSequence, &seq, Usage{})
	got := transcript(t, append(s.Take(), ErrorEvent(NewError(503, "engine died"))))
	want := `ping {"type":"ping"}` + "\n" +
		`message_delta {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}` + "\n" +
		`message_stop {"type":"message_stop"}` + "\n" +
		`error {"type":"error","error":{"type":"overloaded_error","message":"engine died"}}` + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
