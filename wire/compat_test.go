package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

// ext is a msgpack ext value (fixext1, type 3: vLLM's raw view), standing
// for a field a newer peer might append.
var ext = msgpack.RawMessage{0xd4, 0x03, 0x01}

// TestDecodeTolerance decodes hand-built payloads (vmihailenco's reflection
// encoder, independent of ours) that an older, newer or Python peer could
// send.
func TestDecodeTolerance(t *testing.T) {
	def := wire.DefaultSamplingParams()
	withSP := func(f func(p *wire.SamplingParams)) *wire.EngineCoreRequest {
		p := wire.DefaultSamplingParams()
		f(&p)
		return &wire.EngineCoreRequest{RequestID: "r", SamplingParams: p}
	}
	tests := []struct {
		name    string
		typ     wire.MsgType
		payload any // encoded with msgpack.Marshal
		want    any
	}{
		{
			name: "add with extra trailing fields",
			typ:  wire.MsgAdd,
			payload: []any{"r", []int{1, 2}, map[string]any{"max_tokens": 8}, 1.5, "salt", 0, 2, "ext-id", "sess", "flow", nil, nil,
				"future", []any{map[string]any{"deep": []any{1, ext}}}, ext, nil},
			want: &wire.EngineCoreRequest{
				RequestID: "r", PromptTokenIDs: []int32{1, 2},
				SamplingParams: func() wire.SamplingParams { p := def; p.MaxTokens = 8; return p }(),
				ArrivalTime:    1.5, CacheSalt: "salt", DataParallelRank: ptr(0), Priority: 2,
				ExternalReqID: "ext-id", SessionID: "sess", FlowID: "flow",
			},
		},
		{
			name:    "add with missing trailing fields",
			typ:     wire.MsgAdd,
			payload: []any{"r", []int{5}},
			want:    &wire.EngineCoreRequest{RequestID: "r", PromptTokenIDs: []int32{5}, SamplingParams: def},
		},
		{
			name:    "add as an empty array",
			typ:     wire.MsgAdd,
			payload: []any{},
			want:    &wire.EngineCoreRequest{SamplingParams: def},
		},
		{
			name:    "add with nil elements",
			typ:     wire.MsgAdd,
			payload: []any{nil, nil, nil, nil, nil, nil, nil, nil, nil},
			want:    &wire.EngineCoreRequest{SamplingParams: def},
		},
		{
			name: "sampling params: unknown keys ignored",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[string]any{
				"stop": []any{}, "output_kind": 1, "_all_stop_token_ids": []int{2}, "skip_clone": true,
				"structured_outputs": map[string]any{"json": map[string]any{"type": "object"}},
				"temperature":        0.5,
			}},
			// structured_outputs is vLLM's dataclass; its json a dict here.
			want: withSP(func(p *wire.SamplingParams) {
				p.Temperature = 0.5
				p.StructuredOutputs = &wire.StructuredOutputs{JSON: `{"type":"object"}`}
			}),
		},
		{
			name: "structured outputs: vLLM's full dataclass map, unknown keys skipped",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[string]any{"structured_outputs": map[string]any{
				"json": nil, "regex": nil, "choice": []any{"yes", "no"}, "grammar": nil, "json_object": nil,
				"disable_any_whitespace": true, "disable_additional_properties": false, "whitespace_pattern": nil,
				"structural_tag": nil, "_backend": "guidance", "_backend_was_auto": true, "future": []any{1},
			}}},
			want: withSP(func(p *wire.SamplingParams) {
				p.StructuredOutputs = &wire.StructuredOutputs{Choice: []string{"yes", "no"}, DisableAnyWhitespace: true}
			}),
		},
		{
			name: "sampling params: ints where floats are expected, float32",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[string]any{
				"temperature": 0, "top_p": float32(0.5), "presence_penalty": -2, "repetition_penalty": uint64(2),
			}},
			want: withSP(func(p *wire.SamplingParams) {
				p.Temperature, p.TopP, p.PresencePenalty, p.RepetitionPenalty = 0, 0.5, -2, 2
			}),
		},
		{
			name: "sampling params: logit_bias with str and int keys",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[string]any{
				"logit_bias": map[any]any{"15043": -1, int64(7): 2.5, "-3": 0.25},
			}},
			want: withSP(func(p *wire.SamplingParams) {
				p.LogitBias = map[int32]float64{15043: -1, 7: 2.5, -3: 0.25}
			}),
		},
		{
			name: "sampling params: nil values are absent keys",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[string]any{
				"seed": nil, "temperature": nil, "logprobs": 5, "prompt_logprobs": nil, "max_tokens": nil,
			}},
			want: withSP(func(p *wire.SamplingParams) { p.Logprobs = ptr(5) }),
		},
		{
			name: "sampling params: non-str keys skipped",
			typ:  wire.MsgAdd,
			payload: []any{"r", nil, map[any]any{
				int64(1): "x", "top_k": 40,
			}},
			want: withSP(func(p *wire.SamplingParams) { p.TopK = 40 }),
		},
		{
			name:    "outputs: missing trailing fields",
			typ:     wire.MsgOutputs,
			payload: []any{3, []any{[]any{"a", []int{9}}}},
			want:    &wire.EngineCoreOutputs{EngineIndex: 3, Outputs: []wire.EngineCoreOutput{{RequestID: "a", NewTokenIDs: []int32{9}}}},
		},
		{
			name: "outputs: vLLM's EngineCoreEvent maps at index 7 (unknown keys and types kept)",
			typ:  wire.MsgOutputs,
			payload: []any{0, []any{[]any{"a", []int{5}, nil, nil, nil, 0, 0, []any{
				map[string]any{"type": 1, "timestamp": 10.5},
				map[string]any{"timestamp": 11, "type": 2, "note": "x"},
				map[string]any{"type": 9, "timestamp": 12.25},
			}}}},
			want: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{{RequestID: "a", NewTokenIDs: []int32{5}, Events: []wire.EngineCoreEvent{
				{Type: wire.EventQueued, Timestamp: 10.5}, {Type: wire.EventScheduled, Timestamp: 11}, {Type: 9, Timestamp: 12.25},
			}}}},
		},
		{
			name: "outputs: vLLM-style extra fields, finish and stop reasons",
			typ:  wire.MsgOutputs,
			payload: []any{0, []any{
				[]any{"a", []int{2}, nil, 0, 2, 5, nil, nil, nil},
				[]any{"b", []int{}, nil, 1, nil, 0},
				[]any{"c", nil, nil, 2, "</s>", 0},
				[]any{"d", nil, []any{[]any{[]int{1, 2}}, []any{[]any{-0.5, float32(-1.5)}}, []int{1}, nil}, 3, nil, 0},
				[]any{"e", nil, nil, nil, nil, 0},
			}, map[string]any{"num_running_reqs": 4, "kv_cache_usage": 1, "spec_decoding_stats": nil, "iteration_details": []any{1}},
				7.5, []string{"a"}, nil, nil, nil},
			want: &wire.EngineCoreOutputs{
				Outputs: []wire.EngineCoreOutput{
					{RequestID: "a", NewTokenIDs: []int32{2}, FinishReason: wire.FinishStop, StopReason: int64(2), NumCachedTokens: 5},
					{RequestID: "b", FinishReason: wire.FinishLength},
					{RequestID: "c", FinishReason: wire.FinishAbort, StopReason: "</s>"},
					{RequestID: "d", FinishReason: wire.FinishError, NewLogprobs: &wire.Logprobs{
						TokenIDs: [][]int32{{1, 2}}, Logprobs: [][]float64{{-0.5, -1.5}}, Ranks: []int32{1},
					}},
					{RequestID: "e"},
				},
				SchedulerStats:   &wire.SchedulerStats{NumRunningReqs: 4, KVCacheUsage: 1},
				Timestamp:        7.5,
				FinishedRequests: []string{"a"},
			},
		},
		{
			name:    "hello with extra fields",
			typ:     wire.MsgHello,
			payload: []any{1, "fe", 12, "new-field", map[string]any{"x": 1}},
			want:    &wire.Hello{ProtocolVersion: 1, FrontendID: "fe", PID: 12},
		},
		{
			name:    "hello from an older peer",
			typ:     wire.MsgHello,
			payload: []any{1},
			want:    &wire.Hello{ProtocolVersion: 1},
		},
		{
			name:    "ready with nil error and missing tail",
			typ:     wire.MsgReady,
			payload: []any{1, 0, nil, "m"},
			want:    &wire.Ready{ProtocolVersion: 1, Model: "m", MaxLogprobs: wire.DefaultMaxLogprobs},
		},
		{
			name:    "utility with nil args",
			typ:     wire.MsgUtility,
			payload: []any{uint64(1) << 63, "get_stats", nil},
			want:    &wire.Utility{CallID: 1 << 63, Method: "get_stats"},
		},
		{
			name:    "utility result captures the raw bytes of a vLLM-style result",
			typ:     wire.MsgUtilityResult,
			payload: []any{5, nil, []any{nil, true}},
			want:    &wire.UtilityResult{CallID: 5, Result: wire.Raw{0x92, 0xc0, 0xc3}},
		},
		{
			name:    "abort as nil",
			typ:     wire.MsgAbort,
			payload: nil,
			want:    &wire.Abort{},
		},
		{
			name:    "heartbeat with ints for the timestamp",
			typ:     wire.MsgHeartbeat,
			payload: []any{17, 1, 2},
			want:    &wire.Heartbeat{Timestamp: 17, NumRunning: 1, NumWaiting: 2},
		},
		{
			name:    "engine dead with extra fields",
			typ:     wire.MsgEngineDead,
			payload: []any{"gone", 1, ext},
			want:    &wire.EngineDead{Reason: "gone"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, got, err := wire.Decode([][]byte{{byte(tt.typ)}, mp(t, tt.payload)})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if typ != tt.typ {
				t.Errorf("type = %s, want %s", typ, tt.typ)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalMaps(t *testing.T) {
	t.Run("session info: unknown keys ignored, missing keys zero", func(t *testing.T) {
		b := mp(t, map[string]any{"session_id": "s", "num_running": 2, "future_key": []any{1, 2}, "last_active": 3})
		var got wire.SessionInfo
		if err := wire.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := wire.SessionInfo{SessionID: "s", NumRunning: 2, LastActive: 3}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("decoding resets the target", func(t *testing.T) {
		got := *sampleSessionInfo()
		if err := wire.Unmarshal(mp(t, map[string]any{"session_id": "x"}), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wire.SessionInfo{SessionID: "x"}, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestDecodeErrors(t *testing.T) {
	add := func(payload any) [][]byte { return [][]byte{{byte(wire.MsgAdd)}, mp(t, payload)} }
	outputs := func(payload any) [][]byte { return [][]byte{{byte(wire.MsgOutputs)}, mp(t, payload)} }
	tests := []struct {
		name    string
		frames  [][]byte
		wantMsg string // a substring of the error
	}{
		{"no frames", nil, "0 frames"},
		{"identity frame left on", [][]byte{{0, 0}, {0}, mp(t, []any{})}, "3 frames"},
		{"long type frame", [][]byte{{0, 0}, mp(t, []any{})}, "type frame"},
		{"unknown type", [][]byte{{0x02}, mp(t, []any{})}, "unknown message type 0x02"},
		{"empty payload", [][]byte{{byte(wire.MsgHello)}, {}}, "unexpected EOF"},
		{"trailing bytes", [][]byte{{byte(wire.MsgHello)}, append(mp(t, []any{1}), 0x01)}, "trailing"},
		{"payload of another type", [][]byte{{byte(wire.MsgHello)}, mp(t, map[string]any{"a": 1})}, "want array"},
		{"request_id not a str", add([]any{1}), "request_id: want str"},
		{"token id overflows int32", add([]any{"r", []int64{1, 1 << 40}}), "prompt_token_ids: [1]: int 1099511627776 overflows int32"},
		{"float token id", add([]any{"r", []any{1.5}}), "want int"},
		{"sampling params not a map", add([]any{"r", nil, []any{}}), "want map"},
		{"max_tokens a float", add([]any{"r", nil, map[string]any{"max_tokens": 1.5}}), "max_tokens"},
		{"bad logit_bias key", add([]any{"r", nil, map[string]any{"logit_bias": map[string]any{"x": 1}}}), `logit_bias key "x"`},
		{"extra_args not a map", add([]any{"r", nil, map[string]any{"extra_args": []any{}}}), "extra_args"},
		{"unknown finish reason", outputs([]any{0, []any{[]any{"a", nil, nil, 4}}}), "unknown finish_reason 4"},
		{"negative finish reason", outputs([]any{0, []any{[]any{"a", nil, nil, -1}}}), "unknown finish_reason -1"},
		{"float stop reason", outputs([]any{0, []any{[]any{"a", nil, nil, 0, 1.5}}}), "stop_reason"},
		{"negative call id", [][]byte{{byte(wire.MsgUtility)}, mp(t, []any{-1, "m"})}, "want unsigned int"},
		{"ext in args", [][]byte{{byte(wire.MsgUtility)}, mp(t, []any{1, "m", []any{ext}})}, "unsupported ext"},
		{"int map key in args", [][]byte{{byte(wire.MsgUtility)}, mp(t, []any{1, "m", []any{map[int]int{1: 1}}})}, "want str map key"},
		{"truncated str", [][]byte{{byte(wire.MsgAdd)}, mp(t, []any{"request"})[:4]}, "str of length 7 declared with only 2 bytes left"},
		{"truncated float", [][]byte{{byte(wire.MsgHeartbeat)}, mp(t, []any{1.5})[:5]}, "unexpected EOF"},
		{"reserved code 0xc1", [][]byte{{byte(wire.MsgEngineDead)}, {0x92, 0xa0, 0xc1}}, "0xc1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v, err := wire.Decode(tt.frames)
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("Decode error = %v (value %+v), want ErrMalformed", err, v)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Decode error = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		v    any
	}{
		{"empty input", nil, new(wire.SessionInfo)},
		{"nil target", []byte{0x80}, (*wire.SessionInfo)(nil)},
		{"unsupported target", []byte{0x01}, new(complex128)},
		{"non-pointer target", []byte{0x90}, []wire.SessionInfo{}},
		{"trailing bytes", []byte{0x01, 0x02}, new(int)},
		{"wrong kind", []byte{0xa1, 'x'}, new(wire.LoadReport)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := wire.Unmarshal(tt.b, tt.v); !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("Unmarshal error = %v, want ErrMalformed", err)
			}
		})
	}
}
