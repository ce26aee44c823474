package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/frontend/batch"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/server"
)

// runBatchFlags are `tandem run-batch`'s own flags; the engine flags are
// engineFlags'.
type runBatchFlags struct {
	input          string
	output         string
	engines        string
	dp             int
	concurrency    int
	tokenizer      string
	chatTemplate   string
	tools          toolFlags
	lora           loraFlags
	maxRequestBody string
}

// runBatchCommand is `tandem run-batch`'s command line.
func runBatchCommand(ef *engineFlags, f *runBatchFlags) *cli.Command {
	c := cli.New("tandem run-batch", "Run an OpenAI batch file (like vllm run-batch) through the frontend's HTTP handler, "+
		"in process, against engine cores it starts for --model or, with --engines, running ones.", servingGroups...)
	c.EnableConfig()
	fs := c.Flags
	ef.register(fs)
	for _, name := range []string{"i", "input-file"} {
		fs.StringVar(&f.input, name, "", "input JSONL `file` of {custom_id, method, url, body} lines, or - for stdin (required)")
	}
	for _, name := range []string{"o", "output-file"} {
		fs.StringVar(&f.output, name, "", "output JSONL `file` of {id, custom_id, response, error} lines, or - for stdout (required)")
	}
	fs.StringVar(&f.engines, "engines", "", "comma-separated ROUTER `endpoints` of running engine cores (default: start engines for --model)")
	fs.IntVar(&f.dp, "data-parallel-size", 1, "engine cores to start (`K`) when --engines is not given")
	fs.IntVar(&f.concurrency, "max-concurrency", 64, "batch `lines` in flight at once")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer to use: a GGUF `file` or a Hugging Face directory (default: the model)")
	fs.StringVar(&f.chatTemplate, "chat-template", "", "the chat template replacing the model's: a Jinja `file`, a built-in name (llama.cpp's: chatml, llama3, command-r, gemma, phi3, phi4, mistral-v7, deepseek3, zephyr, falcon3, vicuna) or the template itself")
	f.tools.register(fs)
	f.lora.register(fs)
	fs.StringVar(&f.maxRequestBody, "max-request-body", "16M", "largest accepted request body of one line, in `bytes`")
	return c
}

