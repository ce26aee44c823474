package wire_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

// TestRoundTrip encodes each payload, decodes it and compares with want
// (the payload itself unless the wire form normalises it).
func TestRoundTrip(t *testing.T) {
	minimalReq := &wire.EngineCoreRequest{RequestID: "r", SamplingParams: wire.DefaultSamplingParams()}
	fullReq := sampleAdd()
	fullReq.SamplingParams = fullSamplingParams()
	fullReq.Priority = -3
	fullReq.DataParallelRank = ptr(7)

	tests := []struct {
		name    string
		typ     wire.MsgType
		payload any
		want    any // nil: same as payload
	}{
		{name: "add", typ: wire.MsgAdd, payload: sampleAdd()},
		{name: "add minimal (defaults, empty strings as nil)", typ: wire.MsgAdd, payload: minimalReq},
		{name: "add every sampling param set", typ: wire.MsgAdd, payload: fullReq},
		{name: "add by value", typ: wire.MsgAdd, payload: *sampleAdd(), want: sampleAdd()},
		{
			name: "add empty slices decode as nil", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{PromptTokenIDs: []int32{}, SamplingParams: wire.SamplingParams{
				N: 1, RepetitionPenalty: 1, Temperature: 1, TopP: 1, MaxTokens: 16,
				StopTokenIDs: []int32{}, LogitBias: map[int32]float64{}, ExtraArgs: map[string]any{},
			}},
			want: &wire.EngineCoreRequest{SamplingParams: wire.DefaultSamplingParams()},
		},
		{name: "abort", typ: wire.MsgAbort, payload: &wire.Abort{RequestIDs: []string{"a", "b"}}},
		{name: "abort empty", typ: wire.MsgAbort, payload: &wire.Abort{}},
		{
			name: "utility with every arg kind", typ: wire.MsgUtility,
			payload: &wire.Utility{CallID: math.MaxUint64, Method: "m", Args: []any{
				nil, true, false, int64(-5), int64(1) << 40, uint64(math.MaxUint64), 3.5, "s", []byte{0, 1},
				[]any{int64(1), "x", []any{}}, map[string]any{"k": int64(1), "m": map[string]any{}},
			}},
		},
		{
			name: "utility args of Go types normalise", typ: wire.MsgUtility,
			payload: &wire.Utility{Method: "m", Args: []any{7, int32(-1), uint8(200), float32(0.5), []string{"a"}, map[string]int{"b": 2}}},
			want:    &wire.Utility{Method: "m", Args: []any{int64(7), int64(-1), int64(200), 0.5, []any{"a"}, map[string]any{"b": int64(2)}}},
		},
		{name: "utility no args", typ: wire.MsgUtility, payload: &wire.Utility{CallID: 1, Method: "get_stats"}},
		{name: "hello", typ: wire.MsgHello, payload: &wire.Hello{ProtocolVersion: 1, FrontendID: "fe", PID: 99}},
		{name: "heartbeat", typ: wire.MsgHeartbeat, payload: &wire.Heartbeat{Timestamp: 1.5, NumRunning: 2, NumWaiting: 3, SchedulerStats: &wire.SchedulerStats{KVCacheUsage: 0.5}}},
		{name: "heartbeat with deferred requests", typ: wire.MsgHeartbeat, payload: &wire.Heartbeat{NumWaiting: 3,
			SchedulerStats: &wire.SchedulerStats{NumWaitingReqs: 3, NumSkippedWaitingReqs: 2}}},
		{name: "heartbeat with adds seen zero", typ: wire.MsgHeartbeat, payload: &wire.Heartbeat{NumRunning: 1,
			SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 1, AddsSeen: ptr(int64(0))}}},
		{name: "outputs with adds seen after the other keys", typ: wire.MsgOutputs, payload: &wire.EngineCoreOutputs{
			SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 1, Sleeping: true, SleepLevel: 1, AddsSeen: ptr(int64(1) << 40)}}},
		{name: "ready", typ: wire.MsgReady, payload: sampleReady()},
		{name: "ready with a classification head (index 18; 16, 17 unset)", typ: wire.MsgReady, payload: &wire.Ready{ProtocolVersion: 1, Model: "r",
			EOSTokenIDs: []int32{2}, MaxLogprobs: 20, ClassifierLabels: []string{"yes", "no"}}},
		{name: "ready refused", typ: wire.MsgReady, payload: &wire.Ready{ProtocolVersion: 1, Error: "bad version"}},
		{name: "outputs", typ: wire.MsgOutputs, payload: sampleOutputs()},
		{
			name: "outputs every finish reason and stop reason kind", typ: wire.MsgOutputs,
			payload: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", FinishReason: wire.FinishStop, StopReason: "</s>"},
				{RequestID: "b", FinishReason: wire.FinishLength},
				{RequestID: "c", FinishReason: wire.FinishAbort},
				{RequestID: "d", FinishReason: wire.FinishError},
				{RequestID: "e", FinishReason: wire.FinishStop, StopReason: int32(7)},
			}},
			want: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", FinishReason: wire.FinishStop, StopReason: "</s>"},
				{RequestID: "b", FinishReason: wire.FinishLength},
				{RequestID: "c", FinishReason: wire.FinishAbort},
				{RequestID: "d", FinishReason: wire.FinishError},
				{RequestID: "e", FinishReason: wire.FinishStop, StopReason: int64(7)},
			}},
		},
		{
			name: "outputs with prompt logprobs (index 8)", typ: wire.MsgOutputs,
			payload: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", NewTokenIDs: []int32{3}, NewPromptLogprobs: &wire.Logprobs{
					TokenIDs: [][]int32{{7, 1, 7}, {8, 1, 2}}, Logprobs: [][]float64{{-0.5, -0.25, -0.5}, {-3, -0.1, -1}}, Ranks: []int32{2, 4},
				}},
				{RequestID: "b", NewTokenIDs: []int32{4}},
			}},
		},
		{
			name: "outputs with prompt progress (index 9), with and without prompt logprobs", typ: wire.MsgOutputs,
			payload: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", NumCachedTokens: 32, PromptProgress: 544},
				{RequestID: "b", PromptProgress: 2, NewPromptLogprobs: &wire.Logprobs{TokenIDs: [][]int32{{7, 1}}, Logprobs: [][]float64{{-0.5, -0.25}}, Ranks: []int32{2}}},
			}},
		},
		{
			name: "outputs with spec decode (index 10), with and without the fields before it", typ: wire.MsgOutputs,
			payload: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", NewTokenIDs: []int32{3, 4, 5}, SpecDecode: &wire.SpecDecodeStep{NumSpecTokens: 4, NumDraftTokens: 4, NumAcceptedTokens: 2}},
				{RequestID: "b", NewTokenIDs: []int32{9}, PromptProgress: 3, SpecDecode: &wire.SpecDecodeStep{NumSpecTokens: 4, NumDraftTokens: 1}},
				{RequestID: "c", NewTokenIDs: []int32{1}},
			}, SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 2, SpecDecoding: &wire.SpecDecodingStats{
				NumSpecTokens: 4, NumDrafts: 7, NumDraftTokens: 25, NumAcceptedTokens: 11, NumAcceptedTokensPerPos: []int64{6, 3, 2, 0},
			}}},
		},
		{
			name: "outputs with a pooling output (index 11), with and without the fields before it", typ: wire.MsgOutputs,
			payload: &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
				{RequestID: "a", FinishReason: wire.FinishStop, PoolingOutput: []float32{0.5, -1.25, float32(math.Inf(1)), 3e-38}},
				{RequestID: "b", PromptProgress: 3, SpecDecode: &wire.SpecDecodeStep{NumSpecTokens: 4}, PoolingOutput: []float32{1}},
				{RequestID: "c", NewTokenIDs: []int32{1}},
			}},
		},
		{
			name: "add embedding request (index 10)", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "e", PromptTokenIDs: []int32{1, 2}, SamplingParams: wire.DefaultSamplingParams(),
				Pooling: &wire.PoolingParams{PoolingType: wire.PoolingMean, Normalize: true, Dimensions: 64}},
		},
		{
			name: "add with LoRA adapters (index 11, index 10 nil)", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "l", PromptTokenIDs: []int32{1}, SamplingParams: wire.DefaultSamplingParams(),
				LoRA: []wire.LoRARequest{{Name: "sql", ID: 1, Path: "/a/sql.gguf", Scale: 1}, {Name: "tone", ID: 2, Path: "/a/t.gguf", Scale: 0.25}}},
		},
		{
			name: "add embedding with a LoRA adapter", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "le", SamplingParams: wire.DefaultSamplingParams(), Pooling: &wire.PoolingParams{},
				LoRA: []wire.LoRARequest{{Name: "x", ID: 3, Path: "x.gguf", Scale: -0.5}}},
		},
		{
			name: "ready with LoRA adapters (index 17, index 16 empty)", typ: wire.MsgReady,
			payload: &wire.Ready{ProtocolVersion: 1, Model: "m", MaxLogprobs: 20, MaxLoRAs: 8},
		},
		{
			name: "ready with the engine's pooling (index 16)", typ: wire.MsgReady,
			payload: &wire.Ready{ProtocolVersion: 1, Model: "m", MaxLogprobs: 20, Pooling: wire.PoolingNone},
		},
		{
			name: "add embedding request with the engine's defaults", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "e", SamplingParams: wire.DefaultSamplingParams(), Pooling: &wire.PoolingParams{}},
		},
		{
			name: "add with per-request speculative limits", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "r", SamplingParams: func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				p.SpecMaxDraft, p.SpecMinDraft = ptr(0), ptr(2)
				return p
			}()},
		},
		{
			name: "add with think tags before a constraint", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "r", SamplingParams: func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				p.StructuredOutputs = &wire.StructuredOutputs{JSONObject: true}
				p.ReasoningStart, p.ReasoningEnd = "<think>", "</think>"
				p.ThinkingTokenBudget, p.ReasoningBudgetMessage = ptr(0), "Time is up."
				return p
			}()},
		},
		{
			name: "add with return progress", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "r", SamplingParams: func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				p.ReturnProgress = true
				return p
			}()},
		},
		{
			name: "add with context shift", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "r", SamplingParams: func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				keep := 5
				p.ContextShift = &keep
				return p
			}()},
		},
		{
			name: "add with allowed_token_ids and logprob_token_ids set but empty", typ: wire.MsgAdd,
			payload: &wire.EngineCoreRequest{RequestID: "r", SamplingParams: func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				p.AllowedTokenIDs, p.LogprobTokenIDs, p.Logprobs, p.PromptLogprobs = []int32{}, []int32{}, ptr(-1), ptr(-1)
				return p
			}()},
		},
		{name: "outputs empty", typ: wire.MsgOutputs, payload: &wire.EngineCoreOutputs{Timestamp: 2}},
		{name: "utility result", typ: wire.MsgUtilityResult, payload: sampleUtilityResult(t)},
		{
			name: "utility result failure with nil result", typ: wire.MsgUtilityResult,
			payload: &wire.UtilityResult{CallID: 3, FailureMessage: "no such method"},
		},
		{name: "utility result bool", typ: wire.MsgUtilityResult, payload: &wire.UtilityResult{CallID: 4, Result: wire.Raw{0xc3}}},
		{name: "engine dead", typ: wire.MsgEngineDead, payload: &wire.EngineDead{Reason: "oom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frames, err := wire.Encode(tt.typ, tt.payload)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if len(frames) != 2 || !bytes.Equal(frames[0], []byte{byte(tt.typ)}) {
				t.Fatalf("frames[0] = %x, want [%02x] (of 2 frames, got %d)", frames[0], byte(tt.typ), len(frames))
			}
			typ, got, err := wire.Decode(frames)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if typ != tt.typ {
				t.Errorf("Decode type = %s, want %s", typ, tt.typ)
			}
			want := tt.want
			if want == nil {
				want = tt.payload
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSamplingParamsOmitDefaults(t *testing.T) {
	tests := []struct {
		name string
		p    wire.SamplingParams
		want []byte
	}{
		{"defaults are an empty map", wire.DefaultSamplingParams(), []byte{0x80}},
		{
			"only changed keys", func() wire.SamplingParams {
				p := wire.DefaultSamplingParams()
				p.MaxTokens = 32
				p.IgnoreEOS = true
				return p
			}(),
			// {"ignore_eos": true, "max_tokens": 32}, in vLLM's field order.
			append(append([]byte{0x82, 0xaa}, "ignore_eos\xc3"...), append([]byte{0xaa}, "max_tokens\x20"...)...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.Marshal(&tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("Marshal = % x, want % x", got, tt.want)
			}
			var back wire.SamplingParams
			if err := wire.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.p, back); diff != "" {
				t.Errorf("Unmarshal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMarshalUnmarshal covers the values that travel inside a
// UtilityResult or on the PUB socket.
func TestMarshalUnmarshal(t *testing.T) {
	infos := []wire.SessionInfo{*sampleSessionInfo(), {SessionID: "other"}}
	tests := []struct {
		name string
		in   any
		out  any // pointer to decode into
		want any
	}{
		{"session info", sampleSessionInfo(), new(wire.SessionInfo), sampleSessionInfo()},
		{"session info by value", *sampleSessionInfo(), new(wire.SessionInfo), sampleSessionInfo()},
		{"session info slice", infos, new([]wire.SessionInfo), &infos},
		{"empty session info slice", []wire.SessionInfo{}, new([]wire.SessionInfo), new([]wire.SessionInfo)},
		{"nil is the zero session info", nil, new(wire.SessionInfo), new(wire.SessionInfo)},
		{"bool", true, new(bool), ptr(true)},
		{"scheduler stats", sampleOutputs().SchedulerStats, new(wire.SchedulerStats), sampleOutputs().SchedulerStats},
		{"load report", sampleLoadReport(), new(wire.LoadReport), sampleLoadReport()},
		{"any map", map[string]any{"a": []any{int64(1)}}, new(any), ptr[any](map[string]any{"a": []any{int64(1)}})},
		{"raw", wire.Raw{0x92, 0x01, 0xa1, 0x78}, new(wire.Raw), &wire.Raw{0x92, 0x01, 0xa1, 0x78}},
		{"nil raw", wire.Raw{0xc0}, new(wire.Raw), new(wire.Raw)},
		{"strings", []string{"a", "b"}, new([]string), &[]string{"a", "b"}},
		{"float from int", 3, new(float64), ptr(3.0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := wire.Marshal(tt.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if err := wire.Unmarshal(b, tt.out); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.out); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestVmihailencoInterop checks that the EncodeMsgpack/DecodeMsgpack methods
// give the same bytes and values as Marshal/Unmarshal.
func TestVmihailencoInterop(t *testing.T) {
	values := []struct {
		name string
		in   any
		out  any
	}{
		{"request", sampleAdd(), new(wire.EngineCoreRequest)},
		{"outputs", sampleOutputs(), new(wire.EngineCoreOutputs)},
		{"utility result", sampleUtilityResult(t), new(wire.UtilityResult)},
		{"load report", sampleLoadReport(), new(wire.LoadReport)},
	}
	for _, v := range values {
		t.Run(v.name, func(t *testing.T) {
			want, err := wire.Marshal(v.in)
			if err != nil {
				t.Fatal(err)
			}
			got := mp(t, v.in)
			if !bytes.Equal(got, want) {
				t.Errorf("msgpack.Marshal = % x\nwire.Marshal    = % x", got, want)
			}
			if err := msgpack.Unmarshal(want, v.out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v.in, v.out); diff != "" {
				t.Errorf("msgpack.Unmarshal (-want +got):\n%s", diff)
			}
			// From a stream, where a Raw is re-encoded (map keys sorted)
			// rather than captured: compare what it decodes to.
			dec := msgpack.NewDecoder(oneByteReader{bytes.NewReader(want)})
			if err := dec.Decode(v.out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v.in, v.out, cmp.Transformer("raw", rawValue(t))); diff != "" {
				t.Errorf("stream decode (-want +got):\n%s", diff)
			}
		})
	}
}

func rawValue(t *testing.T) func(wire.Raw) any {
	return func(r wire.Raw) any {
		var v any
		if err := wire.Unmarshal(r, &v); err != nil {
			t.Errorf("Unmarshal(% x): %v", r, err)
		}
		return v
	}
}

// oneByteReader hides bytes.Reader's other methods, so the decoder sees a
// plain stream.
type oneByteReader struct{ r *bytes.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		typ     wire.MsgType
		payload any
	}{
		{"type mismatch", wire.MsgAbort, &wire.Hello{}},
		{"unknown type", wire.MsgType(0x02), &wire.Hello{}},
		{"nil payload", wire.MsgHello, nil},
		{"nil pointer payload", wire.MsgHello, (*wire.Hello)(nil)},
		{"foreign payload", wire.MsgHello, "hello"},
		{"unsupported arg", wire.MsgUtility, &wire.Utility{Args: []any{make(chan int)}}},
		{"unsupported stop reason", wire.MsgOutputs, &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{{StopReason: 1.5}}}},
		{"unknown finish reason", wire.MsgOutputs, &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{{FinishReason: 9}}}},
		{"malformed raw result", wire.MsgUtilityResult, &wire.UtilityResult{Result: wire.Raw{0x92, 0x01}}},
		{"raw result with trailing bytes", wire.MsgUtilityResult, &wire.UtilityResult{Result: wire.Raw{0x01, 0x02}}},
		{"cyclic args", wire.MsgUtility, func() *wire.Utility {
			s := []any{nil}
			s[0] = s
			return &wire.Utility{Args: s}
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wire.Encode(tt.typ, tt.payload)
			if !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("Encode error = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{wire.MsgAdd.String(), "ADD"},
		{wire.MsgAbort.String(), "ABORT"},
		{wire.MsgUtility.String(), "UTILITY"},
		{wire.MsgHello.String(), "HELLO"},
		{wire.MsgHeartbeat.String(), "HEARTBEAT"},
		{wire.MsgReady.String(), "READY"},
		{wire.MsgOutputs.String(), "OUTPUTS"},
		{wire.MsgUtilityResult.String(), "UTILITY_RESULT"},
		{wire.MsgEngineDead.String(), "ENGINE_DEAD"},
		{wire.MsgType(0x42).String(), "MsgType(0x42)"},
		{wire.FinishNone.String(), ""},
		{wire.FinishStop.String(), "stop"},
		{wire.FinishLength.String(), "length"},
		{wire.FinishAbort.String(), "abort"},
		{wire.FinishError.String(), "error"},
		{wire.FinishReason(9).String(), "FinishReason(9)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPubFrames(t *testing.T) {
	payload, err := wire.Marshal(sampleLoadReport())
	if err != nil {
		t.Fatal(err)
	}
	frames := wire.PubFrames(wire.TopicLoad, 258, payload)
	if want := []byte{0, 0, 0, 0, 0, 0, 1, 2}; !bytes.Equal(frames[1], want) {
		t.Errorf("sequence frame = % x, want % x", frames[1], want)
	}
	topic, seq, got, err := wire.ParsePub(frames)
	if err != nil || topic != wire.TopicLoad || seq != 258 || !bytes.Equal(got, payload) {
		t.Errorf("ParsePub = %q, %d, % x, %v", topic, seq, got, err)
	}
	if _, _, _, err := wire.ParsePub(frames[:2]); !errors.Is(err, wire.ErrMalformed) {
		t.Errorf("ParsePub(2 frames) error = %v, want ErrMalformed", err)
	}
}
