package vllmengines

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// Sock names the socket a Send goes out on.
type Sock int

const (
	SockHandshake Sock = iota // the handshake ROUTER; Frames[0] is the engine's identity
	SockInput                 // rank's input ROUTER; Frames[0] is the engine's identity
	SockFrontend              // rank's Tandem ROUTER; Frames[0] is a frontend's identity
)

// Send is one message Gate wants sent.
type Send struct {
	Sock   Sock
	Rank   int
	Frames [][]byte
}

// GateConfig configures a Gate.
type GateConfig struct {
	Engines         int      // DP ranks 0..Engines-1
	Inputs, Outputs []string // per rank: the input ROUTER and output PULL addresses the engine connects to
	Model           string   // READY's model: the tokenizer's path, for the frontend
	ServedModelName string
	VocabSize       int
	EOSTokenIDs     []int32 // the tokenizer's; [0] becomes _eos_token_id, the others stop tokens
	MaxLogprobs     int     // READY's max_logprobs (vLLM's default 20)
	MaxSessions     int     // sessions remembered per rank; default 16384
	Nonce           string  // makes engine ids unique per bridge start
	Log             *slog.Logger
}

const (
	rankIdle  = iota // no HELLO yet
	rankHello        // HELLO answered, waiting for the ready response and READY
	rankReady
	rankDead // said ENGINE_CORE_DEAD; a new HELLO starts over
)

type owner struct {
	frontend string // the Tandem frontend's identity
	id       string // its request id
	session  string
}

type session struct {
	requests, prompt, output int64
	running                  int
	last                     float64 // unix seconds
	recent                   []string
}

type rank struct {
	state       int
	identity    []byte
	resp        *vllm.EngineCoreReadyResponse
	readySeen   bool
	incarnation int
	engineID    string
	frontends   map[string]bool
	inflight    map[string]owner // vLLM request id → who asked
	sessions    map[string]*session
	stats       *vllm.SchedulerStats
}

// Gate is the pure core: one vLLM 0.33 DP deployment presented as
// Engines Tandem engines. Not safe for concurrent use.
type Gate struct {
	cfg   GateConfig
	ranks []*rank
	fnums map[string]int // frontend identity → short number, for request ids
}

// NewGate returns a Gate with every rank waiting for its engine's HELLO.
func NewGate(cfg GateConfig) *Gate {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 16384
	}
	if cfg.MaxLogprobs == 0 {
		cfg.MaxLogprobs = wire.DefaultMaxLogprobs
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	g := &Gate{cfg: cfg, fnums: map[string]int{}}
	for range cfg.Engines {
		g.ranks = append(g.ranks, &rank{frontends: map[string]bool{}, inflight: map[string]owner{}, sessions: map[string]*session{}})
	}
	return g
}

// RankIdentity is the identity a vLLM engine of DP rank r presents: r as
// 2 little-endian bytes.
func RankIdentity(r int) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(r)) }

func (g *Gate) rankOf(identity []byte) (int, bool) {
	if len(identity) != 2 {
		return 0, false
	}
	r := int(binary.LittleEndian.Uint16(identity))
	return r, r < len(g.ranks)
}

// Ready reports whether rank r's engine finished its handshake.
func (g *Gate) Ready(r int) bool { return g.ranks[r].state == rankReady }

// Handshake takes a message from the handshake ROUTER ([identity][frame]).
func (g *Gate) Handshake(frames [][]byte) []Send {
	if len(frames) != 2 {
		return nil
	}
	r, ok := g.rankOf(frames[0])
	if !ok {
		g.cfg.Log.Error("vLLM engine with an unexpected identity (a DP rank outside --data-parallel-size?)", "identity", fmt.Sprintf("%x", frames[0]))
		return nil
	}
	m, err := vllm.DecodeHandshake(frames[1])
	if err != nil {
		g.cfg.Log.Error("malformed handshake message", "rank", r, "err", err)
		return nil
	}
	rk := g.ranks[r]
	switch m.Status {
	case vllm.StatusHello:
		var out []Send
		if rk.state == rankReady {
			out = g.die(r, "the engine said HELLO again (restarted)")
		}
		meta, err := vllm.EncodeHandshakeMetadata(&vllm.EngineHandshakeMetadata{Addresses: vllm.EngineZmqAddresses{
			Inputs: []string{g.cfg.Inputs[r]}, Outputs: []string{g.cfg.Outputs[r]}}})
		if err != nil {
			g.cfg.Log.Error("encode handshake metadata", "err", err)
			return out
		}
		rk.state, rk.identity, rk.resp, rk.readySeen = rankHello, slices.Clone(frames[0]), nil, false
		g.cfg.Log.Info("vLLM engine said HELLO", "rank", r, "local", m.Local, "headless", m.Headless)
		return append(out, Send{Sock: SockHandshake, Rank: r, Frames: [][]byte{rk.identity, meta}})
	case vllm.StatusReady:
		if rk.state != rankHello {
			g.cfg.Log.Error("vLLM engine said READY before HELLO", "rank", r)
			return nil
		}
		rk.readySeen = true
		g.maybeReady(r)
	default:
		g.cfg.Log.Error("unknown handshake status", "rank", r, "status", m.Status)
	}
	return nil
}

// Input takes a message from rank r's input ROUTER: the engine's
// EngineCoreReadyResponse, the only thing an engine sends there.
func (g *Gate) Input(r int, frames [][]byte) []Send {
	rk := g.ranks[r]
	if len(frames) != 2 || rk.state != rankHello {
		return nil
	}
	resp, err := vllm.DecodeReadyResponse(frames[1])
	if err != nil {
		g.cfg.Log.Error("malformed EngineCoreReadyResponse", "rank", r, "err", err)
		return nil
	}
	rk.resp = resp
	g.maybeReady(r)
	return nil
}

func (g *Gate) maybeReady(r int) {
	rk := g.ranks[r]
	if rk.resp == nil || !rk.readySeen {
		return
	}
	rk.state = rankReady
	rk.incarnation++
	rk.engineID = fmt.Sprintf("vllm-%s-%d-%d", g.cfg.Nonce, r, rk.incarnation)
	g.cfg.Log.Info("vLLM engine core ready", "rank", r, "vllm_version", rk.resp.VLLMVersion, "max_model_len", rk.resp.MaxModelLen,
		"num_gpu_blocks", rk.resp.NumGPUBlocks, "block_size", rk.resp.BlockSize, "dtype", rk.resp.DType)
}

// die marks rank r dead and tells its frontends.
func (g *Gate) die(r int, reason string) []Send {
	rk := g.ranks[r]
	rk.state = rankDead
	clear(rk.inflight)
	for _, s := range rk.sessions {
		s.running = 0
	}
	var out []Send
	for f := range rk.frontends {
		out = append(out, g.toFrontend(r, f, wire.MsgEngineDead, &wire.EngineDead{Reason: reason})...)
	}
	g.cfg.Log.Error("vLLM engine core died", "rank", r, "reason", reason)
	return out
}

func (g *Gate) toFrontend(r int, frontend string, t wire.MsgType, payload any) []Send {
	frames, err := wire.Encode(t, payload)
	if err != nil {
		g.cfg.Log.Error("encode", "type", t, "err", err)
		return nil
	}
	return []Send{{Sock: SockFrontend, Rank: r, Frames: append([][]byte{[]byte(frontend)}, frames...)}}
}