// runBatch runs an OpenAI batch file through the frontend's HTTP handler,
// in process, against engine cores it starts (like serve) or, with
// --engines, against running ones.
func runBatch(ctx context.Context, args []string) error {
	var ef engineFlags
	var f runBatchFlags
	c := runBatchCommand(&ef, &f)
	if err := c.Parse(args); err != nil {
		return err
	}
	fs := c.Flags
	if f.input == "" || f.output == "" {
		return errors.New("run-batch: -i INPUT and -o OUTPUT are required")
	}
	if f.dp < 1 {
		return errors.New("run-batch: --data-parallel-size must be ≥ 1")
	}
	if err := f.tools.check(); err != nil {
		return fmt.Errorf("run-batch: %w", err)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	log, err := stderrLogger(&ef.log, "proc", "run-batch")
	if err != nil {
		return err
	}
	in, err := openInput(f.input)
	if err != nil {
		return err
	}
	defer in.Close()

	ctx, cancel := context.WithCancelCause(ctx)
	var engines sync.WaitGroup
	defer engines.Wait() // after cancel: the engines stop first
	defer cancel(nil)
	endpoints := f.engines
	if endpoints == "" {
		if endpoints, err = startBatchEngines(ctx, cancel, &engines, fs, set, ef, f.dp, log); err != nil {
			return err
		}
	}
	client, err := engineclient.Dial(engineclient.Config{Endpoints: strings.Split(endpoints, ","), Logger: log})
	if err != nil {
		return err
	}
	defer client.Close()
	if err := waitEngines(ctx, client, log); err != nil {
		return enginesFailed(ctx, err)
	}
	info, _ := client.Info()
	tok, err := loadTokenizer(info, f.tokenizer, f.chatTemplate)
	if err != nil {
		return fmt.Errorf("run-batch: %w", err)
	}
	toolParser, err := f.tools.format(tok)
	if err != nil {
		return fmt.Errorf("run-batch: %w", err)
	}
	reasoningParser, err := f.tools.reasoningFormat(tok)
	if err != nil {
		return fmt.Errorf("run-batch: %w", err)
	}
	cfg := server.Config{
		ServedModelName: info.ServedModelName, ModelRoot: info.Model, VocabSize: info.VocabSize, MaxModelLen: info.MaxModelLen, MaxLogprobs: &info.MaxLogprobs, Pooling: info.Pooling, ClassifierLabels: info.ClassifierLabels, BlockSize: info.BlockSize,
		NumBlocks: info.NumBlocks, MaxRequestBody: f.maxRequestBody, Version: version, Logger: log, ToolParser: toolParser,
		ReasoningParser: reasoningParser,
	}
	f.tools.apply(&cfg)
	if err := f.lora.apply(&cfg, info, false); err != nil {
		return fmt.Errorf("run-batch: %w", err)
	}
	srv := server.New(cfg, server.ClientEngine(client), tok)
	out, err := createOutput(f.output)
	if err != nil {
		return err
	}
	start := time.Now()
	sum, err := batch.Run(ctx, srv.Handler(), in, out, batch.Options{Concurrency: f.concurrency, Progress: os.Stderr, Interactive: isTerminal(os.Stderr)})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return enginesFailed(ctx, fmt.Errorf("run-batch: %w", err))
	}
	log.Info("batch done", "lines", sum.NumLines, "succeeded", sum.NumSucceeded, "failed", sum.NumFailed,
		"output", f.output, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// startBatchEngines starts dp engine processes for the run, supervised
// until ctx ends as serve does (an engine that fails to start, or crashes
// too often, cancels ctx with its error), and returns their endpoints.
func startBatchEngines(ctx context.Context, cancel context.CancelCauseFunc, wg *sync.WaitGroup, fs *flag.FlagSet, set map[string]bool,
	ef engineFlags, dp int, log *slog.Logger) (string, error) {
	dir, err := os.MkdirTemp("", "tandem-batch-")
	if err != nil {
		return "", fmt.Errorf("run-batch: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("run-batch: locating the tandem binary: %w", err)
	}
	threads := ef.threads
	if !set["threads"] {
		threads = max(1, runtime.NumCPU()/dp)
	}
	var endpoints []string
	var procs []*child
	for i := range dp {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		endpoints = append(endpoints, ep)
		a := []string{"engine", "--listen", ep, "--data-parallel-rank", strconv.Itoa(i), "--threads", strconv.Itoa(threads)}
		a = append(a, passThrough(fs, set, engineFlagNames)...)
		if !set["log-level"] {
			a = append(a, "--log-level=warn") // keep the progress bar readable
		}
		procs = append(procs, &child{name: fmt.Sprintf("engine-%d", i), exe: exe, args: a})
	}
	wg.Go(func() {
		if err := runChildren(ctx, procs, log); err != nil {
			cancel(fmt.Errorf("run-batch: %w", err))
		}
		// Engines remove their sockets on exit; then the dir goes.
		os.RemoveAll(dir)
	})
	return strings.Join(endpoints, ","), nil
}

// enginesFailed is the error of an engine that ended the run (ctx's
// cause), else err.
func enginesFailed(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// waitEngines waits until every engine is ready.
func waitEngines(ctx context.Context, client *engineclient.Client, log *slog.Logger) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := client.WaitReady(wctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, engineclient.ErrRefused) {
			return fmt.Errorf("run-batch: engines: %w", err)
		}
		log.Info("still waiting for engine cores")
	}
}

func openInput(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("run-batch: %w", err)
	}
	return f, nil
}

func createOutput(path string) (io.WriteCloser, error) {
	if path == "-" {
		return nopWriteCloser{os.Stdout}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("run-batch: %w", err)
	}
	return f, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
