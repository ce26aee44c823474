package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/frontend/benchclient"
	"github.com/tandem-llm/tandem/frontend/router"
)

// benchFlags are `tandem bench`'s flags.
type benchFlags struct {
	baseURL, model, apiKey string
	serve, routing         string
	endpoint               string
	ds                     benchclient.DatasetConfig
	numClients, maxActive  int
	requestRate            float64
	temperature            float64
	ignoreEOS, noSession   bool
	blockSize              int
	resultDir, name        string
	title                  string
	replot                 string
}

// benchGroups are bench's help sections.
var benchGroups = []cli.Group{
	{Title: "Server", Flags: []string{"base-url", "model", "api-key", "serve", "routing", "endpoint"}},
	{Title: "Dataset", Flags: []string{"dataset", "seed", "num-prompts", "input-len", "output-len", "range-ratio", "prefix-len",
		"suffix-len", "num-prefixes", "num-conversations", "num-turns", "system-len", "context-len", "user-len"}},
	{Title: "Load", Flags: []string{"num-clients", "max-active-conversations", "request-rate", "temperature", "ignore-eos",
		"no-session-id", "block-size"}},
	{Title: "Results", Flags: []string{"result-dir", "name", "title", "replot"}},
}

func runBench(ctx context.Context, args []string) error {
	var f benchFlags
	if err := benchCommand(&f).Parse(args); err != nil {
		return err
	}
	if f.replot != "" {
		return replotBench(&f)
	}
	labels := []string{"run"}
	if f.serve != "" {
		labels = []string{string(router.Session)}
		if f.routing != "" {
			labels = strings.Split(f.routing, ",")
		}
		for _, l := range labels {
			if _, err := router.ParsePolicy(l); err != nil {
				return fmt.Errorf("bench: --routing: %w", err)
			}
		}
	} else if f.routing != "" {
		labels = []string{f.routing} // only a label: the server's routing is its own
	}
	var runs []*benchclient.Run
	for _, label := range labels {
		run, err := benchOnce(ctx, &f, label)
		if err != nil {
			return fmt.Errorf("bench %s: %w", label, err)
		}
		runs = append(runs, run)
	}
	var md bytes.Buffer
	benchclient.WriteMarkdown(&md, runs)
	fmt.Print(md.String())
	if f.resultDir == "" {
		return nil
	}
	return writeBenchResults(&f, runs)
}

// benchCommand is `tandem bench`'s command line.
func benchCommand(f *benchFlags) *cli.Command {
	c := cli.New("tandem bench", "Benchmark an OpenAI-compatible server like vllm bench serve, plus multi-turn "+
		"conversations: TTFT, TPOT, ITL, E2E latency and prefix-cache hits, as tables, JSON and a PNG.", benchGroups...)
	fs := c.Flags
	fs.StringVar(&f.baseURL, "base-url", "http://127.0.0.1:8000", "the OpenAI-compatible server to benchmark, a `URL` (any server; ignored with --serve)")
	fs.StringVar(&f.model, "model", "", "model `name` to request (default: the first of GET /v1/models)")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("TANDEM_API_KEY"), "sent as Authorization: Bearer (default $TANDEM_API_KEY)")
	fs.StringVar(&f.serve, "serve", "", `start "tandem serve `+"`ARGS`"+`" for each --routing policy in turn (fresh caches), e.g. "--model M --data-parallel-size 2"`)
	fs.StringVar(&f.routing, "routing", "", "with --serve: comma-separated `policies` to compare (default session); the run is labelled by policy")
	fs.StringVar(&f.endpoint, "endpoint", "completions", "random and prefix-repetition datasets: completions or chat (multi-turn always uses chat)")
	fs.StringVar(&f.ds.Name, "dataset", benchclient.DatasetRandom, "random, prefix-repetition or multi-turn")
	fs.Uint64Var(&f.ds.Seed, "seed", 1, "dataset and arrival seed")
	fs.IntVar(&f.ds.NumPrompts, "num-prompts", 100, "random, prefix-repetition: requests")
	fs.IntVar(&f.ds.InputLen, "input-len", 256, "random: words per prompt")
	fs.IntVar(&f.ds.OutputLen, "output-len", 64, "max_tokens of every request")
	fs.Float64Var(&f.ds.RangeRatio, "range-ratio", 0, "random: input lengths uniform in len·[1−r, 1+r]")
	fs.IntVar(&f.ds.PrefixLen, "prefix-len", 256, "prefix-repetition: words of each shared prefix")
	fs.IntVar(&f.ds.SuffixLen, "suffix-len", 64, "prefix-repetition: words of each suffix")
	fs.IntVar(&f.ds.NumPrefixes, "num-prefixes", 10, "prefix-repetition: distinct prefixes")
	fs.IntVar(&f.ds.NumConversations, "num-conversations", 16, "multi-turn: conversations")
	fs.IntVar(&f.ds.NumTurns, "num-turns", 5, "multi-turn: user turns per conversation")
	fs.IntVar(&f.ds.SystemLen, "system-len", 100, "multi-turn: words of the system prompt all conversations share")
	fs.IntVar(&f.ds.ContextLen, "context-len", 300, "multi-turn: words of each conversation's own document (first turn)")
	fs.IntVar(&f.ds.UserLen, "user-len", 20, "multi-turn: words of each question")
	fs.IntVar(&f.numClients, "num-clients", 4, "concurrency: requests in flight (single-shot) or clients (multi-turn)")
	fs.IntVar(&f.maxActive, "max-active-conversations", 1, "multi-turn: conversations each client interleaves")
	fs.Float64Var(&f.requestRate, "request-rate", 0, "Poisson arrivals in requests/s (per client for multi-turn); 0 = as fast as possible")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "ask for max_tokens tokens whatever the model says (vLLM extension)")
	fs.BoolVar(&f.noSession, "no-session-id", false, "multi-turn: do not send X-Session-ID")
	fs.IntVar(&f.blockSize, "block-size", 16, "KV block size, to count cacheable tokens in whole blocks")
	fs.StringVar(&f.resultDir, "result-dir", "", "write NAME.json and NAME.png into this `directory`")
	fs.StringVar(&f.name, "name", "", "result file name (default bench-DATASET-YYYYMMDD-HHMMSS)")
	fs.StringVar(&f.title, "title", "", "plot title (default: dataset and settings)")
	fs.StringVar(&f.replot, "replot", "", "read the runs from this result JSON instead of running (rewrites the tables and, with --result-dir, the PNG)")
	return c
}

