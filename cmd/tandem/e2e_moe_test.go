package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// TestMoEServes serves a mixture of experts (a random-weight Qwen3-MoE
// GGUF, Q8_0, 8 experts of which 2 per token) with tandem serve and
// completes prompts through the OpenAI Go SDK, one at a time and then
// all at once: batched, the step's tokens share experts (each expert
// runs once over the rows routed to it), and every greedy completion
// must still be the one it was alone, token for token.
func TestMoEServes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts tandem serve")
	}
	path := filepath.Join(t.TempDir(), "tiny-qwen3moe.gguf")
	spec := testmodel.Spec{Arch: "qwen3moe", VocabSize: 512, Dim: 128, NumLayers: 2, NumHeads: 4, NumKVHeads: 2, FFNDim: 256,
		Experts: 8, ExpertsUsed: 2, ExpertFFNDim: 64, ContextLen: 1024, Seed: 41, MatrixType: model.Q8_0,
		Quantize: func(typ model.DType, v []float32) []byte { b, _ := model.Quantize(typ, v); return b }}
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "512", "--kv-cache-memory", "64Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := ctxTimeout(t, 2*time.Minute)

	prompts := []string{"The river town woke early", "1, 2, 3, 4,", "Bakers lit their ovens and", "Once upon a time there", "zzz"}
	complete := func(prompt string) (string, error) {
		resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:       "tiny-qwen3moe",
			Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens:   openai.Int(24),
			Temperature: openai.Float(0),
		})
		if err != nil {
			return "", err
		}
		if got := resp.Usage.CompletionTokens; got != 24 {
			return "", fmt.Errorf("%d completion tokens, want 24 (finish %q)", got, resp.Choices[0].FinishReason)
		}
		return resp.Choices[0].Text, nil
	}
	alone := make([]string, len(prompts))
	for i, pr := range prompts {
		var err error
		if alone[i], err = complete(pr); err != nil {
			t.Fatalf("%q alone: %v", pr, err)
		}
	}
	together := make([]string, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i, pr := range prompts {
		wg.Go(func() { together[i], errs[i] = complete(pr) })
	}
	wg.Wait()
	for i, pr := range prompts {
		switch {
		case errs[i] != nil:
			t.Errorf("%q together: %v", pr, errs[i])
		case together[i] != alone[i]:
			t.Errorf("%q: batched %q, alone %q", pr, together[i], alone[i])
		}
	}
	if alone[0] == alone[1] {
		t.Errorf("two prompts complete alike (%q): the model ignores its input", alone[0])
	}
}

// TestRopeScalingFlags serves a model past its context length with YaRN
// as Qwen3's model card says to, in llama-server's flags and in vLLM's
// JSON: without them the engine refuses a --max-model-len above the
// model's 512 tokens; with YaRN ×4 over them it serves 2048 and answers.
func TestRopeScalingFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts tandem serve")
	}
	path := filepath.Join(t.TempDir(), "tiny-qwen3.gguf")
	spec := testmodel.Spec{Arch: "qwen3", VocabSize: 512, Dim: 64, NumLayers: 1, NumHeads: 2, FFNDim: 128, ContextLen: 512, Seed: 43}
	if err := testmodel.WriteGGUF(path, spec); err != nil {
		t.Fatal(err)
	}
	code, _, _, stderr := runToExit(t, "serve", path, "--port", strconv.Itoa(freePort(t)), "--run-dir", t.TempDir(), "--max-model-len", "2048", "--kv-cache-memory", "16Mi")
	if code == 0 || !strings.Contains(stderr, "exceeds the model's context length 512") {
		t.Fatalf("without YaRN: exit %d, stderr:\n%s", code, stderr)
	}
	for _, flags := range [][]string{
		{"--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "512"},
		{"--rope-scaling", `{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":512}`},
	} {
		port := freePort(t)
		p := startProc(t, append([]string{"serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "16Mi"}, flags...)...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHealthy(t, base, p)
		client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
		resp, err := client.Completions.New(ctxTimeout(t, time.Minute), openai.CompletionNewParams{
			Model: "tiny-qwen3", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("long context ", 150))},
			MaxTokens: openai.Int(4), Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatalf("%v: %v", flags, err)
		}
		if resp.Usage.PromptTokens <= 512 {
			t.Errorf("%v: %d prompt tokens, want > 512", flags, resp.Usage.PromptTokens)
		}
		p.signal(syscall.SIGTERM)
		<-p.done
	}
}
