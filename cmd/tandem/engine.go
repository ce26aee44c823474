package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	enginemetrics "github.com/tandem-llm/tandem/enginecore/metrics"
	"github.com/tandem-llm/tandem/enginecore/runner"
	"github.com/tandem-llm/tandem/enginecore/spec"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/wire/gguf"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// engineFlags are `tandem engine`'s flags; `serve` passes them through.
type engineFlags struct {
	model               string
	servedModelName     string
	listen              string
	events              string
	device              string
	rank                int
	maxModelLen         int
	maxLogprobs         int
	pooling             string // --pooling (llama-server's) or --pooler-config's pooling_type (vLLM's)
	poolerConfig        string
	embed               embedFlags
	maxNumSeqs          int
	maxSessionRecords   int
	sleepIdleSeconds    int
	maxNumBatchedTokens int
	longPrefill         int
	targetStepTime      time.Duration
	blockSize           int
	kvCacheMemory       string
	enablePrefixCaching bool
	threads             int
	cpuPrecision        cpu.Precision
	kvCacheDtype        cpu.KVDtype
	weightsCacheDir     string // --weights-cache-dir: auto, off or a directory
	gpu                 gpuFlags
	heartbeatInterval   time.Duration
	heartbeatTimeout    time.Duration
	kvEventsConfig      string // --kv-events-config JSON (kvevents.go)
	kvPodID             string // --kv-events-pod-id, for {pod} in the topic
	metricsAddress      string // --metrics-address: the engine's own /metrics
	showHidden          string // --show-hidden-metrics-for-version, for the engine's /metrics
	spec                specFlags
	lora                loraEngineFlags
	rope                ropeFlags
	hfOverrides         string
	log                 logFlags
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.model, "model", "dummy", `a GGUF file, a Hugging Face directory, or "dummy" (random weights, byte tokenizer)`)
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model `name` in the API (default: dummy, or the model's base name)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 4096, "max `tokens` per request, prompt + output")
	fs.IntVar(&f.maxLogprobs, "max-logprobs", 20, "most logprobs (and prompt_logprobs) a request may ask for per token; -1 = no cap (the whole vocabulary, as a request's -1)")
	fs.StringVar(&f.pooling, "pooling", "", "`type` of /v1/embeddings' pooling of the hidden states (llama-server's flag): last, mean, cls, or none (every token's vector, on llama-server's /embedding only); default: the model file's pooling_type, else last (docs/api.md#post-v1embeddings)")
	fs.StringVar(&f.poolerConfig, "pooler-config", "", "vLLM's pooler `JSON`, e.g. {\"pooling_type\": \"MEAN\"}: its pooling_type as --pooling's")
	f.embed.register(fs)
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 256, "max `requests` running at once")
	fs.IntVar(&f.maxSessionRecords, "max-session-records", 16384, "session records (GET /v1/sessions counters) kept at most, least recently active dropped first; a session with no request and no cached block has none")
	fs.IntVar(&f.sleepIdleSeconds, "sleep-idle-seconds", 0, "put the engine to sleep after this many `seconds` without requests (llama-server's flag): it frees its KV cache and the resident pages of its mapped weights, and the next request wakes it; 0 or -1 = never (docs/api.md#sleep-mode)")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 2048, "max `tokens` computed per engine step")
	fs.IntVar(&f.longPrefill, "long-prefill-token-threshold", 0, "max `tokens` of one request computed per step (longer prompts take more steps); 0 = no cap")
	fs.DurationVar(&f.targetStepTime, "target-step-time", 250*time.Millisecond, "`time` an engine step aims at: the step's token budget shrinks from max-num-batched-tokens to what the device computes in this time, so one client's long prompt or many sequences hold other streams' next token no longer; 0 = off")
	fs.IntVar(&f.blockSize, "block-size", 16, "`tokens` per KV-cache block")
	fs.StringVar(&f.kvCacheMemory, "kv-cache-memory", "", "KV-cache size in `bytes` (suffixes K, M, G, Ki, Mi, Gi); default: 25% of available memory, capped at what max-num-seqs × max-model-len can use")
	fs.BoolVar(&f.enablePrefixCaching, "enable-prefix-caching", true, "reuse KV blocks of identical prefixes")
	fs.IntVar(&f.threads, "threads", runtime.NumCPU(), "CPU `threads` for the forward pass (default: every CPU; serve splits them among its engines)")
	fs.Var(&f.kvCacheDtype, "kv-cache-dtype", "KV cache element `type` on the CPU: auto (= float32, K/V exactly as computed) or float16 (half the memory: twice the tokens per --kv-cache-memory, llama.cpp's default; logits move by ~1e-3); docs/architecture.md#cpu-attention")
	fs.Var(&f.cpuPrecision, "cpu-precision", "`mode` of the CPU matmul activations: prompt (prompt tokens at 15 bits, generated tokens at 8), fast (all 8-bit, like llama.cpp) or high (all 15 bits); docs/architecture.md")
	fs.StringVar(&f.weightsCacheDir, "weights-cache-dir", "auto", "`directory` where the CPU backend keeps each model's repacked matrices as a file it maps (read-only, shared by engines, so the weights are resident once; the next start skips packing): auto = $XDG_CACHE_HOME/tandem/packed (~/.cache/tandem/packed), off = pack into memory at every start; docs/architecture.md#pack-cache")
	fs.StringVar(&f.device, "device", "cpu", "`device`: cpu, cuda:N in a binary built with -tags cuda, or null (no forward pass: every step returns scripted tokens at once, or after STEP with null:STEP; null:fail-after=N (or null:STEP,fail-after=N) fails every forward pass after N, warm-up's included, so the engine dies as on a device error: fault injection; for benchmarking the frontend and the wire)")
	f.gpu.register(fs)
	f.spec.register(fs)
	f.lora.register(fs)
	f.rope.register(fs)
	fs.StringVar(&f.hfOverrides, "hf-overrides", "", hfOverridesUsage)
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-interval", time.Second, "heartbeat period to and from frontends")
	fs.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", 5*time.Second, "a frontend silent this long is gone (its requests are aborted)")
	fs.StringVar(&f.kvEventsConfig, "kv-events-config", "", "vLLM's KV-events `JSON`: enable_kv_cache_events, publisher (zmq|null), endpoint (default tcp://*:5557), replay_endpoint, topic ({pod}, {model}, {rank} expand), buffer_steps, hwm, max_queue_size; and layout (map, the default, as vLLM 0.33; array, as vLLM ≤ 0.23). docs/wire.md §10")
	fs.StringVar(&f.kvPodID, "kv-events-pod-id", "", "pod `id` for {pod} in the KV-events topic (default: $POD_NAME, else the host name)")
	fs.StringVar(&f.log.level, "log-level", "info", "`level`: debug, info, warn or error")
	fs.StringVar(&f.log.format, "log-format", "text", "`format`: text or json")
}