// benchOnce runs the benchmark once, against --base-url or a fresh
// `tandem serve --routing label`.
func benchOnce(ctx context.Context, f *benchFlags, label string) (*benchclient.Run, error) {
	base := f.baseURL
	if f.serve != "" {
		url, stop, err := startServe(ctx, f.serve, label)
		if err != nil {
			return nil, err
		}
		defer stop()
		base = url
	}
	return benchclient.Execute(ctx, benchclient.Config{
		Label: label,
		Target: &benchclient.Target{BaseURL: base, Model: f.model, APIKey: f.apiKey, HTTP: &http.Client{Timeout: 10 * time.Minute},
			Temperature: f.temperature, IgnoreEOS: f.ignoreEOS},
		Dataset: f.ds, Endpoint: f.endpoint, NumClients: f.numClients, RequestRate: f.requestRate,
		MaxActive: f.maxActive, BlockSize: f.blockSize, NoSessionID: f.noSession, Progress: os.Stderr,
	})
}

// startServe runs `tandem serve ARGS --routing policy` on a free port and
// waits until it is healthy.
func startServe(ctx context.Context, args, policy string) (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	a := append([]string{"serve"}, strings.Fields(args)...)
	a = append(a, "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--routing", policy, "--log-level", "warn")
	cmd := exec.Command(exe, a...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting tandem serve: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	fmt.Fprintf(os.Stderr, "bench: started tandem serve %s --routing %s on %s\n", args, policy, url)
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && allEnginesReady(url) {
				return url, stop, nil
			}
		}
		select {
		case <-done:
			return "", nil, errors.New("tandem serve exited before becoming healthy")
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	stop()
	return "", nil, errors.New("tandem serve did not become healthy within 3 minutes")
}

// allEnginesReady reports whether GET /v1/engines lists no engine that is
// not ready (true when the server has no such endpoint).
func allEnginesReady(url string) bool {
	resp, err := http.Get(url + "/v1/engines")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return true
	}
	var body struct {
		Data []struct {
			State string `json:"state"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return true
	}
	for _, e := range body.Data {
		if e.State != "ready" {
			return false
		}
	}
	return true
}

// replotBench rewrites the Markdown tables (stdout) and the PNG of a
// saved result.
func replotBench(f *benchFlags) error {
	b, err := os.ReadFile(f.replot)
	if err != nil {
		return err
	}
	var doc struct {
		Settings struct {
			Dataset    benchclient.DatasetConfig `json:"dataset"`
			Serve      string                    `json:"serve"`
			NumClients int                       `json:"num_clients"`
		} `json:"settings"`
		Runs []*benchclient.Run `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("bench: --replot %s: %w", f.replot, err)
	}
	benchclient.WriteMarkdown(os.Stdout, doc.Runs)
	if f.resultDir == "" {
		return nil
	}
	f.ds, f.serve, f.numClients = doc.Settings.Dataset, doc.Settings.Serve, doc.Settings.NumClients
	if f.name == "" {
		f.name = strings.TrimSuffix(filepath.Base(f.replot), ".json")
	}
	return writePlot(f, doc.Runs)
}

// writeBenchResults writes NAME.json (settings and every run, samples
// included) and NAME.png.
func writeBenchResults(f *benchFlags, runs []*benchclient.Run) error {
	if err := os.MkdirAll(f.resultDir, 0o755); err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = fmt.Sprintf("bench-%s-%s", f.ds.Name, time.Now().Format("20060102-150405"))
	}
	doc := map[string]any{
		"date":    time.Now().UTC().Format(time.RFC3339),
		"version": version,
		"settings": map[string]any{
			"dataset": f.ds, "serve": f.serve, "base_url": f.baseURL, "num_clients": f.numClients,
			"max_active_conversations": f.maxActive, "request_rate": f.requestRate, "temperature": f.temperature,
			"ignore_eos": f.ignoreEOS, "block_size": f.blockSize, "endpoint": f.endpoint,
		},
		"runs": runs,
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(f.resultDir, name+".json")
	if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", jsonPath)
	f.name = name
	return writePlot(f, runs)
}

// writePlot writes NAME.png.
func writePlot(f *benchFlags, runs []*benchclient.Run) error {
	if err := os.MkdirAll(f.resultDir, 0o755); err != nil {
		return err
	}
	title := f.title
	if title == "" {
		title = fmt.Sprintf("tandem bench --dataset %s (%d clients)", f.ds.Name, f.numClients)
		if f.serve != "" {
			title += ": tandem serve " + f.serve
		}
	}
	var img bytes.Buffer
	if err := benchclient.WritePNG(&img, title, runs); err != nil {
		return err
	}
	pngPath := filepath.Join(f.resultDir, f.name+".png")
	if err := os.WriteFile(pngPath, img.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", pngPath)
	return nil
}
