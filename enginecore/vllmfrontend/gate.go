package vllmfrontend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/vllm"
)

// Sock names the socket a Send goes out on.
type Sock int

const (
	SockEngine    Sock = iota // the Tandem engine core: [type][payload], no identity
	SockHandshake             // DEALER to the vLLM frontend's handshake ROUTER
	SockInput                 // DEALER to the frontend's input ROUTER number Index
	SockOutput                // PUSH to the frontend's output PULL number Index
)

// Send is one message Gate wants sent.
type Send struct {
	Sock   Sock
	Index  int // SockInput, SockOutput: which of the frontend's sockets
	Frames [][]byte
}

// GateConfig configures a Gate. The numbers are the engine's own, for
// vLLM's EngineCoreReadyResponse; what the engine core says in its READY
// (max_model_len, blocks, block size) is taken from there.
type GateConfig struct {
	Rank                int    // --data-parallel-rank: the identity and engine_index
	DPSize              int    // --data-parallel-size
	MaxNumSeqs          int    // --max-num-seqs
	MaxNumBatchedTokens int    // --max-num-batched-tokens
	DType               string // the activations' type, e.g. "float32"
	HeartbeatInterval   time.Duration
	Log                 *slog.Logger
}

type phase int

const (
	phaseEngine  phase = iota // HELLO sent to the engine core, waiting for its READY
	phaseHello                // vLLM HELLO sent, waiting for EngineHandshakeMetadata
	phaseServing              // ready responses and READY sent
	phaseDead                 // ENGINE_CORE_DEAD sent (or shutting down): nothing more goes out
)

// request is one vLLM request in flight in the engine core.
type request struct {
	client          int // the frontend client: which output socket
	numPromptTokens int
	sentFirst       bool // its first output went out (with prefill_stats)
}

// call is a vLLM utility call forwarded to the engine core.
type call struct {
	client int
	id     vllm.CallID
	method string
}

// Gate is the pure core of a Tandem engine core behind a vLLM 0.33
// frontend: it takes one message at a time (from the engine core, or from
// the frontend's handshake or input sockets) and returns the messages to
// send. Not safe for concurrent use.
type Gate struct {
	cfg       GateConfig
	phase     phase
	ready     *wire.Ready
	addresses *vllm.EngineZmqAddresses
	inflight  map[string]*request
	calls     map[uint64]call
	nextCall  uint64
	lastBeat  time.Time
	dead      string // why the engine core died; "" while alive
	// sentStats is the engine core's last cumulative scheduler stats
	// sent on: vLLM's carry each update's counts (vllm.SchedulerStats.SetStep).
	sentStats *wire.SchedulerStats
}

// ErrRefused is what Engine returns when the engine core refuses the
// gate's HELLO.
var ErrRefused = errors.New("vllmfrontend: the engine core refused the connection")

// NewGate returns a Gate that has not said HELLO to the engine core yet.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.DPSize < 1 {
		cfg.DPSize = 1
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.DType == "" {
		cfg.DType = "float32"
	}
	return &Gate{cfg: cfg, inflight: map[string]*request{}, calls: map[uint64]call{}}
}

// Identity is what a vLLM engine of DP rank r presents on the handshake
// and input sockets: r as 2 little-endian bytes.
func Identity(r int) string { return string(binary.LittleEndian.AppendUint16(nil, uint16(r))) }

// Start is the gate's HELLO to the engine core.
func (g *Gate) Start(now time.Time) []Send {
	g.lastBeat = now
	return g.toEngine(wire.MsgHello, &wire.Hello{ProtocolVersion: wire.ProtocolVersion,
		FrontendID: fmt.Sprintf("vllm-frontend-rank-%d", g.cfg.Rank), PID: os.Getpid()})
}

// Tick sends the engine core a heartbeat each HeartbeatInterval: it drops
// a frontend that falls silent, and vLLM's frontend sends none.
func (g *Gate) Tick(now time.Time) []Send {
	if g.phase == phaseEngine || g.phase == phaseDead || now.Sub(g.lastBeat) < g.cfg.HeartbeatInterval {
		return nil
	}
	g.lastBeat = now
	return g.toEngine(wire.MsgHeartbeat, &wire.Heartbeat{Timestamp: float64(now.UnixNano()) / 1e9})
}

