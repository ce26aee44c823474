package vllmengines_test

import (
	"testing"
	"time"

	"github.com/tandem-llm/tandem/frontend/vllmengines"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

var t0 = time.Unix(1_800_000_000, 0)

func newGate() *vllmengines.Gate {
	return vllmengines.NewGate(vllmengines.GateConfig{Engines: 2, Inputs: []string{"tcp://h:1", "tcp://h:2"},
		Outputs: []string{"tcp://h:3", "tcp://h:4"}, Model: "/m", VocabSize: 100, EOSTokenIDs: []int32{2, 7}, Nonce: "n"})
}

func handshake(t *testing.T, status string) []byte {
	b, err := vllm.EncodeHandshake(&vllm.HandshakeMessage{Status: status, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// connect runs rank r's handshake in the given order of the ready
// response (input socket) and READY (handshake socket).
func connect(t *testing.T, g *vllmengines.Gate, r int, readyFirst bool) {
	t.Helper()
	id := vllmengines.RankIdentity(r)
	sends := g.Handshake([][]byte{id, handshake(t, vllm.StatusHello)})
	var meta *vllm.EngineHandshakeMetadata
	for _, s := range sends {
		if s.Sock == vllmengines.SockHandshake {
			m, err := vllm.DecodeHandshakeMetadata(s.Frames[1])
			if err != nil {
				t.Fatal(err)
			}
			meta = m
		}
	}
	if meta == nil || len(meta.Addresses.Inputs) != 1 || meta.Addresses.Outputs[0] != []string{"tcp://h:3", "tcp://h:4"}[r] {
		t.Fatalf("rank %d: metadata %+v: want its own input and output address", r, meta)
	}
	resp, _ := vllm.EncodeReadyResponse(&vllm.EngineCoreReadyResponse{MaxModelLen: 512, NumGPUBlocks: 64, BlockSize: 16, VLLMVersion: "0.33.0"})
	if readyFirst {
		g.Handshake([][]byte{id, handshake(t, vllm.StatusReady)})
		if g.Ready(r) {
			t.Fatal("ready before the ready response")
		}
		g.Input(r, [][]byte{id, resp})
	} else {
		g.Input(r, [][]byte{id, resp})
		g.Handshake([][]byte{id, handshake(t, vllm.StatusReady)})
	}
	if !g.Ready(r) {
		t.Fatalf("rank %d not ready after its handshake", r)
	}
}

func fromFrontend(t *testing.T, g *vllmengines.Gate, r int, f string, typ wire.MsgType, p any) []vllmengines.Send {
	t.Helper()
	frames, err := wire.Encode(typ, p)
	if err != nil {
		t.Fatal(err)
	}
	return g.Frontend(t0, r, append([][]byte{[]byte(f)}, frames...))
}

func decodeFrontend(t *testing.T, s vllmengines.Send) (wire.MsgType, any) {
	t.Helper()
	if s.Sock != vllmengines.SockFrontend {
		t.Fatalf("send on socket %d, want the frontend's", s.Sock)
	}
	typ, p, err := wire.Decode(s.Frames[1:])
	if err != nil {
		t.Fatal(err)
	}
	return typ, p
}

func TestGateHandshakeOrder(t *testing.T) {
	g := newGate()
	if g.Handshake([][]byte{vllmengines.RankIdentity(0), handshake(t, vllm.StatusReady)}) != nil || g.Ready(0) {
		t.Fatal("READY before HELLO made rank 0 ready")
	}
	if g.Handshake([][]byte{vllmengines.RankIdentity(5), handshake(t, vllm.StatusHello)}) != nil {
		t.Fatal("a rank outside the DP size was answered")
	}
	connect(t, g, 0, false)
	connect(t, g, 1, true)
}

// TestGateRequestLifecycle: HELLO is answered only once the engine is
// ready; an ADD is translated with vLLM's EOS keys and a per-frontend id;
// outputs come back under the frontend's id; ENGINE_CORE_DEAD becomes
// ENGINE_DEAD; a new HELLO from the rank is a new engine.
func TestGateRequestLifecycle(t *testing.T) {
	g := newGate()
	hello := &wire.Hello{ProtocolVersion: wire.ProtocolVersion, FrontendID: "fe"}
	if s := fromFrontend(t, g, 0, "fe", wire.MsgHello, hello); s != nil {
		t.Fatalf("HELLO answered before the engine connected: %v", s)
	}
	connect(t, g, 0, false)
	s := fromFrontend(t, g, 0, "fe", wire.MsgHello, hello)
	if len(s) != 1 {
		t.Fatalf("HELLO: %d sends", len(s))
	}
	_, p := decodeFrontend(t, s[0])
	ready := p.(*wire.Ready)
	if ready.MaxModelLen != 512 || ready.NumBlocks != 64 || ready.Model != "/m" || ready.VocabSize != 100 || ready.EngineID == "" {
		t.Fatalf("READY %+v", ready)
	}
	sp := wire.DefaultSamplingParams()
	sp.StopTokenIDs = []int32{9}
	s = fromFrontend(t, g, 0, "fe", wire.MsgAdd, &wire.EngineCoreRequest{RequestID: "r1", PromptTokenIDs: []int32{5, 6},
		SamplingParams: sp, SessionID: "conv"})
	if len(s) != 1 || s[0].Sock != vllmengines.SockInput || string(s[0].Frames[0]) != string(vllmengines.RankIdentity(0)) {
		t.Fatalf("ADD: %+v", s)
	}
	req, err := vllm.DecodeRequest(s[0].Frames[1:])
	if err != nil {
		t.Fatal(err)
	}
	add := req.Add
	if add.SessionID == nil || *add.SessionID != "conv" || add.SamplingParams.EOSTokenID == nil || *add.SamplingParams.EOSTokenID != 2 {
		t.Fatalf("ADD %+v", add)
	}
	if got := add.SamplingParams.AllStopTokenIDs; len(got) != 3 || got[0] != 2 || got[1] != 9 || got[2] != 7 {
		t.Errorf("_all_stop_token_ids %v, want [2 9 7] (EOS, stop tokens, the other EOS)", got)
	}
	// Outputs: one running, then finished with a prefix-cache hit.
	stats := &vllm.PrefillStats{NumCachedTokens: 16}
	outs, _ := vllm.EncodeOutputs(&vllm.EngineCoreOutputs{Outputs: []vllm.EngineCoreOutput{
		{RequestID: add.RequestID, NewTokenIDs: []int32{11}, PrefillStats: stats},
		{RequestID: "someone-else", NewTokenIDs: []int32{1}},
	}})
	s = g.Output(0, outs)
	if len(s) != 1 {
		t.Fatalf("outputs: %d sends, want 1 (the unknown id dropped)", len(s))
	}
	_, p = decodeFrontend(t, s[0])
	o := p.(*wire.EngineCoreOutputs).Outputs
	if len(o) != 1 || o[0].RequestID != "r1" || o[0].NumCachedTokens != 16 || o[0].FinishReason != wire.FinishNone {
		t.Fatalf("outputs %+v", o)
	}
	// The heartbeat reports the request and the session.
	s = fromFrontend(t, g, 0, "fe", wire.MsgHeartbeat, &wire.Heartbeat{})
	_, p = decodeFrontend(t, s[0])
	hb := p.(*wire.Heartbeat)
	if hb.NumRunning != 1 || hb.Sessions == nil || !hb.Sessions.Full || len(hb.Sessions.Added) != 1 || hb.Sessions.Added[0] != "conv" {
		t.Fatalf("heartbeat %+v sessions %+v", hb, hb.Sessions)
	}
	outs, _ = vllm.EncodeOutputs(&vllm.EngineCoreOutputs{Outputs: []vllm.EngineCoreOutput{
		{RequestID: add.RequestID, NewTokenIDs: []int32{2}, Finished: true, FinishReason: vllm.FinishStop}}})
	_, p = decodeFrontend(t, g.Output(0, outs)[0])
	if o := p.(*wire.EngineCoreOutputs).Outputs; o[0].FinishReason != wire.FinishStop {
		t.Fatalf("finished output %+v", o)
	}
	_, p = decodeFrontend(t, fromFrontend(t, g, 0, "fe", wire.MsgHeartbeat, &wire.Heartbeat{})[0])
	if hb := p.(*wire.Heartbeat); hb.NumRunning != 0 {
		t.Errorf("%d running after the finish", hb.NumRunning)
	}
	// Unknown utilities fail by name; get_sessions answers.
	_, p = decodeFrontend(t, fromFrontend(t, g, 0, "fe", wire.MsgUtility, &wire.Utility{CallID: 3, Method: "get_stats"})[0])
	if r := p.(*wire.UtilityResult); r.CallID != 3 || r.FailureMessage == "" {
		t.Errorf("get_stats: %+v, want a failure", r)
	}
	// Death, then a restart.
	s = g.Output(0, [][]byte{vllm.EngineCoreDead})
	if len(s) != 1 {
		t.Fatalf("ENGINE_CORE_DEAD: %d sends", len(s))
	}
	if typ, _ := decodeFrontend(t, s[0]); typ != wire.MsgEngineDead {
		t.Fatalf("ENGINE_CORE_DEAD became %v", typ)
	}
	s = fromFrontend(t, g, 0, "fe", wire.MsgAdd, &wire.EngineCoreRequest{RequestID: "r2", PromptTokenIDs: []int32{5}, SamplingParams: sp})
	_, p = decodeFrontend(t, s[0])
	if o := p.(*wire.EngineCoreOutputs).Outputs; o[0].FinishReason != wire.FinishError {
		t.Errorf("ADD to a dead rank: %+v, want an error output", o)
	}
	connect(t, g, 0, true)
	_, p = decodeFrontend(t, fromFrontend(t, g, 0, "fe", wire.MsgHello, hello)[0])
	if id := p.(*wire.Ready).EngineID; id == ready.EngineID {
		t.Errorf("a restarted engine kept engine id %s", id)
	}
}
