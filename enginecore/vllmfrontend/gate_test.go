package vllmfrontend_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/enginecore/vllmfrontend"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

var t0 = time.Unix(1000, 0)

func encode(t *testing.T, typ wire.MsgType, payload any) [][]byte {
	t.Helper()
	f, err := wire.Encode(typ, payload)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// one returns the only send, checking its socket.
func one(t *testing.T, sends []vllmfrontend.Send, sock vllmfrontend.Sock) vllmfrontend.Send {
	t.Helper()
	if len(sends) != 1 || sends[0].Sock != sock {
		t.Fatalf("sends %+v, want one on socket %d", sends, sock)
	}
	return sends[0]
}

func toEngine(t *testing.T, sends []vllmfrontend.Send) any {
	t.Helper()
	_, msg, err := wire.Decode(one(t, sends, vllmfrontend.SockEngine).Frames)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func outputsOf(t *testing.T, s vllmfrontend.Send) *vllm.EngineCoreOutputs {
	t.Helper()
	o, err := vllm.DecodeOutputs(s.Frames)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// serving is a Gate of rank 1 of 2 through the whole handshake, with two
// frontend clients; it checks every step.
func serving(t *testing.T) *vllmfrontend.Gate {
	t.Helper()
	g := vllmfrontend.NewGate(vllmfrontend.GateConfig{Rank: 1, DPSize: 2, MaxNumSeqs: 8, MaxNumBatchedTokens: 64})
	if h, ok := toEngine(t, g.Start(t0)).(*wire.Hello); !ok || h.ProtocolVersion != wire.ProtocolVersion {
		t.Fatalf("Start: %+v", h)
	}
	if err := g.Metadata([][]byte{{0x80}}); err == nil {
		t.Error("Metadata before HELLO: no error")
	}
	sends, err := g.Engine(encode(t, wire.MsgReady, &wire.Ready{ProtocolVersion: wire.ProtocolVersion, EngineIndex: 1,
		MaxModelLen: 512, BlockSize: 16, NumBlocks: 64, EngineID: "e1"}))
	if err != nil {
		t.Fatal(err)
	}
	hello, err := vllm.DecodeHandshake(one(t, sends, vllmfrontend.SockHandshake).Frames[0])
	if err != nil || *hello != (vllm.HandshakeMessage{Status: vllm.StatusHello, Headless: true}) {
		t.Fatalf("HELLO %+v, %v", hello, err)
	}
	meta, _ := vllm.EncodeHandshakeMetadata(&vllm.EngineHandshakeMetadata{Addresses: vllm.EngineZmqAddresses{
		Inputs: []string{"tcp://in0", "tcp://in1"}, Outputs: []string{"tcp://out0", "tcp://out1"}}})
	if err := g.Metadata([][]byte{meta}); err != nil {
		t.Fatal(err)
	}
	sends, err = g.Connected()
	if err != nil {
		t.Fatal(err)
	}
	if len(sends) != 3 || sends[0].Sock != vllmfrontend.SockInput || sends[1].Index != 1 || sends[2].Sock != vllmfrontend.SockHandshake {
		t.Fatalf("Connected: %+v", sends)
	}
	r, err := vllm.DecodeReadyResponse(sends[0].Frames[0])
	if err != nil {
		t.Fatal(err)
	}
	got := []int64{r.MaxModelLen, r.NumGPUBlocks, r.BlockSize, r.DataParallelRank, r.DataParallelSize, r.MaxNumSeqs, r.MaxNumBatchedTokens, *r.KVCacheSizeTokens}
	if diff := cmp.Diff([]int64{512, 64, 16, 1, 2, 8, 64, 1024}, got); diff != "" || !r.EnableSleepMode || r.SupportsLoRA {
		t.Errorf("ready response (-want +got):\n%s%+v", diff, r)
	}
	if ready, _ := vllm.DecodeHandshake(sends[2].Frames[0]); ready.Status != vllm.StatusReady {
		t.Errorf("READY: %+v", ready)
	}
	if !g.Serving() {
		t.Fatal("not serving after the handshake")
	}
	return g
}

func add(t *testing.T, g *vllmfrontend.Gate, id string, client int64, prompt ...int32) []vllmfrontend.Send {
	t.Helper()
	p := vllm.DefaultSamplingParams()
	mt := int64(4)
	p.MaxTokens = &mt
	rank, session := int64(1), "conv-42"
	f, err := vllm.EncodeAdd(&vllm.EngineCoreRequest{RequestID: id, PromptTokenIDs: prompt, SamplingParams: &p,
		ClientIndex: client, DataParallelRank: &rank, SessionID: &session})
	if err != nil {
		t.Fatal(err)
	}
	return g.Input(0, f)
}

func TestGateHandshakeRefused(t *testing.T) {
	g := vllmfrontend.NewGate(vllmfrontend.GateConfig{})
	g.Start(t0)
	_, err := g.Engine(encode(t, wire.MsgReady, &wire.Ready{Error: "protocol version mismatch"}))
	if !errors.Is(err, vllmfrontend.ErrRefused) {
		t.Errorf("got %v, want ErrRefused", err)
	}
}

func TestGateRequests(t *testing.T) {
	g := serving(t)
	req, ok := toEngine(t, add(t, g, "a", 1, 5, 6, 7)).(*wire.EngineCoreRequest)
	if !ok || req.RequestID != "a" || req.SessionID != "conv-42" || req.DataParallelRank != nil || len(req.PromptTokenIDs) != 3 {
		t.Fatalf("ADD to the engine: %+v", req)
	}
	toEngine(t, add(t, g, "b", 0, 1))
	dup := outputsOf(t, one(t, add(t, g, "a", 1, 9), vllmfrontend.SockOutput)).Outputs[0]
	if dup.FinishReason != vllm.FinishError || dup.Error == nil || dup.Error.Code != "validation_error" {
		t.Errorf("duplicate ADD: %+v", dup)
	}
	outs := func(o ...wire.EngineCoreOutput) []vllmfrontend.Send {
		sends, err := g.Engine(encode(t, wire.MsgOutputs, &wire.EngineCoreOutputs{EngineIndex: 1, Outputs: o,
			SchedulerStats: &wire.SchedulerStats{NumRunningReqs: 2}, Timestamp: 3, FinishedRequests: []string{"x"}}))
		if err != nil {
			t.Fatal(err)
		}
		return sends
	}
	sends := outs(wire.EngineCoreOutput{RequestID: "a", NewTokenIDs: []int32{8}}, wire.EngineCoreOutput{RequestID: "b", NewTokenIDs: []int32{2}},
		wire.EngineCoreOutput{RequestID: "stranger", NewTokenIDs: []int32{1}})
	if len(sends) != 2 || sends[0].Index != 0 || sends[1].Index != 1 {
		t.Fatalf("outputs: %+v", sends)
	}
	b, a := outputsOf(t, sends[0]), outputsOf(t, sends[1])
	if a.EngineIndex != 1 || len(a.Outputs) != 1 || a.Outputs[0].RequestID != "a" || b.FinishedRequests != nil {
		t.Errorf("client 1 got %+v", a)
	}
	if b.SchedulerStats == nil || a.SchedulerStats != nil {
		t.Errorf("scheduler_stats should go to the first message only: %v %v", b.SchedulerStats, a.SchedulerStats)
	}
	if ps := a.Outputs[0].PrefillStats; ps == nil || ps.NumPromptTokens != 3 || ps.NumComputedTokens != 3 {
		t.Errorf("first output's prefill_stats %+v", ps)
	}
	sends = outs(wire.EngineCoreOutput{RequestID: "a", NewTokenIDs: []int32{9}, FinishReason: wire.FinishLength})
	last := outputsOf(t, one(t, sends, vllmfrontend.SockOutput)).Outputs[0]
	if last.PrefillStats != nil || !last.Finished || last.FinishReason != vllm.FinishLength {
		t.Errorf("last output %+v", last)
	}
	if sends := outs(wire.EngineCoreOutput{RequestID: "a", NewTokenIDs: []int32{1}}); len(sends) != 0 {
		t.Errorf("output after finish: %+v", sends)
	}
	abort, _ := vllm.EncodeAbort([]string{"b", "a", "never"})
	if ab, ok := toEngine(t, g.Input(0, abort)).(*wire.Abort); !ok || !cmp.Equal(ab.RequestIDs, []string{"b"}) {
		t.Errorf("ABORT to the engine: %+v", ab)
	}
	if sends := outs(wire.EngineCoreOutput{RequestID: "b", FinishReason: wire.FinishAbort}); len(sends) != 0 {
		t.Errorf("an aborted request's output went out: %+v", sends)
	}
}

func TestGateUtilities(t *testing.T) {
	tests := []struct {
		method  string
		args    []byte // msgpack array
		result  any    // decoded value; nil with failure
		failure string
	}{
		{"get_supported_tasks", nil, []any{"generate"}, ""},
		{"reset_mm_cache", nil, nil, ""},
		{"pause_scheduler", nil, nil, "Call to pause_scheduler method failed: this engine core cannot pause its scheduler"},
		{"no_such_method", nil, nil, `Call to no_such_method method failed: this engine core has no method "no_such_method"`},
	}
	g := serving(t)
	for i, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			f, _ := vllm.EncodeUtility(&vllm.UtilityRequest{ClientIndex: 1, CallID: vllm.CallID(1 << 63 >> i), Method: tt.method, Args: tt.args})
			s := one(t, g.Input(0, f), vllmfrontend.SockOutput)
			u := outputsOf(t, s).UtilityOutput
			if s.Index != 1 || u == nil || u.CallID != vllm.CallID(1<<63>>i) {
				t.Fatalf("answer on %d: %+v", s.Index, u)
			}
			if tt.failure != "" {
				if u.FailureMessage == nil || *u.FailureMessage != tt.failure || u.Result != nil {
					t.Errorf("got %+v, want failure %q", u, tt.failure)
				}
				return
			}
			var v any
			if u.FailureMessage != nil || u.Result == nil {
				t.Fatalf("result %+v", u)
			}
			if !u.Result.Value.IsNil() { // None decodes to no bytes
				if err := wire.Unmarshal(u.Result.Value, &v); err != nil {
					t.Fatalf("result %+v: %v", u, err)
				}
			}
			if diff := cmp.Diff(tt.result, v); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("sleep forwarded", func(t *testing.T) {
		f, _ := vllm.EncodeUtility(&vllm.UtilityRequest{ClientIndex: 0, CallID: 78, Method: "sleep", Args: []byte{0x92, 0x02, 0xa4, 'w', 'a', 'i', 't'}})
		u, ok := toEngine(t, g.Input(0, f)).(*wire.Utility)
		if !ok || u.Method != "sleep" || !cmp.Equal(u.Args, []any{int64(2), "wait"}) {
			t.Fatalf("UTILITY to the engine: %+v", u)
		}
	})
	t.Run("add_lora forwarded with vLLM's LoRARequest", func(t *testing.T) {
		// [["sql", 1, "/a/sql"]]: the array_like LoRARequest, defaults omitted
		args := []byte{0x91, 0x93, 0xa3, 's', 'q', 'l', 0x01, 0xa6, '/', 'a', '/', 's', 'q', 'l'}
		f, _ := vllm.EncodeUtility(&vllm.UtilityRequest{ClientIndex: 0, CallID: 79, Method: "add_lora", Args: args})
		u, ok := toEngine(t, g.Input(0, f)).(*wire.Utility)
		if !ok || u.Method != "add_lora" || !cmp.Equal(u.Args, []any{[]any{"sql", int64(1), "/a/sql"}}) {
			t.Fatalf("UTILITY to the engine: %+v", u)
		}
	})
	t.Run("reset_prefix_cache forwarded", func(t *testing.T) {
		f, _ := vllm.EncodeUtility(&vllm.UtilityRequest{ClientIndex: 0, CallID: 77, Method: "reset_prefix_cache", Args: []byte{0x92, 0xc2, 0xc2}})
		u, ok := toEngine(t, g.Input(0, f)).(*wire.Utility)
		if !ok || u.Method != "reset_prefix_cache" || !cmp.Equal(u.Args, []any{false, false}) {
			t.Fatalf("UTILITY to the engine: %+v", u)
		}
		res, _ := wire.Marshal(true)
		sends, _ := g.Engine(encode(t, wire.MsgUtilityResult, &wire.UtilityResult{CallID: u.CallID, Result: res}))
		out := outputsOf(t, one(t, sends, vllmfrontend.SockOutput)).UtilityOutput
		if out.CallID != 77 || out.Result == nil || !cmp.Equal([]byte(out.Result.Value), []byte{0xc3}) {
			t.Errorf("answer %+v", out)
		}
	})
}

func TestGateDeath(t *testing.T) {
	g := serving(t)
	toEngine(t, add(t, g, "a", 0, 1))
	sends, err := g.Engine(encode(t, wire.MsgEngineDead, &wire.EngineDead{Reason: "device lost"}))
	if err != nil || len(sends) != 2 {
		t.Fatalf("ENGINE_DEAD: %+v, %v", sends, err)
	}
	for i, s := range sends {
		if s.Sock != vllmfrontend.SockOutput || s.Index != i || !vllm.IsEngineCoreDead(s.Frames) {
			t.Errorf("send %d: %+v, want ENGINE_CORE_DEAD on output %d", i, s, i)
		}
	}
	if reason, dead := g.Dead(); !dead || reason != "device lost" {
		t.Errorf("Dead() = %q, %v", reason, dead)
	}
	if again := g.Die("twice"); len(again) != 0 {
		t.Errorf("a second death sent %+v", again)
	}
	f, _ := vllm.EncodeAbort([]string{"a"})
	if sends := g.Input(0, f); len(sends) != 0 {
		t.Errorf("input after death: %+v", sends)
	}
}

func TestGateShutdown(t *testing.T) {
	g := serving(t)
	toEngine(t, add(t, g, "a", 1, 1))
	o := outputsOf(t, one(t, g.Shutdown(), vllmfrontend.SockOutput)).Outputs
	if len(o) != 1 || o[0].RequestID != "a" || o[0].FinishReason != vllm.FinishAbort {
		t.Errorf("shutdown outputs %+v", o)
	}
	sends, _ := g.Engine(encode(t, wire.MsgEngineDead, &wire.EngineDead{Reason: "engine shutting down"}))
	if _, dead := g.Dead(); dead || len(sends) != 0 {
		t.Errorf("the engine's ENGINE_DEAD after a shutdown counted as a death: %+v", sends)
	}
}

// TestGatePerStepStats checks that vLLM's frontend gets each update's
// prefix cache counts from the engine core's cumulative ones, counted
// from the last stats sent on: stats with no output to carry them are
// not lost.
func TestGatePerStepStats(t *testing.T) {
	g := serving(t)
	toEngine(t, add(t, g, "a", 0, 5, 6, 7))
	outs := func(queries, hits int64, o ...wire.EngineCoreOutput) []vllmfrontend.Send {
		sends, err := g.Engine(encode(t, wire.MsgOutputs, &wire.EngineCoreOutputs{Outputs: o,
			SchedulerStats: &wire.SchedulerStats{PrefixCacheQueries: queries, PrefixCacheHits: hits}}))
		if err != nil {
			t.Fatal(err)
		}
		return sends
	}
	step := func(sends []vllmfrontend.Send) vllm.PrefixCacheStats {
		t.Helper()
		s := outputsOf(t, one(t, sends, vllmfrontend.SockOutput)).SchedulerStats
		if s == nil {
			t.Fatal("no scheduler_stats")
		}
		return s.PrefixCacheStats
	}
	if p := step(outs(48, 16, wire.EngineCoreOutput{RequestID: "a", NewTokenIDs: []int32{1}})); p.Requests != 1 || p.Queries != 48 || p.Hits != 16 {
		t.Errorf("first update: %+v, want 1 request, 48 queries, 16 hits", p)
	}
	if sends := outs(80, 32); len(sends) != 0 {
		t.Fatalf("stats without outputs were sent: %+v", sends)
	}
	if p := step(outs(100, 40, wire.EngineCoreOutput{RequestID: "a", NewTokenIDs: []int32{2}})); p.Queries != 52 || p.Hits != 24 {
		t.Errorf("update after an unsent one: %+v, want 52 queries and 24 hits since the first", p)
	}
}