// Serving reports whether the vLLM handshake is done.
func (g *Gate) Serving() bool { return g.phase == phaseServing }

// Dead reports why the engine core died, if it did.
func (g *Gate) Dead() (reason string, dead bool) { return g.dead, g.dead != "" }

// Addresses are the frontend's input and output sockets, once Metadata
// took them.
func (g *Gate) Addresses() *vllm.EngineZmqAddresses { return g.addresses }

// Engine takes a message from the engine core ([type][payload]).
func (g *Gate) Engine(frames [][]byte) ([]Send, error) {
	t, msg, err := wire.Decode(frames)
	if err != nil {
		g.cfg.Log.Warn("malformed message from the engine core", "err", err)
		return nil, nil
	}
	switch p := msg.(type) {
	case *wire.Ready:
		if g.phase != phaseEngine {
			return nil, nil
		}
		if p.Error != "" {
			return nil, fmt.Errorf("%w: %s", ErrRefused, p.Error)
		}
		g.ready, g.phase = p, phaseHello
		hello, err := vllm.EncodeHandshake(&vllm.HandshakeMessage{Status: vllm.StatusHello, Headless: true})
		if err != nil {
			return nil, fmt.Errorf("vllmfrontend: HELLO: %w", err)
		}
		g.cfg.Log.Info("engine core ready; saying HELLO to the vLLM frontend", "max_model_len", p.MaxModelLen, "num_blocks", p.NumBlocks)
		return []Send{{Sock: SockHandshake, Frames: [][]byte{hello}}}, nil
	case *wire.EngineCoreOutputs:
		return g.outputs(p), nil
	case *wire.UtilityResult:
		return g.utilityResult(p), nil
	case *wire.EngineDead:
		return g.Die(p.Reason), nil
	case *wire.Heartbeat:
	default:
		g.cfg.Log.Warn("unexpected message from the engine core", "type", t)
	}
	return nil, nil
}

// Metadata takes the frontend's answer to HELLO (one frame): the input
// and output sockets to connect, which Addresses then returns. The shell
// connects them and calls Connected.
func (g *Gate) Metadata(frames [][]byte) error {
	if g.phase != phaseHello {
		return fmt.Errorf("vllmfrontend: a handshake message before HELLO")
	}
	if len(frames) != 1 {
		return fmt.Errorf("vllmfrontend: handshake answer of %d frames, want 1", len(frames))
	}
	m, err := vllm.DecodeHandshakeMetadata(frames[0])
	if err != nil {
		return fmt.Errorf("vllmfrontend: %w", err)
	}
	a := m.Addresses
	if len(a.Inputs) == 0 || len(a.Inputs) != len(a.Outputs) {
		return fmt.Errorf("vllmfrontend: EngineHandshakeMetadata with %d input and %d output addresses", len(a.Inputs), len(a.Outputs))
	}
	if a.CoordinatorInput != nil || a.CoordinatorOutput != nil {
		g.cfg.Log.Warn("the vLLM frontend runs a DP coordinator; this engine does not report to it (its load balancing sees no counts)")
	}
	g.addresses = &a
	return nil
}

// Connected is called once the input and output sockets are connected:
// it returns the EngineCoreReadyResponse for every input socket and then
// READY on the handshake socket, as vLLM's engine sends them.
func (g *Gate) Connected() ([]Send, error) {
	if g.phase != phaseHello || g.addresses == nil {
		return nil, fmt.Errorf("vllmfrontend: Connected before Metadata")
	}
	resp, err := vllm.EncodeReadyResponse(g.readyResponse())
	if err != nil {
		return nil, fmt.Errorf("vllmfrontend: ready response: %w", err)
	}
	ready, err := vllm.EncodeHandshake(&vllm.HandshakeMessage{Status: vllm.StatusReady, Headless: true})
	if err != nil {
		return nil, fmt.Errorf("vllmfrontend: READY: %w", err)
	}
	var out []Send
	for i := range g.addresses.Inputs {
		out = append(out, Send{Sock: SockInput, Index: i, Frames: [][]byte{resp}})
	}
	g.phase = phaseServing
	return append(out, Send{Sock: SockHandshake, Frames: [][]byte{ready}}), nil
}

