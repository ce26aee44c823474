package vllm_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

func str(s string) *string { return &s }
func i64(n int64) *int64   { return &n }

func sampleAdd() *vllm.EngineCoreRequest {
	sp := vllm.DefaultSamplingParams()
	sp.Temperature, sp.Seed, sp.StopTokenIDs = 0.5, i64(7), []int32{5}
	sp.EOSTokenID, sp.AllStopTokenIDs = i64(2), []int32{2, 5}
	sp.LogitBias = []vllm.LogitBias{{TokenID: 9, Bias: -1.5}}
	return &vllm.EngineCoreRequest{RequestID: "cmpl-1-0-abcd", PromptTokenIDs: []int32{1, 2, 3},
		SamplingParams: &sp, ArrivalTime: 1754000000.25, SessionID: str("conv-42"), ClientIndex: 1}
}

func sampleOutputs() *vllm.EngineCoreOutputs {
	big := make([]int64, 40) // 320 bytes: an aux frame
	lp := &vllm.LogprobsLists{
		LogprobTokenIDs:   vllm.Int64Array("<i8", []int64{20, 2}, big),
		Logprobs:          vllm.Float32Array("<f4", []int64{1, 2}, []float64{-0.5, -1}),
		SampledTokenRanks: vllm.Int64Array("<i8", []int64{1}, []int64{1}),
	}
	return &vllm.EngineCoreOutputs{EngineIndex: 1, Timestamp: 12.5, FinishedRequests: []string{"r2"},
		Outputs: []vllm.EngineCoreOutput{
			{RequestID: "r1", NewTokenIDs: []int32{7}, NewLogprobs: lp},
			{RequestID: "r2", NewTokenIDs: []int32{}, Finished: true, FinishReason: vllm.FinishLength,
				StopReason: int64(2), PrefillStats: &vllm.PrefillStats{NumCachedTokens: 16}},
		},
		SchedulerStats: &vllm.SchedulerStats{NumRunningReqs: 1, KVCacheUsage: 0.25},
		UtilityOutput:  &vllm.UtilityOutput{CallID: vllm.CallID(1<<63 + 5), Result: &vllm.UtilityResult{Value: vllm.Raw{0xc3}}},
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		encode func() ([][]byte, error)
		decode func([][]byte) (any, error)
		want   any
	}{
		{"add", func() ([][]byte, error) { return vllm.EncodeAdd(sampleAdd()) },
			func(f [][]byte) (any, error) { r, err := vllm.DecodeRequest(f); return r.Add, err }, sampleAdd()},
		{"outputs", func() ([][]byte, error) { return vllm.EncodeOutputs(sampleOutputs()) },
			func(f [][]byte) (any, error) { return vllm.DecodeOutputs(f) }, sampleOutputs()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frames, err := tt.encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.decode(frames)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineCoreDead(t *testing.T) {
	if _, err := vllm.DecodeOutputs([][]byte{[]byte("ENGINE_CORE_DEAD")}); !errors.Is(err, vllm.ErrEngineCoreDead) {
		t.Fatalf("got %v", err)
	}
}

func TestTranslateRequest(t *testing.T) {
	tr := &wire.EngineCoreRequest{RequestID: "r", PromptTokenIDs: []int32{1}, SamplingParams: wire.DefaultSamplingParams(),
		ArrivalTime: 3, SessionID: "s", FlowID: "dropped"}
	eos := int32(2)
	tr.SamplingParams.EOSTokenID, tr.SamplingParams.StopTokenIDs = &eos, []int32{2, 9}
	v, err := vllm.FromTandemRequest(tr, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int32{2, 9}, v.SamplingParams.AllStopTokenIDs); diff != "" {
		t.Error(diff)
	}
	back, err := vllm.ToTandemRequest(v)
	if err != nil {
		t.Fatal(err)
	}
	tr.FlowID = ""
	if diff := cmp.Diff(tr, back); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestTranslateReasoning: think tags before a constraint reach vLLM's
// engine as reasoning_ended false; without a constraint, or without tags,
// reasoning_ended stays unset (vLLM's engine reads the prompt itself).
func TestTranslateReasoning(t *testing.T) {
	for _, tt := range []struct {
		name       string
		end        string
		constraint bool
		want       *bool
	}{
		{name: "tags and a constraint", end: "</think>", constraint: true, want: new(bool)},
		{name: "tags without a constraint", end: "</think>"},
		{name: "a constraint without tags", constraint: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &wire.EngineCoreRequest{RequestID: "r", PromptTokenIDs: []int32{1}, SamplingParams: wire.DefaultSamplingParams()}
			r.SamplingParams.ReasoningEnd = tt.end
			if tt.constraint {
				r.SamplingParams.StructuredOutputs = &wire.StructuredOutputs{JSONObject: true}
			}
			v, err := vllm.FromTandemRequest(r, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, v.ReasoningEnded); diff != "" {
				t.Errorf("reasoning_ended (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTranslateThinkingBudget: a thinking budget is vLLM's own key; the
// budget message, which vLLM has not, is untranslatable.
func TestTranslateThinkingBudget(t *testing.T) {
	p := wire.DefaultSamplingParams()
	n := 5
	p.ThinkingTokenBudget = &n
	v, err := vllm.FromTandemSamplingParams(&p)
	if err != nil || v.ThinkingTokenBudget == nil || *v.ThinkingTokenBudget != 5 {
		t.Fatalf("thinking_token_budget %v, err %v; want 5", v.ThinkingTokenBudget, err)
	}
	p.ReasoningBudgetMessage = "Enough."
	if _, err := vllm.FromTandemSamplingParams(&p); !errors.Is(err, vllm.ErrUntranslatable) {
		t.Fatalf("a budget message: err %v, want ErrUntranslatable", err)
	}
}

func TestTranslateOutputs(t *testing.T) {
	to := &wire.EngineCoreOutputs{EngineIndex: 0, Timestamp: 5, Outputs: []wire.EngineCoreOutput{{
		RequestID: "r", NewTokenIDs: []int32{4}, FinishReason: wire.FinishStop, StopReason: int64(4), NumCachedTokens: 3,
		NewLogprobs: &wire.Logprobs{TokenIDs: [][]int32{{4, 5}}, Logprobs: [][]float64{{-0.5, -2}}, Ranks: []int32{1}}}},
		SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 1, KVCacheUsage: 0.5, StepCounter: 3}}
	v, err := vllm.FromTandemOutputs(to, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := vllm.EncodeOutputs(v)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := vllm.DecodeOutputs(frames)
	if err != nil {
		t.Fatal(err)
	}
	back, err := vllm.ToTandemOutputs(dec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(to, back); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzDecodeOutputs(f *testing.F) {
	fr, _ := vllm.EncodeOutputs(sampleOutputs())
	f.Add(fr[0], fr[1])
	f.Fuzz(func(t *testing.T, payload, aux []byte) {
		o, err := vllm.DecodeOutputs([][]byte{payload, aux})
		if err != nil {
			return
		}
		e1, err := vllm.EncodeOutputs(o)
		if err != nil {
			t.Fatal(err)
		}
		o2, err := vllm.DecodeOutputs(e1)
		if err != nil {
			t.Fatal(err)
		}
		e2, _ := vllm.EncodeOutputs(o2)
		if len(e1) != len(e2) || !bytes.Equal(e1[0], e2[0]) {
			t.Fatalf("unstable:\n% x\n% x", e1[0], e2[0])
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	fr, _ := vllm.EncodeAdd(sampleAdd())
	f.Add(byte(0), fr[1])
	u, _ := vllm.EncodeUtility(&vllm.UtilityRequest{CallID: 3, Method: "is_sleeping"})
	f.Add(byte(3), u[1])
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		r, err := vllm.DecodeRequest([][]byte{{typ}, payload})
		if err != nil {
			return
		}
		var e1 [][]byte
		switch r.Type {
		case vllm.RequestAdd:
			e1, err = vllm.EncodeAdd(r.Add)
		case vllm.RequestAbort:
			e1, err = vllm.EncodeAbort(r.Abort)
		case vllm.RequestUtility:
			e1, err = vllm.EncodeUtility(r.Utility)
		case vllm.RequestStartDPWave:
			e1, err = vllm.EncodeStartDPWave(r.StartDPWave)
		}
		if err != nil {
			t.Fatal(err)
		}
		r2, err := vllm.DecodeRequest(e1)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(r, r2, cmpopts.EquateNaNs()); diff != "" {
			t.Fatal(diff)
		}
	})
}

// TestFromTandemOutputsLayout: what vLLM 0.33's engine writes for one
// output: prefill_stats on the first output only, logprob token ids int32,
// ranks int64, prompt logprob tensors int32/float32/int64.
func TestFromTandemOutputsLayout(t *testing.T) {
	lp := &wire.Logprobs{TokenIDs: [][]int32{{4, 5}}, Logprobs: [][]float64{{-0.5, -2}}, Ranks: []int32{1}}
	to := &wire.EngineCoreOutputs{Outputs: []wire.EngineCoreOutput{
		{RequestID: "first", NewTokenIDs: []int32{4}, NumCachedTokens: 16, NewLogprobs: lp, NewPromptLogprobs: lp},
		{RequestID: "later", NewTokenIDs: []int32{5}},
		{RequestID: "cached-later", NewTokenIDs: []int32{6}, NumCachedTokens: 3},
	}}
	v, err := vllm.FromTandemOutputs(to, map[string]int{"first": 20})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  *vllm.PrefillStats
		want *vllm.PrefillStats
	}{
		{"first", v.Outputs[0].PrefillStats, &vllm.PrefillStats{NumPromptTokens: 20, NumComputedTokens: 4, NumCachedTokens: 16, NumLocalCachedTokens: 16}},
		{"later", v.Outputs[1].PrefillStats, nil},
		{"cached-later", v.Outputs[2].PrefillStats, &vllm.PrefillStats{NumCachedTokens: 3, NumLocalCachedTokens: 3}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s prefill_stats (-want +got):\n%s", tt.name, diff)
		}
	}
	l, p := v.Outputs[0].NewLogprobs, v.Outputs[0].NewPromptLogprobsTensors
	dtypes := []string{l.LogprobTokenIDs.DType, l.Logprobs.DType, l.SampledTokenRanks.DType,
		p.LogprobTokenIDs.DType, p.Logprobs.DType, p.SelectedTokenRanks.DType}
	if diff := cmp.Diff([]string{"<i4", "<f4", "<i8", "int32", "float32", "int64"}, dtypes); diff != "" {
		t.Errorf("dtypes (-want +got):\n%s", diff)
	}
	if ids, _ := l.LogprobTokenIDs.Ints(); !cmp.Equal(ids, []int64{4, 5}) || len(l.LogprobTokenIDs.Data) != 8 {
		t.Errorf("token ids %v in %d bytes", ids, len(l.LogprobTokenIDs.Data))
	}
}

// TestToTandemSkipReadingPrefixCache: vLLM's frontend sets
// skip_reading_prefix_cache with prompt_logprobs, which Tandem's engine
// honours anyway; alone it has no counterpart.
func TestToTandemSkipReadingPrefixCache(t *testing.T) {
	yes, one := true, int64(1)
	tests := []struct {
		name    string
		prompt  *int64
		wantErr bool
	}{{"with prompt_logprobs", &one, false}, {"alone", nil, true}}
	for _, tt := range tests {
		p := vllm.DefaultSamplingParams()
		mt := int64(4)
		p.MaxTokens, p.SkipReadingPrefixCache, p.PromptLogprobs = &mt, &yes, tt.prompt
		_, err := vllm.ToTandemSamplingParams(&p)
		if gotErr := errors.Is(err, vllm.ErrUntranslatable); gotErr != tt.wantErr {
			t.Errorf("%s: err %v, want untranslatable %v", tt.name, err, tt.wantErr)
		}
	}
}

// TestFromTandemRefusesPoolingAndLoRA: an embedding, or adapters vLLM
// cannot apply (two at once, or a scale), would run on vLLM's engine as
// something else if dropped, so they are refused.
func TestFromTandemRefusesPoolingAndLoRA(t *testing.T) {
	lora := func(ls ...wire.LoRARequest) wire.EngineCoreRequest {
		return wire.EngineCoreRequest{RequestID: "l", SamplingParams: wire.DefaultSamplingParams(), LoRA: ls}
	}
	a := wire.LoRARequest{Name: "a", ID: 1, Path: "a.gguf", Scale: 1}
	tests := []struct {
		name string
		req  wire.EngineCoreRequest
	}{
		{"pooling", wire.EngineCoreRequest{RequestID: "e", SamplingParams: wire.DefaultSamplingParams(), Pooling: &wire.PoolingParams{}}},
		{"two adapters", lora(a, wire.LoRARequest{Name: "b", ID: 2, Path: "b", Scale: 1})},
		{"a scale", lora(wire.LoRARequest{Name: "a", ID: 1, Path: "a.gguf", Scale: 0.5})},
	}
	for _, tt := range tests {
		if _, err := vllm.FromTandemRequest(&tt.req, 0, 0); !errors.Is(err, vllm.ErrUntranslatable) {
			t.Errorf("%s: err %v, want ErrUntranslatable", tt.name, err)
		}
	}
}

// TestLoRARequestBothWays: one adapter at scale 1 crosses to vLLM's
// LoRARequest and back; vLLM's with its defaults written, or a
// load_inplace, read as vLLM writes them.
func TestLoRARequestBothWays(t *testing.T) {
	a := wire.LoRARequest{Name: "sql", ID: 3, Path: "/a/sql", Scale: 1}
	in := wire.EngineCoreRequest{RequestID: "l", PromptTokenIDs: []int32{1}, SamplingParams: wire.DefaultSamplingParams(), LoRA: []wire.LoRARequest{a}}
	v, err := vllm.FromTandemRequest(&in, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	back, err := vllm.ToTandemRequest(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]wire.LoRARequest{a}, back.LoRA); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name    string
		fields  []any
		wantErr error
	}{
		{"every field", []any{"sql", 3, "/a/sql", nil, false, false}, nil},
		{"load_inplace", []any{"sql", 3, "/a/sql", nil, true}, vllm.ErrUntranslatable},
		{"no path", []any{"sql", 3}, vllm.ErrMalformed},
		{"id 0", []any{"sql", 0, "/a/sql"}, vllm.ErrMalformed},
		{"not an array", []any{}, vllm.ErrMalformed},
	} {
		v.LoRARequest = mp(t, func(e *msgpack.Encoder) error { return e.Encode(tt.fields) })
		got, err := vllm.ToTandemRequest(v)
		if !errors.Is(err, tt.wantErr) || (err == nil && (len(got.LoRA) != 1 || got.LoRA[0] != a)) {
			t.Errorf("%s: %v, %+v", tt.name, err, got)
		}
	}
}