// engineCommand is `tandem engine`'s command line.
func engineCommand(f *engineFlags, curve *curveFlags, v *vllmEngineFlags) *cli.Command {
	c := cli.New("tandem engine", "Run one engine core: load the model, size the KV cache, bind a ROUTER for "+
		"frontends (--listen) and a PUB for KV events (--events or --kv-events-config), and serve; or, with --protocol vllm, "+
		"connect to a vLLM frontend as a headless vLLM engine.", servingGroups...)
	c.Positional = "model"
	c.EnableConfig()
	fs := c.Flags
	f.register(fs)
	fs.StringVar(&f.listen, "listen", "", "ROUTER `endpoint` to bind for frontends, e.g. ipc:///tmp/tandem/engine-0 or tcp://0.0.0.0:5555 (required with --protocol tandem)")
	fs.StringVar(&f.events, "events", "", "PUB `endpoint` to bind for KV events (optional; frontends find it themselves); --kv-events-config's endpoint replaces it")
	fs.IntVar(&f.rank, "data-parallel-rank", 0, "this engine's index")
	fs.StringVar(&f.metricsAddress, "metrics-address", "", "serve this engine's own Prometheus /metrics (its vllm: series, labelled engine) on this `host:port`, e.g. :8001, for scaled-out frontends that run with --disable-engine-metrics; empty = none (docs/metrics.md)")
	fs.StringVar(&f.showHidden, "show-hidden-metrics-for-version", "", "on --metrics-address, also export the deprecated names vLLM `version` X.Y could still export (vllm:gpu_cache_usage_perc, …)")
	registerCurveServerFlags(fs, curve)
	v.register(fs)
	return c
}

