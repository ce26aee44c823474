package wire_test

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire"
)

func ptr[T any](v T) *T { return &v }

// mp encodes v with vmihailenco's reflection encoder: an independent way to
// build wire bytes for decoder tests.
func mp(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatalf("msgpack.Marshal: %v", err)
	}
	return b
}

// sampleAdd has a session id, a cache salt and non-default sampling
// parameters; it is the ADD golden vector and the docs' worked example.
func sampleAdd() *wire.EngineCoreRequest {
	sp := wire.DefaultSamplingParams()
	sp.Temperature = 0.7
	sp.MaxTokens = 32
	sp.Seed = ptr[int64](1234)
	sp.StopTokenIDs = []int32{2}
	sp.LogitBias = map[int32]float64{15043: -1.5}
	sp.EOSTokenID = ptr[int32](2)
	return &wire.EngineCoreRequest{
		RequestID:        "cmpl-abc123-0-9f8e7d6c",
		PromptTokenIDs:   []int32{1, 15043, 29892},
		SamplingParams:   sp,
		ArrivalTime:      1754000000.5,
		CacheSalt:        "salt-1",
		DataParallelRank: ptr(0),
		ExternalReqID:    "cmpl-abc123-0",
		SessionID:        "conv-42",
	}
}

// fullSamplingParams sets every field to a non-default value.
func fullSamplingParams() wire.SamplingParams {
	return wire.SamplingParams{
		N:                 2,
		PresencePenalty:   0.5,
		FrequencyPenalty:  -0.25,
		RepetitionPenalty: 1.1,
		Temperature:       0,
		TopP:              0.95,
		TopK:              40,
		MinP:              0.05,
		Seed:              ptr[int64](-7),
		StopTokenIDs:      []int32{2, 32000},
		IgnoreEOS:         true,
		MaxTokens:         4096,
		MinTokens:         3,
		Logprobs:          ptr(5),
		PromptLogprobs:    ptr(0),
		AllowedTokenIDs:   []int32{5, 7},
		LogprobTokenIDs:   []int32{9},
		StructuredOutputs: &wire.StructuredOutputs{JSON: `{"type":"object","properties":{"a":{"type":"integer"}}}`, DisableAnyWhitespace: true},
		LogitBias:         map[int32]float64{1: 100, 2: -100, 300: 0.5},
		EOSTokenID:        ptr[int32](128001),
		ExtraArgs: map[string]any{
			"flag":   true,
			"nested": map[string]any{"list": []any{int64(1), "two", 3.5, nil}},
			"n":      int64(-3),
		},
	}
}

func sampleOutputs() *wire.EngineCoreOutputs {
	return &wire.EngineCoreOutputs{
		EngineIndex: 1,
		Outputs: []wire.EngineCoreOutput{
			{RequestID: "a-1", NewTokenIDs: []int32{450}, Events: []wire.EngineCoreEvent{
				{Type: wire.EventQueued, Timestamp: 1754000000.5}, {Type: wire.EventScheduled, Timestamp: 1754000001},
			}},
			{
				RequestID:   "b-2",
				NewTokenIDs: []int32{29889, 2},
				NewLogprobs: &wire.Logprobs{
					TokenIDs: [][]int32{{29889, 13}, {2, 29889}},
					Logprobs: [][]float64{{-0.125, -2.5}, {-0.0625, -3}},
					Ranks:    []int32{1, 1},
				},
				FinishReason:    wire.FinishStop,
				StopReason:      int64(2),
				NumCachedTokens: 16,
			},
		},
		SchedulerStats: &wire.SchedulerStats{
			NumRunningReqs:     1,
			NumWaitingReqs:     0,
			KVCacheUsage:       0.25,
			NumFreeBlocks:      768,
			NumTotalBlocks:     1024,
			StepCounter:        4242,
			PrefixCacheQueries: 512,
			PrefixCacheHits:    256,
			NumPreemptions:     0,
		},
		Timestamp:        1754000001.25,
		FinishedRequests: []string{"b-2"},
	}
}

func sampleSessionInfo() *wire.SessionInfo {
	return &wire.SessionInfo{
		SessionID:        "conv-42",
		EngineIndex:      1,
		NumRequests:      3,
		NumPromptTokens:  900,
		NumOutputTokens:  120,
		NumCachedTokens:  1008,
		NumRunning:       1,
		LastActive:       1754000001.5,
		RecentRequestIDs: []string{"cmpl-a-1", "cmpl-b-2", "cmpl-c-3"},
	}
}

func sampleUtilityResult(t testing.TB) *wire.UtilityResult {
	raw, err := wire.Marshal(sampleSessionInfo())
	if err != nil {
		t.Fatal(err)
	}
	return &wire.UtilityResult{CallID: 0x9e3779b97f4a7c15, Result: raw}
}

func sampleReady() *wire.Ready {
	return &wire.Ready{
		ProtocolVersion: wire.ProtocolVersion,
		EngineIndex:     1,
		Model:           "dummy",
		ServedModelName: "tandem-dummy",
		MaxModelLen:     4096,
		VocabSize:       32000,
		BlockSize:       16,
		NumBlocks:       1024,
		EOSTokenIDs:     []int32{2},
		EngineID:        "e-5f2c",
		PID:             4242,
		Version:         "v0.1.0",
		MaxLogprobs:     -1,
	}
}

func sampleLoadReport() *wire.LoadReport {
	return &wire.LoadReport{
		EngineIndex:    1,
		Timestamp:      1754000001.75,
		NumWaiting:     2,
		NumRunning:     8,
		NumFreeBlocks:  700,
		NumTotalBlocks: 1024,
		KVCacheUsage:   0.3125,
	}
}
