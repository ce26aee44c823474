package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestLoRAMatchesLlamaCpp applies a LoRA adapter to the default model in
// both engines: llama.cpp loads the GGUF adapter file itself
// (llama_adapter_lora_init, through node-llama-cpp's context lora
// option) and applies it at the request's scale, we load it with
// cpu.Backend.LoadLoRA. The adapter is random (rank 8, α 16, every
// attention and MLP matrix of every layer; no Hugging Face adapter can be
// fetched here), written as F32 and as F16, and strong enough to move
// the model: the control compares our logits without it to llama.cpp's
// with it, which must fail the bound by far. The model is the default
// model dequantized to float32 (as TestGemma3ModelF32 does), so that
// what differs is the adapter's arithmetic, not quantization noise it
// amplifies: bounds of 0.1 nats over llama.cpp's top 20 (measured
// 0.0002 with the F32 adapter, 0.002 with the F16 one; 14 and 6 nats
// without the adapter), top-1 equal but for near-ties of 0.05. token_embd is left out: the model ties its LM head to
// it, and llama.cpp then applies token_embd's flipped pair as the LM
// head's too, which does not multiply (the merged-weights test in
// enginecore/cpu covers the embedding's update).
func TestLoRAMatchesLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a 135M-parameter model on both engines")
	}
	if raceEnabled {
		t.Skip("race detector: single-threaded forward passes of a real model; nothing concurrent to check")
	}
	path := filepath.Join(t.TempDir(), "smollm2-f32.gguf")
	if err := dequantizedCopy(defaultModel(t), path); err != nil {
		t.Fatal(err)
	}
	const (
		bound = 0.1  // max |Δ log-softmax| over llama.cpp's top 20, nats; the control must exceed 10×
		tie   = 0.05 // oracle top-2 margin under which top-1 may differ, nats
	)
	texts := []string{chat("Write a haiku about the sea."), chat("What is the capital of France?")}
	prompts := runOracle(t, oracleRequest{Model: path, Tokenize: texts})[0].Tokens
	e := openEngine(t, path, 128)
	defer e.Close()
	c, shapes := e.cfg, lora.LayerShapes(e.cfg)
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		typ   model.DType
		scale float64
	}{{"f32 at scale 1", model.F32, 1}, {"f16 at scale 0.5", model.F16, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.typ.String()+".gguf")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			err = lora.Random(f, lora.Spec{Arch: c.Arch, Alpha: 16, Rank: 8, Shapes: shapes, Std: 0.08, Seed: 5, Type: tc.typ})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := e.be.LoadLoRA(file, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := runOracle(t, oracleRequest{Model: path, Prompts: prompts, TopK: 20, LoRA: []oracleLoRA{{Path: file, Scale: tc.scale}}})[0]
			var with, without agreement
			for i, p := range prompts {
				e.lora = nil
				bare := e.prefillFrom(t, p, 0)
				e.lora = []lora.Use{{Adapter: a, Scale: float32(tc.scale)}}
				ours := e.prefillFrom(t, p, 0)
				with.add(fmt.Sprintf("prompt %d", i), 0, ours, want.Prompts[i], nil, tie)
				without.add(fmt.Sprintf("prompt %d", i), 0, bare, want.Prompts[i], nil, tie)
			}
			e.lora = nil
			check(t, &with, bound)
			t.Logf("with the adapter: max |Δ log-softmax| %.3g (bound %.3g) at %s; %d positions, near-ties %d; without it: %.3g, %d top-1 mismatches",
				with.maxDelta, bound, with.worst, with.positions, with.nearTies, without.maxDelta, len(without.mismatches))
			if without.maxDelta < 10*bound {
				t.Errorf("control: the base model is within %.3g nats of llama.cpp with the adapter (%d top-1 mismatches of %d): the adapter is too weak for the test to see it",
					without.maxDelta, len(without.mismatches), without.positions)
			}
		})
	}
}
