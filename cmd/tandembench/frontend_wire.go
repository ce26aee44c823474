package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// WireMeasure is the msgpack codec's cost for one message, measured alone
// in this process (package wire, as both the frontend and the engine
// call it).
type WireMeasure struct {
	Message    string  `json:"message"` // e.g. "OUTPUTS, 64 outputs of 1 token"
	Bytes      int     `json:"bytes"`   // payload frame
	EncodeNs   float64 `json:"encode_ns"`
	DecodeNs   float64 `json:"decode_ns"`
	EncodeAllo float64 `json:"encode_allocs"`
	DecodeAllo float64 `json:"decode_allocs"`
	Outputs    int     `json:"outputs,omitempty"` // per-request outputs in the message
}

// wireSamples are the messages measured: one ADD as the frontend sends
// for a chat prompt, and OUTPUTS of a step with 1, 64 and 512 requests
// decoding one token each.
func wireSamples() []struct {
	name    string
	t       wire.MsgType
	payload any
	outputs int
} {
	add := &wire.EngineCoreRequest{
		RequestID: "chatcmpl-9f301007c012bf830471d07437ea934d", PromptTokenIDs: make([]int32, 40),
		SamplingParams: wire.DefaultSamplingParams(), ArrivalTime: 1.7e9,
	}
	add.SamplingParams.MaxTokens = 128
	for i := range add.PromptTokenIDs {
		add.PromptTokenIDs[i] = int32(i*37) % 256
	}
	type sample = struct {
		name    string
		t       wire.MsgType
		payload any
		outputs int
	}
	out := []sample{{"ADD, 40-token prompt", wire.MsgAdd, add, 0}}
	for _, n := range []int{1, 64, 512} {
		o := &wire.EngineCoreOutputs{Timestamp: 1.7e9, Outputs: make([]wire.EngineCoreOutput, n)}
		for i := range o.Outputs {
			o.Outputs[i] = wire.EngineCoreOutput{RequestID: fmt.Sprintf("chatcmpl-%032x", i), NewTokenIDs: []int32{int32(i % 256)}}
		}
		name := fmt.Sprintf("OUTPUTS, %d outputs of 1 token", n)
		if n == 1 {
			name = "OUTPUTS, 1 output of 1 token"
		}
		out = append(out, sample{name, wire.MsgOutputs, o, n})
	}
	return out
}

// measureWire times wire.Encode and wire.Decode of every sample, best of
// three runs of iters (scaled down for the big messages).
func measureWire(iters int) []WireMeasure {
	var out []WireMeasure
	for _, s := range wireSamples() {
		n := max(1, iters/max(1, s.outputs/16))
		frames, err := wire.Encode(s.t, s.payload)
		if err != nil {
			panic(err) // the samples are valid messages
		}
		m := WireMeasure{Message: s.name, Bytes: len(frames[1]), Outputs: s.outputs}
		m.EncodeNs, m.EncodeAllo = timeOp(n, func() {
			if _, err := wire.Encode(s.t, s.payload); err != nil {
				panic(err)
			}
		})
		m.DecodeNs, m.DecodeAllo = timeOp(n, func() {
			if _, _, err := wire.Decode(frames); err != nil {
				panic(err)
			}
		})
		out = append(out, m)
	}
	return out
}

// timeOp runs op n times, three times over, and returns the best ns per
// op and the allocations per op.
func timeOp(n int, op func()) (ns, allocs float64) {
	var ms runtime.MemStats
	best := time.Duration(1 << 62)
	for range 3 {
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		t0 := time.Now()
		for range n {
			op()
		}
		best = min(best, time.Since(t0))
		runtime.ReadMemStats(&ms)
		allocs = float64(ms.Mallocs-m0) / float64(n)
	}
	return float64(best.Nanoseconds()) / float64(n), allocs
}
