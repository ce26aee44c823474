package cpu

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// BenchmarkForward times the dummy model (B = 16, GOMAXPROCS threads):
// one decode step of batch 1 and 16 at context 128, and a 128-token
// prefill. tok/s counts the step's tokens.
func BenchmarkForward(b *testing.B) {
	cfg, w := dummy()
	benchSteps(b, cfg, w, []int{runtime.GOMAXPROCS(0)})
}

// smolLM2 is a random-weight model of SmolLM2-135M-Instruct's shape and
// types (Q4_1 matrices, tied Q8_0 embeddings; 30 layers, dim 576, 9/3
// heads, FFN 1536, vocab 49152), built once: quantizing takes seconds.
var smolLM2 = sync.OnceValues(func() (model.Config, *model.Weights) {
	cfg := model.Config{
		Name: "smollm2-135m-shape", Arch: "llama", VocabSize: 49152, Dim: 576, NumLayers: 30,
		NumHeads: 9, NumKVHeads: 3, HeadDim: 64, FFNDim: 1536, RopeTheta: 100000, NormEps: 1e-5,
		MaxContextLen: 8192, BOSTokenID: 1, EOSTokenIDs: []int32{2}, TiedEmbeddings: true,
	}
	w, err := model.Random(cfg, model.RandomTypes{Matrix: model.Q4_1, Embed: model.Q8_0}, 135)
	if err != nil {
		panic(err)
	}
	return cfg, w
})

// BenchmarkSmolLM2Shape times the SmolLM2-135M-shaped Q4_1 model at 1 and
// 2 threads: decode steps of batch 1 and 16 at context 128, and a
// 128-token prefill at int8 (llama.cpp's arithmetic) and as the default
// precision computes prompts (prefill-prompt), for comparison with
// llama.cpp (llama-bench tg/pp).
func BenchmarkSmolLM2Shape(b *testing.B) {
	cfg, w := smolLM2()
	benchSteps(b, cfg, w, []int{1, 2})
}

// llama1B is a random-weight model of the 1B Llama shape the CPU issue
// measures (dim 2048, 16 layers, 32/8 heads, FFN 8192, vocab 32k, untied
// output) in Q4_0, or mixed as llama.cpp's Q4_K_M mixes it (Q4_K, with
// Q6_K for the output and half of ffn_down and attn_v). Quantizing takes
// about 15 s each.
var llama1B = map[string]func() (model.Config, *model.Weights){
	"Q4_0": sync.OnceValues(func() (model.Config, *model.Weights) {
		return random1B(model.RandomTypes{Matrix: model.Q4_0, Embed: model.Q4_0, Output: model.Q6_K})
	}),
	"Q4_K_M": sync.OnceValues(func() (model.Config, *model.Weights) {
		return random1B(model.RandomTypes{Matrix: model.Q4_K, Down: model.Q6_K, V: model.Q6_K, Embed: model.Q4_K, Output: model.Q6_K})
	}),
}

func random1B(types model.RandomTypes) (model.Config, *model.Weights) {
	cfg := model.Config{
		Name: "llama-1b-shape", Arch: "llama", VocabSize: 32000, Dim: 2048, NumLayers: 16,
		NumHeads: 32, NumKVHeads: 8, HeadDim: 64, FFNDim: 8192, RopeTheta: 500000, NormEps: 1e-5,
		MaxContextLen: 8192, BOSTokenID: 1, EOSTokenIDs: []int32{2},
	}
	w, err := model.Random(cfg, types, 1)
	if err != nil {
		panic(err)
	}
	return cfg, w
}

// BenchmarkLlama1BShape times the 1B shape in Q4_0 and Q4_K_M at 1 and 2
// threads (decode of batch 1 and 16, 128-token prefill). Decode here is
// bound by DRAM bandwidth: ~0.6 GB of weights per token.
func BenchmarkLlama1BShape(b *testing.B) {
	for _, q := range []string{"Q4_0", "Q4_K_M"} {
		b.Run(q, func(b *testing.B) {
			cfg, w := llama1B[q]()
			benchSteps(b, cfg, w, []int{1, 2})
		})
	}
}

