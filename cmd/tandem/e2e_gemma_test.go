package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// gemma3Model is the GGUF `make model-gemma3` fetches; make test sets
// TANDEM_GEMMA3_MODEL.
func gemma3Model(t *testing.T) string {
	t.Helper()
	return envModel(t, "TANDEM_GEMMA3_MODEL", "Gemma 3 270M", "make model-gemma3")
}

// TestGemma3Serves serves the real Gemma 3 270M as the README says to
// (make run MODEL=…: tandem serve with the file) and completes prompts
// a base model knows, with the OpenAI Go SDK: short ones, and one
// behind 700 tokens of unrelated text, so that the engine's chunked
// prefill runs the local layers' 512-token window over a context it has
// left behind.
func TestGemma3Serves(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: serves a 270M-parameter model")
	}
	path := gemma3Model(t)
	port := freePort(t)
	p := startProc(t, "serve", path, "--port", strconv.Itoa(port), "--max-model-len", "2048", "--kv-cache-memory", "256Mi")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := ctxTimeout(t, 4*time.Minute)

	complete := func(t *testing.T, prompt string, n int64) (string, int64) {
		t.Helper()
		resp, err := client.Completions.New(ctx, openai.CompletionNewParams{
			Model:       "gemma-3-270m-q4_k_m",
			Prompt:      openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens:   openai.Int(n),
			Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Text, resp.Usage.PromptTokens
	}
	for _, tc := range []struct{ prompt, want string }{
		{"The Eiffel Tower is in the city of", " Paris"},
		{"1, 2, 3, 4, 5,", " 6, 7, 8"},
	} {
		if got, _ := complete(t, tc.prompt, 8); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q → %q, want it to start with %q", tc.prompt, got, tc.want)
		}
	}
	var long strings.Builder
	for i := range 14 {
		fmt.Fprintf(&long, "Chapter %d. The river town woke early: bakers lit their ovens, the ferry crossed %d times "+
			"before noon, and the old clock on the square, which had run %d minutes late since the flood, rang for a "+
			"wedding nobody remembered planning.\n\n", i+1, 3+i%5, 7*i+2)
	}
	long.WriteString("The Eiffel Tower is in the city of")
	got, n := complete(t, long.String(), 4)
	if n < 600 {
		t.Fatalf("the long prompt is %d tokens, want > 600 (past the 512-token window)", n)
	}
	if !strings.HasPrefix(got, " Paris") {
		t.Errorf("after %d tokens of prose: %q, want it to start with \" Paris\"", n, got)
	}
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "gemma-3-270m-q4_k_m" {
		t.Errorf("models %+v", page.Data)
	}
}
