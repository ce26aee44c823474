package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
)

// serveFlags are `tandem serve`'s flags: the engines' and the frontends'
// (passed through), and its own.
type serveFlags struct {
	engine     engineFlags
	frontend   frontendFlags
	dp         int    // engine cores to start
	apiServers int    // frontends to start
	runDir     string // IPC socket directory
	insecure   bool   // --insecure-engine-socket, for a non-loopback KV-events endpoint
	router     routerFlags
}

// serveCommand is serve's command line.
func serveCommand(f *serveFlags) *cli.Command {
	c := cli.New("tandem serve", "Start engine cores (one per GPU, or --data-parallel-size K on CPU) and "+
		"frontends as separate processes and supervise them: a process that fails to start stops serve with its error, "+
		"one that crashes later is restarted with backoff.", servingGroups...)
	c.Positional = "model"
	c.EnableConfig()
	fs := c.Flags
	f.engine.register(fs)
	fs.Lookup("model").Usage = `a GGUF file, a Hugging Face directory, "dummy" (random weights, byte tokenizer), or a Hugging Face repository OWNER/REPO[:TAG] when no such path exists (as vllm serve takes it): its safetensors checkpoint, else its GGUF as -hf picks it, is downloaded into the models cache`
	f.frontend.registerHTTP(fs)
	fs.StringVar(&f.frontend.tokenizer, "tokenizer", "", "tokenizer to use: a GGUF `file` or a Hugging Face directory (default: the model)")
	fs.StringVar(&f.frontend.chatTemplate, "chat-template", "", "the chat template replacing the model's: a Jinja `file`, a built-in name (llama.cpp's: chatml, llama3, command-r, gemma, phi3, phi4, mistral-v7, deepseek3, zephyr, falcon3, vicuna) or the template itself")
	f.frontend.tools.register(fs)
	fs.IntVar(&f.dp, "data-parallel-size", 1, "engine cores to start (`K`); on CPU they split --threads")
	fs.IntVar(&f.apiServers, "api-server-count", 1, "frontend processes to start (`M`), sharing the port with SO_REUSEPORT")
	fs.StringVar(&f.runDir, "run-dir", "", "`directory` for the engines' IPC sockets (default: a new temporary directory)")
	fs.BoolVar(&f.insecure, "insecure-engine-socket", false, "let the engines bind a non-loopback --kv-events-config endpoint without CURVE: anyone who reaches it reads the KV events")
	f.router.register(fs)
	return c
}