func benchSteps(b *testing.B, cfg model.Config, w *model.Weights, threads []int) {
	const ctxLen = 128
	decode := func(batch int) func(*harness) *runner.Step {
		return func(h *harness) *runner.Step {
			seqs := make([]seqState, batch)
			var warm runner.Step
			for i := range seqs {
				h.add(&warm, &seqs[i], prompt(ctxLen, uint64(i)), false)
			}
			h.forward(&warm)
			step := &runner.Step{}
			for i := range seqs {
				h.add(step, &seqs[i], []int32{int32(i)}, true)
			}
			return step // rerun in place: the same slots are rewritten
		}
	}
	prefill := func(h *harness) *runner.Step {
		step := &runner.Step{}
		h.add(step, &seqState{}, prompt(ctxLen, 1), true)
		return step
	}
	// prompt: the same prefill as the default --cpu-precision computes
	// a prompt (every token precise, ~15 bits).
	prefillPrompt := func(h *harness) *runner.Step {
		step := prefill(h)
		step.Seqs[0].PromptLen = ctxLen
		return step
	}
	tests := []struct {
		name  string
		setup func(*harness) *runner.Step
	}{
		{"decode/batch=1", decode(1)},
		{"decode/batch=16", decode(16)},
		{"prefill/tokens=128", prefill},
		{"prefill-prompt/tokens=128", prefillPrompt},
	}
	for _, th := range threads {
		for _, tt := range tests {
			b.Run(fmt.Sprintf("%s/threads=%d", tt.name, th), func(b *testing.B) {
				h := newHarness(b, cfg, w, th, 256, 16, 0)
				step := tt.setup(h)
				logits := make([]float32, len(step.Seqs)*cfg.VocabSize)
				ctx := context.Background()
				for b.Loop() {
					if err := h.be.Forward(ctx, step, logits); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(step.TokenIDs)*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// BenchmarkLongContext times the SmolLM2-135M shape at depth: the last
// 512-token chunk of an N-token prompt (the first N−512 already in the
// cache, so attention spans the whole prompt as a chunked prefill's last
// step does), and one decode step at depth N (llama-bench -d N). tok/s
// counts the step's tokens.
func BenchmarkLongContext(b *testing.B) {
	cfg, w := smolLM2()
	const chunk = 512
	for _, n := range []int{2048, 8192} {
		for _, th := range []int{1, 2} {
			for _, kv := range []KVDtype{KVFloat32, KVFloat16} {
				b.Run(fmt.Sprintf("prefill/depth=%d/kv=%s/threads=%d", n, kv, th), func(b *testing.B) {
					h := newHarness(b, cfg, w, th, n/16+1, 16, 0)
					halfKVIf(b, h, kv, n/16+1)
					s := &seqState{}
					toks := prompt(n, 1)
					for c := 0; c < n-chunk; c += chunk {
						var warm runner.Step
						h.add(&warm, s, toks[c:c+chunk], false)
						h.forward(&warm)
					}
					step := &runner.Step{}
					h.add(step, s, toks[n-chunk:], true)
					benchForward(b, h, step)
				})
			}
			for _, kv := range []KVDtype{KVFloat32, KVFloat16} {
				b.Run(fmt.Sprintf("decode/depth=%d/kv=%s/threads=%d", n, kv, th), func(b *testing.B) {
					h := newHarness(b, cfg, w, th, n/16+1, 16, 0)
					halfKVIf(b, h, kv, n/16+1)
					s := &seqState{}
					toks := prompt(n, 1)
					for c := 0; c < n-1; c += chunk {
						var warm runner.Step
						h.add(&warm, s, toks[c:min(c+chunk, n-1)], false)
						h.forward(&warm)
					}
					step := &runner.Step{}
					h.add(step, s, toks[n-1:], true)
					benchForward(b, h, step)
				})
			}
		}
	}
}

// halfKVIf switches h to a float16 cache of numBlocks blocks when kv says so.
func halfKVIf(b *testing.B, h *harness, kv KVDtype, numBlocks int) {
	if kv == KVFloat16 {
		halfKV(b, h, numBlocks, 16)
	}
}

// benchForward reruns step in place (the same slots are rewritten) and
// reports tok/s of its tokens.
func benchForward(b *testing.B, h *harness, step *runner.Step) {
	logits := make([]float32, len(step.Seqs)*h.be.Model().VocabSize)
	ctx := context.Background()
	for b.Loop() {
		if err := h.be.Forward(ctx, step, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(step.TokenIDs)*b.N)/b.Elapsed().Seconds(), "tok/s")
}
