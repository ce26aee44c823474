package wire_test

import (
	"testing"

	"github.com/tandem-llm/tandem/wire"
)

// BenchmarkAddRoundTrip encodes and decodes one ADD with a 1000-token
// prompt, the frontend's and the engine's per-request codec cost.
func BenchmarkAddRoundTrip(b *testing.B) {
	req := sampleAdd()
	req.PromptTokenIDs = make([]int32, 1000) // [1000] token ids
	for i := range req.PromptTokenIDs {
		req.PromptTokenIDs[i] = int32(i * 37 % 32000)
	}
	b.ReportAllocs()
	for b.Loop() {
		frames, err := wire.Encode(wire.MsgAdd, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := wire.Decode(frames); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutputsRoundTrip encodes and decodes one OUTPUTS of 64
// single-token outputs, one engine step of a busy batch.
func BenchmarkOutputsRoundTrip(b *testing.B) {
	out := sampleOutputs()
	out.Outputs = make([]wire.EngineCoreOutput, 64) // [64] requests in the step
	for i := range out.Outputs {
		out.Outputs[i] = wire.EngineCoreOutput{RequestID: "cmpl-abc123-0-9f8e7d6c", NewTokenIDs: []int32{int32(i)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		frames, err := wire.Encode(wire.MsgOutputs, out)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := wire.Decode(frames); err != nil {
			b.Fatal(err)
		}
	}
}