func runEngine(ctx context.Context, args []string) error {
	var f engineFlags
	var curve curveFlags
	var vf vllmEngineFlags
	c := engineCommand(&f, &curve, &vf)
	if err := c.Parse(args); err != nil {
		return err
	}
	fs := c.Flags
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := vf.check(&f); err != nil {
		return err
	}
	if f.listen == "" && vf.protocol == "tandem" {
		return fmt.Errorf("engine: --listen is required")
	}
	log, err := stderrLogger(&f.log, "proc", "engine", "rank", f.rank)
	if err != nil {
		return err
	}
	// Check the socket security before loading the model, so a bad bind
	// fails fast.
	var listenOpts []zmq.Option
	if f.listen != "" {
		if listenOpts, err = curve.serverOptions(f.listen, log); err != nil {
			return err
		}
	}
	kvc, err := parseKVEventsConfig(f.kvEventsConfig)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	var replayEP string
	if kvc.enabled() {
		if f.events != "" && f.events != kvc.Endpoint {
			return fmt.Errorf("engine: --events %s and --kv-events-config's endpoint %s differ: give one", f.events, kvc.Endpoint)
		}
		f.events, replayEP = kvc.Endpoint, kvc.replay()
	}
	var eventOpts, replayOpts []zmq.Option
	if f.events != "" {
		if eventOpts, err = curve.serverOptions(f.events, log); err != nil {
			return err
		}
		if kvc.HWM > 0 {
			eventOpts = append(eventOpts, zmq.WithHWM(kvc.HWM))
		}
	}
	if replayEP != "" {
		if replayOpts, err = curve.serverOptions(replayEP, log); err != nil {
			return err
		}
	}
	if err := metrics.CheckHiddenVersion(f.showHidden); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	// The metrics address is bound and served at once (a taken port fails
	// before the model loads); it answers 503 until the engine core exists.
	var engineMetrics swapHandler
	engineMetrics.set(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "engine starting", http.StatusServiceUnavailable)
	}))
	if f.metricsAddress != "" {
		ln, err := net.Listen("tcp", f.metricsAddress)
		if err != nil {
			return fmt.Errorf("engine: --metrics-address: %w", err)
		}
		defer serveMetrics(ln, &engineMetrics)()
	}
	if _, _, err := parseDevice(f.device); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if f.maxLogprobs < -1 {
		return fmt.Errorf("engine: --max-logprobs %d: want -1 (no cap) or ≥ 0", f.maxLogprobs)
	}
	pooling, err := poolingType(f.pooling, f.poolerConfig)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if err := f.embed.check(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	specCfg, err := f.spec.resolve()
	if err != nil {
		return err
	}
	ropeOpts, err := f.rope.options()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	hfOpts, err := parseHFOverrides(f.hfOverrides)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	ropeOpts = append(ropeOpts, hfOpts...)
	be, info, vocab, err := loadBackend(f.model, f.device, f.maxModelLen, f.threads, cpuOptions{f.cpuPrecision, f.kvCacheDtype, weightsCacheDir(f.weightsCacheDir)}, log, ropeOpts...)
	if err != nil {
		return err
	}
	defer be.Close()
	var draftBE runner.Backend
	if specCfg != nil && specCfg.Method == spec.MethodDraftModel {
		log.Info("loading the draft model", "path", specCfg.Model)
		draftBE, _, _, err = loadBackend(specCfg.Model, f.device, f.maxModelLen, f.threads, cpuOptions{f.cpuPrecision, f.kvCacheDtype, weightsCacheDir(f.weightsCacheDir)}, log)
		if err != nil {
			return fmt.Errorf("engine: the draft model: %w", err)
		}
		defer draftBE.Close()
	}
	if !set["max-model-len"] {
		f.maxModelLen = min(f.maxModelLen, info.MaxContextLen)
	} else if f.maxModelLen > info.MaxContextLen {
		return fmt.Errorf("engine: --max-model-len %d exceeds the model's context length %d", f.maxModelLen, info.MaxContextLen)
	}
	numBlocks, err := deviceKVBlocks(f, be, log)
	if err != nil {
		return err
	}
	name := enginecore.ServedName(f.servedModelName, f.model)
	ref, err := modelRef(f.model)
	if err != nil {
		return err
	}
	core, err := enginecore.New(enginecore.Config{
		EngineIndex:         f.rank,
		Model:               ref,
		ServedModelName:     name,
		MaxModelLen:         f.maxModelLen,
		MaxLogprobs:         &f.maxLogprobs,
		Pooling:             pooling,
		MaxLoRARank:         f.lora.maxRank,
		MaxLoRAs:            f.lora.cache(),
		BlockSize:           f.blockSize,
		NumBlocks:           numBlocks,
		MaxNumSeqs:          f.maxNumSeqs,
		MaxSessionRecords:   f.maxSessionRecords,
		SleepIdle:           time.Duration(max(f.sleepIdleSeconds, 0)) * time.Second,
		KVEvents:            kvc.engineKVEvents(f.kvPodID, name, f.rank),
		Vocab:               vocab,
		Speculative:         specCfg,
		DraftBackend:        draftBE,
		MaxNumBatchedTokens: f.maxNumBatchedTokens,
		EnablePrefixCaching: f.enablePrefixCaching,

		LongPrefillTokenThreshold: f.longPrefill,
		StepTarget:                f.targetStepTime,
		HeartbeatInterval:         f.heartbeatInterval,
		HeartbeatTimeout:          f.heartbeatTimeout,
		Version:                   version,
		Logger:                    log,
	}, be)
	if err != nil {
		return err
	}
	log.Info("warming up")
	took, err := core.WarmUp(ctx, 64)
	if err != nil {
		return err
	}
	log.Info("warm-up done", "took", took.Round(time.Millisecond))
	var pub enginecore.Publisher
	if f.events != "" {
		p, err := zmq.BindPub(f.events, eventOpts...)
		if err != nil {
			return fmt.Errorf("engine: bind %s: %w", f.events, err)
		}
		defer p.Close()
		pub = p
	}
	if replayEP != "" {
		r, err := zmq.BindRouter(replayEP, replayOpts...)
		if err != nil {
			return fmt.Errorf("engine: bind %s: %w", replayEP, err)
		}
		defer r.Close()
		core.ServeReplay(r)
	}
	engineMetrics.set(enginemetrics.New(enginemetrics.Config{ModelName: name, Engine: f.rank, BlockSize: f.blockSize, NumBlocks: numBlocks,
		GPUNames: metrics.ShowsGPUNames(f.showHidden), Stats: core.Stats}).Handler())
	if vf.protocol == "vllm" {
		notifyReady()
		return vf.serve(ctx, &f, core, pub, log)
	}
	router, err := zmq.BindRouter(f.listen, listenOpts...)
	if err != nil {
		return fmt.Errorf("engine: bind %s: %w", f.listen, err)
	}
	defer router.Close()
	log.Info("engine core serving", "listen", router.Endpoint(), "metrics", f.metricsAddress, "events", f.events, "kv_topic", core.KVTopic(), "replay", replayEP,
		"model", name, "max_model_len", f.maxModelLen, "threads", f.threads)
	notifyReady() // the ROUTER is bound: frontends' messages queue until Serve reads them
	return core.Serve(ctx, router, pub)
}