// runServe starts K engine cores and M frontends as separate processes of
// this same binary and supervises them (supervise.go): one that fails to
// start ends serve with its error, one that crashes after it was ready is
// restarted with backoff; SIGINT/SIGTERM stops them all.
func runServe(ctx context.Context, args []string) error {
	var sf serveFlags
	c := serveCommand(&sf)
	if err := c.Parse(args); err != nil {
		return err
	}
	fs := c.Flags
	ef, ff, dp, apiServers := &sf.engine, &sf.frontend, &sf.dp, &sf.apiServers
	if *dp < 1 || *apiServers < 1 {
		return fmt.Errorf("serve: --data-parallel-size and --api-server-count must be ≥ 1")
	}
	if err := ff.tools.check(); err != nil { // before any engine loads a model
		return fmt.Errorf("serve: %w", err)
	}
	if err := ff.api.check(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	ff.log = ef.log
	log, err := stderrLogger(&ef.log, "proc", "serve")
	if err != nil {
		return err
	}
	// The frontends bind the port themselves; checking it here first
	// fails before any engine loads a model.
	if _, port, ok, err := vertexFromEnv(os.Getenv); err != nil {
		return fmt.Errorf("serve: %w", err)
	} else if ok {
		ff.port = port // Vertex AI's AIP_HTTP_PORT, which the frontends listen on
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := serveFromHub(ctx, &sf, fs, set, log); err != nil { // -hf, --model OWNER/REPO
		return err
	}
	if sf.router.on(set) {
		return runRouter(ctx, &sf, fs, log)
	}
	if err := checkPort(ff.host, ff.port); err != nil {
		return err
	}
	dir := sf.runDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tandem-"); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("serve: locating the tandem binary: %w", err)
	}
	devices, err := serveDevices(set, ef.device, *dp, log) // one engine per GPU, else CPU engines
	if err != nil {
		return err
	}
	*dp = len(devices)
	threads := ef.threads
	if !set["threads"] {
		threads = max(1, runtime.NumCPU() / *dp)
	}

	kvc, err := parseKVEventsConfig(ef.kvEventsConfig)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if kvc.enabled() && *dp > 1 && strings.Contains(kvc.Topic, "{pod}") && !strings.Contains(kvc.Topic, "{rank}") {
		log.Warn("the engines share one pod id in their KV-events topic; add {rank} to tell them apart", "topic", kvc.Topic)
	}
	var endpoints []string
	var procs []*child
	for i := range *dp {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		endpoints = append(endpoints, ep)
		a := []string{"engine",
			"--listen", ep,
			"--data-parallel-rank", strconv.Itoa(i),
			"--threads", strconv.Itoa(threads),
			"--device", devices[i],
		}
		// KV events go where --kv-events-config says, each engine's endpoints
		// offset by its rank as vLLM does; without it, to an IPC socket only
		// serve's frontends read. Either way with a replay socket (an IPC one
		// in the run directory unless the config names one), so a frontend
		// restarted later loads the blocks cached before it (engineclient).
		rc := kvEventsDefaults()
		rc.EnableKVCacheEvents, rc.Publisher, rc.Endpoint = true, "zmq", "ipc://"+filepath.Join(dir, fmt.Sprintf("events-%d.sock", i))
		if kvc.enabled() {
			if rc, err = kvc.forRank(i); err != nil {
				return fmt.Errorf("serve: %w", err)
			}
		}
		if rc.replay() == "" {
			r := "ipc://" + filepath.Join(dir, fmt.Sprintf("replay-%d.sock", i))
			rc.ReplayEndpoint = &r
		}
		a = append(a, "--kv-events-config", rc.JSON())
		a = append(a, passThrough(fs, set, engineFlagNames)...)
		procs = append(procs, &child{name: fmt.Sprintf("engine-%d", i), exe: exe, args: a})
	}
	// Several frontends share the port, so a scrape reaches one of them:
	// each serves its own series on a socket, and adds the others' to its
	// /metrics (frontend/metrics, peers.go), as vLLM's API servers do.
	metricsSocket := func(i int) string { return filepath.Join(dir, fmt.Sprintf("metrics-%d.sock", i)) }
	for i := range *apiServers {
		a := []string{"frontend", "--engines", strings.Join(endpoints, ",")}
		if *apiServers > 1 {
			var peers []string
			for j := range *apiServers {
				if j != i {
					peers = append(peers, metricsSocket(j))
				}
			}
			a = append(a, "--reuse-port", "--metrics-socket", metricsSocket(i), "--metrics-peers", strings.Join(peers, ","))
		}
		a = append(a, passThrough(fs, set, frontendFlagNames)...)
		procs = append(procs, &child{name: fmt.Sprintf("frontend-%d", i), exe: exe, args: a})
	}
	log.Info("starting", "engines", *dp, "frontends", *apiServers, "threads_per_engine", threads, "run_dir", dir,
		"url", fmt.Sprintf("http://%s", net.JoinHostPort(ff.host, strconv.Itoa(ff.port))))
	if err := runChildren(ctx, procs, log); err != nil {
		return err
	}
	log.Info("all processes stopped")
	return nil
}

// checkPort fails when host:port cannot be listened on (in use, or an
// address this machine does not have).
func checkPort(host string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return ln.Close()
}

// Flags that serve forwards to engines and frontends when given.
var (
	engineFlagNames = []string{"model", "served-model-name", "max-model-len", "max-logprobs", "pooling", "pooler-config", "runner", "convert", "task", "embeddings", "embedding", "max-num-seqs", "max-num-batched-tokens", "max-session-records", "sleep-idle-seconds",
		"long-prefill-token-threshold", "target-step-time", "block-size", "kv-cache-memory", "kv-cache-dtype", "cpu-precision", "weights-cache-dir", "gpu-memory-utilization", "enable-prefix-caching", "heartbeat-interval", "heartbeat-timeout",
		"kv-events-pod-id", "insecure-engine-socket", "log-level", "log-format",
		"rope-scaling", "rope-scale", "yarn-orig-ctx", "hf-overrides",
		"speculative-config", "spec-type", "spec-ngram-simple-size-n", "spec-ngram-simple-size-m",
		"md", "model-draft", "spec-draft-model", "spec-draft-n-max", "spec-draft-n-min", "spec-draft-p-min", "spec-synth-rates",
		"max-lora-rank", "max-loras", "max-cpu-loras"}
	frontendFlagNames = []string{"host", "port", "api-key", "api-key-file", "served-model-name", "heartbeat-interval", "heartbeat-timeout",
		"log-level", "log-format", "max-request-body", "tokenizer", "chat-template", "tool-call-parser", "enable-auto-tool-choice", "reasoning-parser", "reasoning-budget", "reasoning-budget-message", "reasoning-effort-map", "reasoning-format", "routing", "max-waiting-requests", "max-connections", "max-request-output-tokens",
		"show-hidden-metrics-for-version", "enable-force-include-usage", "enable-server-load-tracking", "return-tokens-as-token-ids", "enable-tokenizer-info-endpoint", "enable-sleep-mode", "context-shift", "webui-mcp-proxy", "ui-mcp-proxy", "enable-per-request-metrics", "root-path", "disable-web-ui", "enable-prompt-tokens-details", "no-slots", "slot-save-path", "seed",
		"alias", "tags", "accept-any-model", "default-chat-template-kwargs", "reasoning",
		"allowed-origins", "cors-origins", "allow-credentials", "allowed-methods", "allowed-headers", "verbose", "prefill-assistant",
		"tools", "tools-runtime", "mcp-servers-config", "mcp-servers-json",
		"enable-lora", "lora-modules", "lora", "lora-scaled", "lora-init-without-apply"}
)

func passThrough(fs *flag.FlagSet, set map[string]bool, names []string) []string {
	var out []string
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && (set[n] || n == "model") {
			out = append(out, "--"+n+"="+f.Value.String())
		}
	}
	return out
}
