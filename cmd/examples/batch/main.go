// Command batch answers many prompts at once with Tandem's offline API
// (llm.Batch, like vLLM's LLM.generate): one prompt per line of standard
// input, one JSON line per answer on standard output, in the same order.
// The engine core runs in this process; the engine batches the prompts
// together.
//
//	printf 'The capital of France is\nTwo plus two is\n' |
//	  go run ./cmd/examples/batch --model models/SmolLM2-135M-Instruct.Q4_1.gguf
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/tandem-llm/tandem/enginecore/inproc"
	"github.com/tandem-llm/tandem/frontend/llm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "batch:", err)
		os.Exit(1)
	}
}

// answer is one output line.
type answer struct {
	Prompt       string `json:"prompt"`
	Text         string `json:"text"`
	Finish       string `json:"finish_reason"`
	PromptTokens int    `json:"prompt_tokens"`
	OutputTokens int    `json:"completion_tokens"`
}

func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	model := fs.String("model", "models/SmolLM2-135M-Instruct.Q4_1.gguf", `a GGUF file, a Hugging Face directory, or "dummy"`)
	maxTokens := fs.Int("max-tokens", 32, "tokens per answer at most")
	temperature := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	threads := fs.Int("threads", runtime.NumCPU(), "CPU threads of the in-process engine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var prompts []string
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if lines.Text() != "" {
			prompts = append(prompts, lines.Text())
		}
	}
	if err := lines.Err(); err != nil {
		return err
	}
	eng, err := inproc.Start(ctx, inproc.Config{Model: *model, Threads: *threads, MaxModelLen: 2048})
	if err != nil {
		return err
	}
	defer eng.Close()
	l, err := llm.Open(ctx, llm.Config{Model: *model, Engines: []string{eng.Endpoint()}})
	if err != nil {
		return err
	}
	defer l.Close()

	p := llm.DefaultParams()
	p.Temperature, p.MaxTokens = *temperature, *maxTokens
	start := time.Now()
	res, err := l.Batch(ctx, prompts, p)
	if err != nil {
		return err
	}
	took := time.Since(start)
	enc := json.NewEncoder(out)
	var generated int
	for i, r := range res {
		c := r.Completions[0]
		generated += len(c.TokenIDs)
		if err := enc.Encode(answer{Prompt: prompts[i], Text: c.Text, Finish: c.Finish, PromptTokens: r.PromptTokens, OutputTokens: len(c.TokenIDs)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(errOut, "batch: %d prompts, %d tokens generated in %s (%.1f tok/s)\n",
		len(prompts), generated, took.Round(time.Millisecond), float64(generated)/took.Seconds())
	return nil
}