// serveMetrics serves h at /metrics on ln until stop.
func serveMetrics(ln net.Listener, h http.Handler) (stop func()) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return func() { _ = hs.Close() }
}

// loadBackend builds the backend for --device (see newBackend) over
// --model: the dummy model, a GGUF file or a Hugging Face directory. The
// returned backend's Close also releases the model file. The vocabulary
// (for constrained decoding) is nil when the model does not give it.
func loadBackend(name, device string, maxModelLen, threads int, opts cpuOptions, log *slog.Logger, lopts ...loader.OpenOption) (runner.Backend, runner.ModelInfo, *gguf.Vocab, error) {
	start := time.Now()
	if name != "dummy" {
		log.Info("loading model", "path", name)
	}
	served, err := loader.Open(name, maxModelLen, lopts...)
	if err != nil {
		return nil, runner.ModelInfo{}, nil, fmt.Errorf("engine: %w", err)
	}
	cfg, w, release := served.Config, served.Weights, served.Release
	var be runner.Backend
	if nopts, isNull, nerr := parseNull(device); nerr != nil {
		err = nerr
	} else if isNull {
		be, err = newNull(cfg, served.Vocab, nopts)
	} else {
		be, err = newBackend(device, cfg, w, threads, opts)
	}
	if err != nil {
		if release != nil {
			_ = release()
		}
		return nil, runner.ModelInfo{}, nil, fmt.Errorf("engine: %w", err)
	}
	info := be.Model()
	logPacking(be, log)
	log.Info("model loaded", "model", name, "arch", info.Arch, "layers", info.NumLayers, "vocab", info.VocabSize,
		"context", info.MaxContextLen, "took", time.Since(start).Round(time.Millisecond))
	if release == nil {
		return be, info, served.Vocab, nil
	}
	return closer{Backend: be, release: release}, info, served.Vocab, nil
}

