package vllm_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire/vllm"
)

// Golden files: testdata/golden/<name>.hex holds one message, one frame
// per line as lowercase hex, in socket order (a request's first line is
// its type byte; an output message has no type line). `go test -run
// TestGolden ./wire/vllm/ -update` rewrites them from the values below;
// TestOracleGolden checks every file against msgspec with vLLM's structs.
var update = flag.Bool("update", false, "rewrite testdata/golden/*.hex")

type golden struct {
	name       string
	oracleType string // the oracle.py type its payload decodes as
	typeByte   bool   // frames[0] is a request's type byte (not sent to the oracle)
	value      any
	encode     func() ([][]byte, error)
	decode     func([][]byte) (any, error)
}

func one(b []byte, err error) ([][]byte, error) { return [][]byte{b}, err }

func single(fs [][]byte) ([]byte, error) {
	if len(fs) != 1 {
		return nil, fmt.Errorf("%d frames, want 1", len(fs))
	}
	return fs[0], nil
}

func decodeOne[T any](f func([]byte) (*T, error)) func([][]byte) (any, error) {
	return func(fs [][]byte) (any, error) {
		b, err := single(fs)
		if err != nil {
			return nil, err
		}
		return f(b)
	}
}

// mp writes msgpack values in order: a test's way to spell Raw fields.
func mp(t testing.TB, build func(e *msgpack.Encoder) error) vllm.Raw {
	var b bytes.Buffer
	if err := build(msgpack.NewEncoder(&b)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func b(v bool) *bool         { return &v }
func f64(v float64) *float64 { return &v }

func goldenAdd() *vllm.EngineCoreRequest {
	sp := vllm.DefaultSamplingParams()
	sp.Temperature, sp.TopP, sp.TopK, sp.Seed = 0.7, 0.9, 40, i64(1234)
	sp.MaxTokens, sp.Logprobs, sp.PromptLogprobs = i64(64), i64(5), i64(0)
	// ids below 8 keep their order in a Python set (of 8 slots)
	sp.StopTokenIDs, sp.EOSTokenID, sp.AllStopTokenIDs = []int32{5, 7}, i64(2), []int32{2, 5, 7}
	sp.OutputKind = 1 // DELTA
	sp.StructuredOutputs = &vllm.StructuredOutputsParams{Choice: []string{"yes", "no"},
		DisableAnyWhitespace: true, Backend: str("xgrammar"), BackendWasAuto: b(true)}
	sp.LogitBias = []vllm.LogitBias{{TokenID: 11, Bias: 2.5}, {TokenID: 3, Bias: -100}}
	sp.BadWords, sp.BadWordsTokenIDs = []string{"darn"}, [][]int32{{101, 102}}
	return &vllm.EngineCoreRequest{RequestID: "chatcmpl-7-0-9f3a", PromptTokenIDs: []int32{1, 15043, 29892, 3186},
		SamplingParams: &sp, ArrivalTime: 1754000000.125, CacheSalt: str("salt"), DataParallelRank: i64(0),
		ClientIndex: 1, CurrentWave: 2, Priority: -1, Resumable: true, ExternalReqID: str("user-req-1"),
		ReasoningEnded: b(false), SessionID: str("conv-42")}
}

func goldenOutputs() *vllm.EngineCoreOutputs {
	ids := make([]int64, 0, 60) // 3 positions × 20 = 480 bytes: an aux frame
	lps := make([]float64, 0, 60)
	for i := range 60 {
		ids = append(ids, int64(100+i))
		lps = append(lps, -float64(i)/4)
	}
	return &vllm.EngineCoreOutputs{EngineIndex: 1, Timestamp: 8123.5, FinishedRequests: []string{"r3"},
		Outputs: []vllm.EngineCoreOutput{
			{RequestID: "r1", NewTokenIDs: []int32{100, 101, 102}, NewLogprobs: &vllm.LogprobsLists{
				LogprobTokenIDs:   vllm.Int64Array("<i8", []int64{3, 20}, ids),
				Logprobs:          vllm.Float32Array("<f4", []int64{3, 20}, lps),
				SampledTokenRanks: vllm.Int64Array("<i8", []int64{3}, []int64{1, 1, 2}),
			}, Events: []vllm.EngineCoreEvent{{Type: vllm.EventScheduled, Timestamp: 8123.25}}},
			{RequestID: "r2", NewTokenIDs: []int32{2}, Finished: true, FinishReason: vllm.FinishStop, StopReason: int64(2),
				NewLogprobs: &vllm.LogprobsLists{
					LogprobTokenIDs:      vllm.Int64Array("<i8", []int64{1, 2}, []int64{2, 13}),
					Logprobs:             vllm.Float32Array("<f4", []int64{1, 2}, []float64{-0.125, -2.5}),
					SampledTokenRanks:    vllm.Int64Array("<i8", []int64{1}, []int64{1}),
					CuNumGeneratedTokens: []int64{1},
				},
				PrefillStats: &vllm.PrefillStats{NumPromptTokens: 40, NumComputedTokens: 24, NumCachedTokens: 16,
					NumLocalCachedTokens: 16}},
			{RequestID: "r3", NewTokenIDs: []int32{}, Finished: true, FinishReason: vllm.FinishLength},
			{RequestID: "r4", NewTokenIDs: []int32{5}, Finished: true, FinishReason: vllm.FinishStop, StopReason: "\n\n"},
			{RequestID: "r5", NewTokenIDs: []int32{}, Finished: true, FinishReason: vllm.FinishAbort},
			{RequestID: "r6", NewTokenIDs: []int32{}, Finished: true, FinishReason: vllm.FinishError,
				Error: &vllm.RequestError{Code: "oom", Message: "KV cache exhausted", Retryable: true}},
			{RequestID: "r7", NewTokenIDs: []int32{9}, Finished: true, FinishReason: vllm.FinishRepetition, NumNaNsInLogits: 1},
		},
		SchedulerStats: &vllm.SchedulerStats{NumRunningReqs: 2, NumWaitingReqs: 1, StepCounter: 17, CurrentWave: 2,
			KVCacheUsage: 0.375, PrefixCacheStats: vllm.PrefixCacheStats{Requests: 1, Queries: 40, Hits: 16}},
		UtilityOutput: &vllm.UtilityOutput{CallID: vllm.CallID(0x9d2c1b0e4f3a2718),
			Result: &vllm.UtilityResult{Value: vllm.Raw{0x92, 0xa8, 'g', 'e', 'n', 'e', 'r', 'a', 't', 'e', 0xa5, 'e', 'm', 'b', 'e', 'd'}}},
	}
}

func goldenOutputsDP() *vllm.EngineCoreOutputs {
	return &vllm.EngineCoreOutputs{EngineIndex: 3, Timestamp: 99.75, WaveComplete: i64(4), StartWave: i64(5),
		SchedulerStats: &vllm.SchedulerStats{StepCounter: 1000, CurrentWave: 4},
		UtilityOutput:  &vllm.UtilityOutput{CallID: vllm.CallID(1<<64 - 1), FailureMessage: str("no such method")}}
}

func goldenHello() *vllm.HandshakeMessage {
	return &vllm.HandshakeMessage{Status: vllm.StatusHello, Local: false, Headless: true}
}

func goldenReady() *vllm.HandshakeMessage {
	return &vllm.HandshakeMessage{Status: vllm.StatusReady, Local: false, Headless: true,
		ParallelConfigHash: str("8c1e5d0f"), CoordStorePort: i64(29600), ElasticEPMaxDPSize: i64(8),
		NumRedundantExperts: i64(0)}
}

func goldenMetadata(t testing.TB) *vllm.EngineHandshakeMetadata {
	pc := mp(t, func(e *msgpack.Encoder) error {
		return errors.Join(e.EncodeMapLen(5),
			e.EncodeString("data_parallel_master_ip"), e.EncodeString("10.0.0.1"),
			e.EncodeString("data_parallel_master_port"), e.EncodeInt(29560),
			e.EncodeString("_data_parallel_master_port_list"), e.EncodeArrayLen(2), e.EncodeInt(29561), e.EncodeInt(29562),
			e.EncodeString("_coord_store_port"), e.EncodeInt(29600),
			e.EncodeString("data_parallel_size"), e.EncodeInt(2))
	})
	return &vllm.EngineHandshakeMetadata{Addresses: vllm.EngineZmqAddresses{
		Inputs: []string{"tcp://10.0.0.1:29550", "tcp://10.0.0.2:29550"}, Outputs: []string{"tcp://10.0.0.1:29551", "tcp://10.0.0.2:29551"},
		CoordinatorInput: str("tcp://10.0.0.1:29552"), CoordinatorOutput: str("tcp://10.0.0.1:29553")},
		ParallelConfig: pc}
}

func goldenReadyResponse(t testing.TB) *vllm.EngineCoreReadyResponse {
	kv := mp(t, func(e *msgpack.Encoder) error {
		return errors.Join(e.EncodeMapLen(2), e.EncodeString("enable_kv_cache_events"), e.EncodeBool(true),
			e.EncodeString("publisher"), e.EncodeString("zmq"))
	})
	return &vllm.EngineCoreReadyResponse{MaxModelLen: 8192, NumGPUBlocks: 4096, BlockSize: 16,
		DPStatsAddress: str("tcp://10.0.0.1:29554"), DType: "bfloat16", VLLMVersion: "0.33.0", WorldSize: 2,
		DataParallelSize: 2, TensorParallelSize: 1, PipelineParallelSize: 1, DecodeContextParallelSize: 1,
		DataParallelRank: 1, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192, InstanceID: "c0ffee",
		SupportsLoRA: true, MaxLoRAs: 4, MambaBlockSize: i64(64), KVCacheSizeTokens: i64(65536),
		KVCacheMaxConcurrency: f64(8.5), KVEventsConfig: kv, WeightTransferBackend: str("nccl"),
		EnableSleepMode: true, SupportsDraftWeightUpdates: false, EffectiveAttentionBlockSize: i64(32),
		CoordStorePort: 29600, CoordinatorInputAddress: str("tcp://10.0.0.1:29552"),
		CoordinatorOutputAddress: str("tcp://10.0.0.1:29553")}
}

func decodeReq(pick func(*vllm.Request) any) func([][]byte) (any, error) {
	return func(fs [][]byte) (any, error) {
		r, err := vllm.DecodeRequest(fs)
		if err != nil {
			return nil, err
		}
		return pick(r), nil
	}
}

func goldens(t testing.TB) []golden {
	outputs := func(fs [][]byte) (any, error) { return vllm.DecodeOutputs(fs) }
	utility := &vllm.UtilityRequest{ClientIndex: 1, CallID: vllm.CallID(0x9d2c1b0e4f3a2718), Method: "add_lora",
		Args: vllm.Raw{0x91, 0xa5, 'l', 'o', 'r', 'a', '1'}}
	wave := &vllm.StartDPWave{Wave: 5, ExcludeEngineIndex: i64(1)}
	meta, ready := goldenMetadata(t), goldenReadyResponse(t)
	return []golden{
		{"add", "EngineCoreRequest", true, goldenAdd(),
			func() ([][]byte, error) { return vllm.EncodeAdd(goldenAdd()) },
			decodeReq(func(r *vllm.Request) any { return r.Add })},
		{"abort", "Abort", true, []string{"r1", "chatcmpl-7-0-9f3a"},
			func() ([][]byte, error) { return vllm.EncodeAbort([]string{"r1", "chatcmpl-7-0-9f3a"}) },
			decodeReq(func(r *vllm.Request) any { return r.Abort })},
		{"utility", "UtilityRequest", true, utility,
			func() ([][]byte, error) { return vllm.EncodeUtility(utility) },
			decodeReq(func(r *vllm.Request) any { return r.Utility })},
		{"start_dp_wave", "StartDPWave", true, wave,
			func() ([][]byte, error) { return vllm.EncodeStartDPWave(wave) },
			decodeReq(func(r *vllm.Request) any { return r.StartDPWave })},
		{"outputs", "EngineCoreOutputs", false, goldenOutputs(),
			func() ([][]byte, error) { return vllm.EncodeOutputs(goldenOutputs()) }, outputs},
		{"outputs_dp", "EngineCoreOutputs", false, goldenOutputsDP(),
			func() ([][]byte, error) { return vllm.EncodeOutputs(goldenOutputsDP()) }, outputs},
		{"engine_core_dead", "EngineCoreDead", false, true,
			func() ([][]byte, error) { return [][]byte{vllm.EngineCoreDead}, nil },
			func(fs [][]byte) (any, error) {
				if _, err := vllm.DecodeOutputs(fs); !errors.Is(err, vllm.ErrEngineCoreDead) {
					return nil, fmt.Errorf("DecodeOutputs: %v, want ErrEngineCoreDead", err)
				}
				return vllm.IsEngineCoreDead(fs), nil
			}},
		{"handshake_hello", "HandshakeMessage", false, goldenHello(),
			func() ([][]byte, error) { return one(vllm.EncodeHandshake(goldenHello())) },
			decodeOne(vllm.DecodeHandshake)},
		{"handshake_ready", "HandshakeMessage", false, goldenReady(),
			func() ([][]byte, error) { return one(vllm.EncodeHandshake(goldenReady())) },
			decodeOne(vllm.DecodeHandshake)},
		{"handshake_metadata", "EngineHandshakeMetadata", false, meta,
			func() ([][]byte, error) { return one(vllm.EncodeHandshakeMetadata(meta)) },
			decodeOne(vllm.DecodeHandshakeMetadata)},
		{"ready_response", "EngineCoreReadyResponse", false, ready,
			func() ([][]byte, error) { return one(vllm.EncodeReadyResponse(ready)) },
			decodeOne(vllm.DecodeReadyResponse)},
	}
}

func goldenPath(name string) string { return filepath.Join("testdata", "golden", name+".hex") }

func readGolden(t testing.TB, name string) [][]byte {
	t.Helper()
	text, err := os.ReadFile(goldenPath(name))
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	var fs [][]byte
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		f, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("%s: %v", goldenPath(name), err)
		}
		fs = append(fs, f)
	}
	return fs
}

func writeGolden(t testing.TB, name string, fs [][]byte) {
	t.Helper()
	var s strings.Builder
	for _, f := range fs {
		s.WriteString(hex.EncodeToString(f) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(goldenPath(name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(name), []byte(s.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGolden encodes each fixed value and compares the frames byte for
// byte with its golden file, and decodes the file back to the value.
func TestGolden(t *testing.T) {
	for _, g := range goldens(t) {
		t.Run(g.name, func(t *testing.T) {
			got, err := g.encode()
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				writeGolden(t, g.name, got)
			}
			want := readGolden(t, g.name)
			if diff := cmp.Diff(hexes(want), hexes(got)); diff != "" {
				t.Errorf("encoded frames differ from %s (-file +Go):\n%s", goldenPath(g.name), diff)
			}
			dec, err := g.decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(g.value, dec, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decoded %s (-want +got):\n%s", goldenPath(g.name), diff)
			}
		})
	}
}