func (g *Gate) readyResponse() *vllm.EngineCoreReadyResponse {
	r, c := g.ready, g.cfg
	tokens := int64(r.NumBlocks) * int64(r.BlockSize)
	conc := float64(tokens) / float64(max(r.MaxModelLen, 1))
	return &vllm.EngineCoreReadyResponse{
		MaxModelLen:               int64(r.MaxModelLen),
		NumGPUBlocks:              int64(r.NumBlocks),
		BlockSize:                 int64(r.BlockSize),
		DType:                     c.DType,
		VLLMVersion:               "0.33.0", // the protocol spoken; the engine is Tandem's (InstanceID)
		WorldSize:                 1,
		DataParallelSize:          int64(c.DPSize),
		TensorParallelSize:        1,
		PipelineParallelSize:      1,
		DecodeContextParallelSize: 1,
		DataParallelRank:          int64(c.Rank),
		MaxNumSeqs:                int64(c.MaxNumSeqs),
		MaxNumBatchedTokens:       int64(c.MaxNumBatchedTokens),
		InstanceID:                "tandem-" + r.EngineID,
		KVCacheSizeTokens:         &tokens,
		KVCacheMaxConcurrency:     &conc,
		EnableSleepMode:           true, // sleep, wake_up, is_sleeping: the engine core's (docs/api.md#sleep-mode)
		SupportsLoRA:              r.MaxLoRAs > 0,
		MaxLoRAs:                  int64(r.MaxLoRAs),
	}
}

// Die is the engine core's death: ENGINE_CORE_DEAD on every output
// socket, once. After it nothing more is sent.
func (g *Gate) Die(reason string) []Send {
	if g.phase == phaseDead {
		return nil
	}
	serving := g.phase == phaseServing
	g.phase, g.dead = phaseDead, reason
	if reason == "" {
		g.dead = "engine core died"
	}
	g.cfg.Log.Error("engine core died; telling the vLLM frontend ENGINE_CORE_DEAD", "reason", g.dead)
	if !serving {
		return nil
	}
	var out []Send
	for i := range g.addresses.Outputs {
		out = append(out, Send{Sock: SockOutput, Index: i, Frames: [][]byte{vllm.EngineCoreDead}})
	}
	return out
}

// Shutdown is a clean stop (SIGTERM), as vLLM's engine makes it: every
// request in flight finishes with ABORT, and the engine core's ENGINE_DEAD
// that follows is not a death.
func (g *Gate) Shutdown() []Send {
	if g.phase != phaseServing {
		g.phase = phaseDead
		return nil
	}
	byClient := map[int][]vllm.EngineCoreOutput{}
	for id, r := range g.inflight {
		byClient[r.client] = append(byClient[r.client], vllm.EngineCoreOutput{RequestID: id, NewTokenIDs: []int32{},
			Finished: true, FinishReason: vllm.FinishAbort})
	}
	clear(g.inflight)
	g.phase = phaseDead
	var out []Send
	for client := range g.addresses.Outputs {
		if outs := byClient[client]; len(outs) > 0 {
			out = append(out, g.toClient(client, &vllm.EngineCoreOutputs{Outputs: outs})...)
		}
	}
	return out
}

func (g *Gate) toEngine(t wire.MsgType, payload any) []Send {
	frames, err := wire.Encode(t, payload)
	if err != nil {
		g.cfg.Log.Error("encode for the engine core", "type", t, "err", err)
		return nil
	}
	return []Send{{Sock: SockEngine, Frames: frames}}
}

// toClient is o on frontend client's output socket.
func (g *Gate) toClient(client int, o *vllm.EngineCoreOutputs) []Send {
	o.EngineIndex = int64(g.cfg.Rank)
	frames, err := vllm.EncodeOutputs(o)
	if err != nil {
		g.cfg.Log.Error("encode outputs for the vLLM frontend", "err", err)
		return nil
	}
	return []Send{{Sock: SockOutput, Index: client, Frames: frames}}
}