// logPacking says where the CPU backend's packed matrices live.
func logPacking(be runner.Backend, log *slog.Logger) {
	p, ok := be.(interface{ PackInfo() cpu.PackInfo })
	if !ok {
		return
	}
	i := p.PackInfo()
	mib := float64(i.Bytes) / (1 << 20)
	switch {
	case i.Err != nil:
		log.Warn("weights cache unusable: packed into memory", "err", i.Err, "mib", mib, "took", i.Took.Round(time.Millisecond))
	case i.File == "":
		log.Info("weights packed into memory", "mib", mib, "took", i.Took.Round(time.Millisecond))
	case i.Hit:
		log.Info("weights mapped from the cache", "file", i.File, "mib", mib, "took", i.Took.Round(time.Millisecond))
	default:
		log.Info("weights packed into the cache", "file", i.File, "mib", mib, "took", i.Took.Round(time.Millisecond))
	}
}

// closer closes the backend, then the model file it reads from.
type closer struct {
	runner.Backend
	release func() error
}

// memoryReleaser is the backend's part in sleep mode (enginecore's, the
// CPU backend's), forwarded through closer.
type memoryReleaser interface {
	ReleaseKV()
	ReleaseWeights()
}

// ReleaseKV and ReleaseWeights forward sleep mode's releases to a backend
// that has them (the CPU backend), and do nothing for one without.
func (c closer) ReleaseKV() {
	if r, ok := c.Backend.(memoryReleaser); ok {
		r.ReleaseKV()
	}
}

func (c closer) ReleaseWeights() {
	if r, ok := c.Backend.(memoryReleaser); ok {
		r.ReleaseWeights()
	}
}

// Unwrap is the backend closer wraps, for the optional interfaces
// enginecore looks for (KV block copies).
func (c closer) Unwrap() runner.Backend { return c.Backend }

func (c closer) Close() error {
	err := c.Backend.Close()
	if rerr := c.release(); err == nil {
		err = rerr
	}
	return err
}
