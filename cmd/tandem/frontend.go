package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tandem-llm/tandem/cmd/tandem/internal/cli"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/router"
	"github.com/tandem-llm/tandem/frontend/server"
	"github.com/tandem-llm/tandem/frontend/servertools"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
)

// frontendFlags are `tandem frontend`'s flags.
type frontendFlags struct {
	engines           string
	host              string
	port              int
	apiKey            string
	apiKeyFile        string
	servedModelName   string
	maxRequestBody    string
	reusePort         bool
	routing           string
	maxWaiting        int
	maxOutput         int
	maxConnections    int
	showHidden        string // --show-hidden-metrics-for-version
	metricsSocket     string // --metrics-socket: this frontend's own series, for its peers
	metricsPeers      string // --metrics-peers: the other frontends' sockets
	noEngineMetrics   bool   // --disable-engine-metrics: the engines export their own
	disableWebUI      bool   // --disable-web-ui
	tokenizer         string
	chatTemplate      string
	tools             toolFlags
	vllm              vllmFrontFlags // --engine-protocol vllm
	api               apiFlags
	lora              loraFlags
	heartbeatInterval time.Duration
	heartbeatTimeout  time.Duration
	log               logFlags
}

// registerHTTP registers the flags serve shares with frontends.
func (f *frontendFlags) registerHTTP(fs *flag.FlagSet) {
	fs.StringVar(&f.host, "host", "127.0.0.1", "`address` to listen on")
	fs.IntVar(&f.port, "port", 8000, "port to listen on")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("TANDEM_API_KEY"), "require Authorization: Bearer <key> on /v1 routes (default $TANDEM_API_KEY)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "a `file` of accepted API keys, one per line (# comments); with two or more keys in all, each key is a tenant whose sessions, cache and stored responses are its own")
	fs.StringVar(&f.maxRequestBody, "max-request-body", "16M", "largest accepted request body, in `bytes`")
	fs.IntVar(&f.maxConnections, "max-connections", 4096, "HTTP `connections` open at once; one more is answered 503 and closed; 0 = no limit")
	fs.IntVar(&f.maxOutput, "max-request-output-tokens", server.DefaultMaxRequestOutputTokens, "most `tokens` one request may generate: the sum over its prompts × n of max_tokens × (1 + logprobs); more is a 400; negative = no limit")
	fs.IntVar(&f.maxWaiting, "max-waiting-requests", 0, "answer 429 (with Retry-After) while this many `requests` wait for a first token; 0 = no limit")
	fs.StringVar(&f.routing, "routing", string(router.Session), "routing `policy`: session, prefix, least-loaded or round-robin (docs/routing.md)")
	fs.BoolVar(&f.disableWebUI, "disable-web-ui", false, "do not serve the web console (the chat page at /, the cluster view at /console; docs/webui.md)")
	fs.StringVar(&f.showHidden, "show-hidden-metrics-for-version", "", "also export the deprecated metric names vLLM `version` X.Y could still export (vllm:gpu_cache_usage_perc, …; docs/metrics.md)")
	f.api.register(fs)
	f.lora.register(fs)
}

// apiFlags are vLLM's API-server settings of the same names.
type apiFlags struct {
	forceIncludeUsage bool
	loadTracking      bool // --enable-server-load-tracking: accepted; GET /load always counts
	tokensAsIDs       bool
	tokenizerInfo     bool
	sleepMode         bool
	contextShift      bool
	corsProxy         bool
	perRequestMetrics bool
	rootPath          string
	// promptTokensDetails is vLLM's --enable-prompt-tokens-details,
	// accepted so vLLM command lines run: Tandem always reports
	// usage.prompt_tokens_details (as OpenAI does), whatever its value.
	promptTokensDetails bool
	noSlots             bool // llama.cpp's --no-slots
	slotSavePath        string
	seed                int64
	alias, tags         string // llama-server's --alias and --tags: comma-separated
	acceptAnyModel      bool
	templateKwargs      string // --default-chat-template-kwargs: a JSON object
	reasoning           string // llama-server's --reasoning: on, off or auto
	// CORS: vLLM's --allowed-origins, --allow-credentials,
	// --allowed-methods, --allowed-headers (JSON lists or comma lists)
	// and llama-server's --cors-origins.
	allowedOrigins, corsOrigins, allowedMethods, allowedHeaders string
	allowCredentials                                            bool
	verbose                                                     bool // llama-server's --verbose: __verbose on chat answers
	prefillAssistant                                            bool
	// originsSet: --allowed-origins or --cors-origins was given, so
	// --tools does not narrow CORS to localhost.
	originsSet bool
	// builtinTools and toolsRuntime are llama-server's --tools and
	// --tools-runtime; toolSet is what they build (check).
	builtinTools, toolsRuntime string
	toolSet                    *servertools.Set
	// mcpFile and mcpJSON are llama-server's --mcp-servers-config and
	// --mcp-servers-json; mcpServers what they name (check).
	mcpFile, mcpJSON string
	mcpServers       []servertools.MCPServer
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.forceIncludeUsage, "enable-force-include-usage", false, "send usage on every stream, on every chunk and in a final chunk, as if each request asked for it")
	fs.BoolVar(&a.loadTracking, "enable-server-load-tracking", false, "accepted, as vLLM's: GET /load always reports the requests in flight on the engine routes")
	fs.BoolVar(&a.tokensAsIDs, "return-tokens-as-token-ids", false, `write logprobs' tokens as "token_id:N" unless a request sets return_tokens_as_token_ids`)
	fs.BoolVar(&a.tokenizerInfo, "enable-tokenizer-info-endpoint", false, "serve GET /tokenizer_info (the tokenizer's configuration and chat template)")
	fs.BoolVar(&a.contextShift, "context-shift", false, "llama-server's context shift: a request may ask for more tokens than max-model-len leaves; when its context is full the engine drops half of the tokens after its first n_keep (a request field, default 0, after BOS) and goes on (docs/api.md#context-shift)")
	fs.BoolVar(&a.corsProxy, "webui-mcp-proxy", false, "llama-server's CORS proxy for web pages that call MCP servers: GET and POST /cors-proxy?url=TARGET forward to TARGET with only the x-llama-server-proxy-header-* headers (behind --api-key; reaches any host this server can, so turn it on only for trusted callers)")
	fs.BoolVar(&a.corsProxy, "ui-mcp-proxy", false, "alias of --webui-mcp-proxy")
	fs.BoolVar(&a.sleepMode, "enable-sleep-mode", false, "serve vLLM's sleep-mode endpoints: POST /sleep?level=&mode=, POST /wake_up?tags=, GET /is_sleeping, POST /release_kv_cache_memory (docs/api.md#sleep-mode)")
	fs.BoolVar(&a.perRequestMetrics, "enable-per-request-metrics", false, `add "metrics" (queue time, time to first token, mean ITL, tokens/s) to one-sequence responses and to a stream's usage chunk`)
	fs.StringVar(&a.rootPath, "root-path", "", "the path `prefix` a proxy serves this server under: stripped from request paths, and the OpenAPI document's server URL")
	fs.BoolVar(&a.promptTokensDetails, "enable-prompt-tokens-details", true, "vLLM's flag, accepted: usage.prompt_tokens_details.cached_tokens is always reported, as OpenAI does")
	fs.Int64Var(&a.seed, "seed", -1, "sampling seed of requests that set none (as llama-server's --seed: each samples as if it sent this seed; vLLM's seeds its engines' generator instead); -1 = random")
	fs.BoolVar(&a.noSlots, "no-slots", false, "llama.cpp's flag: GET /slots answers 501 instead of the engines' sequence slots")
	fs.StringVar(&a.slotSavePath, "slot-save-path", "", "llama-server's: the directory of POST /slots/{id}?action=save|restore files (a slot's tokens and KV blocks); action=erase evicts a slot's blocks. Unset, those answer 501 (docs/api.md#slot-save-and-restore)")
	fs.StringVar(&a.alias, "alias", "", "llama-server's flag: comma-separated `names` the model also answers to; without --served-model-name the first in sorted order is the served name")
	fs.StringVar(&a.tags, "tags", "", "llama-server's flag: comma-separated `labels` listed on the model's /v1/models card")
	fs.BoolVar(&a.acceptAnyModel, "accept-any-model", false, "answer requests whatever model they name, as llama-server does (default: 404 model_not_found for a name that is neither served nor an alias, as vLLM)")
	fs.StringVar(&a.templateKwargs, "default-chat-template-kwargs", "", `chat_template_kwargs every request gets unless it sets the key itself, a JSON `+"`object`"+` (e.g. '{"enable_thinking": false}')`)
	fs.StringVar(&a.allowedOrigins, "allowed-origins", "*", `origins browsers may call from (CORS), a JSON list or comma-separated: "*" every origin, "localhost" every loopback one, else exact origins like https://app.example`)
	fs.StringVar(&a.corsOrigins, "cors-origins", "", "llama-server's name of --allowed-origins (comma-separated `origins`)")
	fs.BoolVar(&a.allowCredentials, "allow-credentials", true, `send Access-Control-Allow-Credentials and reflect the caller's origin (llama-server's answer); false answers "*" to every origin (vLLM's default)`)
	fs.StringVar(&a.allowedMethods, "allowed-methods", "*", "CORS `methods`, a JSON list or comma-separated; * = every method Tandem serves")
	fs.StringVar(&a.allowedHeaders, "allowed-headers", "*", "CORS request `headers`, a JSON list or comma-separated; * = whatever the preflight asks for")
	fs.BoolVar(&a.verbose, "verbose", false, "llama-server's flag: add __verbose (the rendered prompt, the answer and their token counts) to every non-streamed chat answer, as a request's verbose: true does")
	fs.BoolVar(&a.prefillAssistant, "prefill-assistant", false, "continue a chat's final assistant message instead of answering after it, as llama-server does by default, unless the request sets continue_final_message or add_generation_prompt (default: a new turn, as vLLM)")
	fs.StringVar(&a.builtinTools, "tools", "", "llama-server's built-in tools for agents on GET and POST /tools: comma-separated `names` ("+strings.Join(servertools.Names(), ", ")+
		") or all; they read, write and run anything this server's account can, so enable them only for trusted callers; unless --allowed-origins or --cors-origins is given, CORS then allows only localhost origins (default: none)")
	fs.StringVar(&a.toolsRuntime, "tools-runtime", "", "run --tools in an isolate (`SPEC`) instead of on this host: docker-container:ID, podman-container:ID (a running container) or ssh:TARGET (key authentication, a trusted host key)")
	fs.StringVar(&a.mcpFile, "mcp-servers-config", "", `MCP servers whose tools GET and POST /tools also serve, as SERVER_TOOL: a JSON `+"`file`"+` in Cursor's format, {"mcpServers": {NAME: {"command": ..., "args": [...], "env": {...}, "cwd": ..., "timeout_ms": N}}}; each runs as this server's account, so name only trusted ones; unless --allowed-origins or --cors-origins is given, CORS then allows only localhost origins`)
	fs.StringVar(&a.mcpJSON, "mcp-servers-json", "", "the MCP servers of --mcp-servers-config given inline, as `JSON`")
	fs.StringVar(&a.reasoning, "reasoning", "auto", "llama-server's flag: the chat template's enable_thinking for requests that do not set it: on, off, or `auto` (true when the template reads it)")
}

// check validates the settings that can be wrong.
func (a *apiFlags) check() error {
	if a.slotSavePath != "" {
		if st, err := os.Stat(a.slotSavePath); err != nil || !st.IsDir() {
			return fmt.Errorf("--slot-save-path: not a directory: %s", a.slotSavePath)
		}
	}
	switch a.reasoning {
	case "on", "off", "auto":
	default:
		return fmt.Errorf("--reasoning %q: want on, off or auto", a.reasoning)
	}
	for _, l := range []struct{ name, v string }{{"allowed-origins", a.allowedOrigins}, {"cors-origins", a.corsOrigins}, {"allowed-methods", a.allowedMethods}, {"allowed-headers", a.allowedHeaders}} {
		if _, err := listFlag(l.v); err != nil {
			return fmt.Errorf("--%s: %w", l.name, err)
		}
	}
	if a.toolsRuntime != "" {
		if err := servertools.CheckRuntime(a.toolsRuntime); err != nil {
			return fmt.Errorf("--tools-runtime: %w", err)
		}
	}
	set, err := servertools.New(names(a.builtinTools), a.toolsRuntime)
	if err != nil {
		return fmt.Errorf("--tools: %w", err)
	}
	a.toolSet = set
	if err := a.checkMCP(); err != nil {
		return err
	}
	if a.templateKwargs != "" {
		var kw map[string]any
		if err := json.Unmarshal([]byte(a.templateKwargs), &kw); err != nil || kw == nil {
			return fmt.Errorf("--default-chat-template-kwargs: want a JSON object: %q", a.templateKwargs)
		}
	}
	return nil
}

// checkMCP reads --mcp-servers-config's file and --mcp-servers-json:
// JSON that does not parse, or a file that cannot be read, is an error.
func (a *apiFlags) checkMCP() error {
	a.mcpServers = nil
	for _, src := range []struct{ flag, name, data string }{{"mcp-servers-config", a.mcpFile, ""}, {"mcp-servers-json", "", a.mcpJSON}} {
		data := []byte(src.data)
		if src.name != "" {
			var err error
			if data, err = os.ReadFile(src.name); err != nil {
				return fmt.Errorf("--%s: %w", src.flag, err)
			}
		}
		if len(data) == 0 {
			continue
		}
		servers, err := servertools.ParseMCPConfig(data)
		if err != nil {
			return fmt.Errorf("--%s: %w", src.flag, err)
		}
		a.mcpServers = append(a.mcpServers, servers...)
	}
	return nil
}

// listFlag reads a list flag as vLLM writes it (a JSON list of strings)
// or comma-separated.
func listFlag(v string) ([]string, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var out []string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("want a JSON list of strings or a comma-separated list: %q", v)
		}
		return out, nil
	}
	return names(v), nil
}

// names splits a comma-separated flag value, blanks dropped.
func names(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// apply sets the settings in cfg.
func (a *apiFlags) apply(cfg *server.Config) {
	cfg.ForceIncludeUsage, cfg.ReturnTokensAsTokenIDs = a.forceIncludeUsage, a.tokensAsIDs
	cfg.EnableTokenizerInfo, cfg.EnablePerRequestMetrics, cfg.RootPath = a.tokenizerInfo, a.perRequestMetrics, a.rootPath
	cfg.EnableSleepMode, cfg.ContextShift, cfg.CORSProxy = a.sleepMode, a.contextShift, a.corsProxy
	cfg.DisableSlots, cfg.SlotSavePath = a.noSlots, a.slotSavePath
	cfg.ModelAliases, cfg.ModelTags, cfg.AcceptAnyModel, cfg.Reasoning = names(a.alias), names(a.tags), a.acceptAnyModel, a.reasoning
	origins := a.allowedOrigins
	if a.corsOrigins != "" {
		origins = a.corsOrigins
	}
	if a.originsSet { // else none: every origin, or only localhost with --tools (server.CORS)
		cfg.CORS.Origins, _ = listFlag(origins) // check()ed
	}
	cfg.Tools = a.toolSet
	cfg.CORS.Methods, _ = listFlag(a.allowedMethods)
	cfg.CORS.Headers, _ = listFlag(a.allowedHeaders)
	cfg.CORS.NoCredentials = !a.allowCredentials
	cfg.Verbose, cfg.PrefillAssistant = a.verbose, a.prefillAssistant
	if a.templateKwargs != "" {
		_ = json.Unmarshal([]byte(a.templateKwargs), &cfg.DefaultChatTemplateKwargs) // check()ed
	}
	if a.seed >= 0 {
		seed := a.seed
		cfg.DefaultSeed = &seed
	}
}

// frontendCommand is `tandem frontend`'s command line.
func frontendCommand(f *frontendFlags, curve *curveFlags) *cli.Command {
	c := cli.New("tandem frontend", "Run one API server (OpenAI-compatible HTTP) against running engine cores: "+
		"tokenize, apply chat templates, route, detokenize.", servingGroups...)
	c.EnableConfig()
	fs := c.Flags
	f.registerHTTP(fs)
	fs.StringVar(&f.engines, "engines", "", "comma-separated engine ROUTER `endpoints`; dns+tcp://name:port means every A record of name, re-resolved while serving (required)")
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model `name` in the API (default: what the engines report)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "tokenizer to use: a GGUF `file` or a Hugging Face directory (default: the model the engines serve)")
	fs.StringVar(&f.chatTemplate, "chat-template", "", "the chat template replacing the model's: a Jinja `file`, a built-in name (llama.cpp's: chatml, llama3, command-r, gemma, phi3, phi4, mistral-v7, deepseek3, zephyr, falcon3, vicuna) or the template itself")
	f.tools.register(fs)
	f.vllm.register(fs)
	fs.BoolVar(&f.reusePort, "reuse-port", false, "listen with SO_REUSEPORT so several frontends share the port")
	fs.StringVar(&f.metricsSocket, "metrics-socket", "", "serve this frontend's own metric series on this Unix socket `path`, for the other frontends sharing the port to add up (serve sets it)")
	fs.StringVar(&f.metricsPeers, "metrics-peers", "", "comma-separated Unix socket `paths` of the other frontends sharing the port: /metrics adds their own series to this one's (serve sets it)")
	fs.BoolVar(&f.noEngineMetrics, "disable-engine-metrics", false, "leave the engines' own series (vllm:num_requests_running, vllm:kv_cache_usage_perc, vllm:prefix_cache_*, …) off /metrics: each engine exports them itself (tandem engine --metrics-address), so frontends scaled out as separate scrape targets do not repeat every engine's numbers (docs/metrics.md)")
	fs.DurationVar(&f.heartbeatInterval, "heartbeat-interval", time.Second, "heartbeat period to engines")
	fs.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", 5*time.Second, "an engine silent this long is dead: its requests fail with 503")
	fs.StringVar(&f.log.level, "log-level", "info", "`level`: debug, info, warn or error")
	fs.StringVar(&f.log.format, "log-format", "text", "`format`: text or json")
	registerCurveClientFlags(fs, curve)
	return c
}

// runFrontend binds the HTTP port first (a port in use fails at once),
// answers 503 while it waits for the engines, then serves the API.
func runFrontend(ctx context.Context, args []string) error {
	var f frontendFlags
	var curve curveFlags
	cmd := frontendCommand(&f, &curve)
	if err := cmd.Parse(args); err != nil {
		return err
	}
	cmd.Flags.Visit(func(fl *flag.Flag) {
		f.api.originsSet = f.api.originsSet || fl.Name == "allowed-origins" || fl.Name == "cors-origins"
	})
	if f.engines == "" && f.vllm.protocol == "tandem" {
		return fmt.Errorf("frontend: --engines is required")
	}
	if err := f.tools.check(); err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	if err := f.api.check(); err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	if err := metrics.CheckHiddenVersion(f.showHidden); err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	log, err := stderrLogger(&f.log, "proc", "frontend", "pid", os.Getpid())
	if err != nil {
		return err
	}
	// MCP servers start and list their tools while the engines load.
	mcp := servertools.NewMCP(f.api.mcpServers, log)
	defer mcp.Close()
	mcpWarm := make(chan struct{})
	go func() { defer close(mcpWarm); mcp.Warm(ctx) }()
	var tok tokenizer.Tokenizer // loaded before the engines only for vLLM engines, which do not name their model
	if f.vllm.protocol != "tandem" {
		eps, vtok, stop, err := f.vllm.start(&f, log)
		if err != nil {
			return fmt.Errorf("frontend: %w", err)
		}
		defer stop()
		f.engines, tok = eps, vtok
	}
	keys, err := readAPIKeys(f.apiKeyFile)
	if err != nil {
		return fmt.Errorf("frontend: --api-key-file: %w", err)
	}
	vertex, vertexPort, onVertex, err := vertexFromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	port := f.port
	if onVertex {
		if port != vertexPort {
			log.Warn("Vertex AI prediction mode (AIP_MODE=PREDICTION): listening on AIP_HTTP_PORT instead of --port", "port", vertexPort, "flag", port)
		}
		port = vertexPort
		log.Info("Vertex AI prediction protocol", "predict_route", vertex.PredictRoute, "health_route", vertex.HealthRoute)
	}
	ln, err := listen(ctx, net.JoinHostPort(f.host, strconv.Itoa(port)), f.reusePort)
	if err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	ln = server.LimitConnections(ln, f.maxConnections)
	// Until the engines are ready, every route but /version answers 503
	// (waitingHandler). Read deadlines bound slow-loris clients (headers
	// and bodies); there is no write deadline, since streams last as long
	// as generation does.
	var handler swapHandler
	handler.set(waitingHandler())
	hs := &http.Server{Handler: &handler, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	defer hs.Close() // the return paths before the graceful Shutdown below
	policy, err := router.ParsePolicy(f.routing)
	if err != nil {
		return fmt.Errorf("frontend: --routing: %w", err)
	}
	dialOpts, err := curve.clientOptions(strings.Split(f.engines, ","), log)
	if err != nil {
		return err
	}
	var onRoute routeHook // set once the server's metrics exist
	client, err := engineclient.Dial(engineclient.Config{
		DialOptions:       dialOpts,
		Endpoints:         strings.Split(f.engines, ","),
		HeartbeatInterval: f.heartbeatInterval,
		HeartbeatTimeout:  f.heartbeatTimeout,
		Logger:            log,
		Routing:           policy,
		OnRoute:           onRoute.call,
	})
	if err != nil {
		return err
	}
	defer client.Close()
	log.Info("waiting for engine cores", "engines", f.engines)
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := client.WaitReady(wctx)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		if errors.Is(err, engineclient.ErrRefused) {
			return err
		}
		log.Info("still waiting for engine cores", "engines", f.engines)
	}
	info, _ := client.Info()
	if tok == nil {
		if tok, err = loadTokenizer(info, f.tokenizer, f.chatTemplate); err != nil {
			return fmt.Errorf("frontend: %w", err)
		}
	}
	toolParser, err := f.tools.format(tok)
	if err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	reasoningParser, err := f.tools.reasoningFormat(tok)
	if err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	name := f.servedModelName
	if aliases := names(f.api.alias); name == "" && len(aliases) > 0 {
		name = slices.Min(aliases) // llama-server names the model by its first alias in sorted order
	}
	if name == "" {
		name = info.ServedModelName
	}
	cfg := server.Config{
		ServedModelName:    name,
		ModelRoot:          info.Model,
		VocabSize:          info.VocabSize,
		MaxModelLen:        info.MaxModelLen,
		MaxLogprobs:        &info.MaxLogprobs,
		Pooling:            info.Pooling,
		ClassifierLabels:   info.ClassifierLabels,
		ScoreTemplate:      f.chatTemplate != "",
		BlockSize:          info.BlockSize,
		NumBlocks:          info.NumBlocks,
		MaxRequestBody:     f.maxRequestBody,
		MaxWaitingRequests: f.maxWaiting,
		APIKey:             f.apiKey,
		APIKeys:            keys,
		Version:            version,
		Logger:             log,
		ToolParser:         toolParser,
		ReasoningParser:    reasoningParser,

		MaxRequestOutputTokens:      f.maxOutput,
		ShowHiddenMetricsForVersion: f.showHidden,
		MetricsPeers:                splitList(f.metricsPeers),
		DisableEngineMetrics:        f.noEngineMetrics,
		DisableWebUI:                f.disableWebUI,
	}
	f.api.apply(&cfg)
	f.tools.apply(&cfg)
	if err := f.lora.apply(&cfg, info, envTrue("VLLM_ALLOW_RUNTIME_LORA_UPDATING")); err != nil {
		return fmt.Errorf("frontend: %w", err)
	}
	<-mcpWarm
	cfg.Tools = cfg.Tools.WithMCP(mcp)
	cfg.Vertex = vertex
	srv := server.New(cfg, server.ClientEngine(client), tok)
	if f.metricsSocket != "" {
		stop, err := serveUnix(f.metricsSocket, srv.OwnMetrics())
		if err != nil {
			return fmt.Errorf("frontend: --metrics-socket: %w", err)
		}
		defer stop()
	}
	onRoute.set(srv.ObserveRouting)
	handler.set(srv.Handler())
	log.Info("frontend serving", "url", "http://"+ln.Addr().String(), "model", name, "max_model_len", info.MaxModelLen, "routing", policy,
		"tool_call_parser", toolParserName(toolParser), "reasoning_parser", reasoningParserName(reasoningParser))
	notifyReady()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	mcp.Close() // MCP calls in flight end now, not at the drain's deadline
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	log.Info("frontend stopped")
	return nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// serveUnix serves h on a Unix socket at path (a stale socket file left
// by a crashed process is replaced) until stop.
func serveUnix(path string, h http.Handler) (stop func(), err error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return func() { _ = hs.Close(); _ = os.Remove(path) }, nil
}

// readAPIKeys reads one API key per line ("" reads none); blank lines and
// lines starting with # are skipped.
func readAPIKeys(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no key", path)
	}
	return keys, nil
}

func listen(ctx context.Context, addr string, reusePort bool) (net.Listener, error) {
	lc := net.ListenConfig{}
	if reusePort {
		lc.Control = func(network, address string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, 0xf /* SO_REUSEPORT */, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	return lc.Listen(ctx, "tcp", addr)
}

// swapHandler serves the handler set last.
type swapHandler struct {
	h atomic.Pointer[http.Handler]
}

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// waitingHandler answers while the frontend waits for its engine cores:
// /version as when serving (the process is alive: a liveness probe
// passes), everything else 503 with Retry-After (not ready: /health fails
// a readiness probe, and clients retry).
func waitingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			_ = json.NewEncoder(w).Encode(map[string]string{"version": version})
			return
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(openai.ServiceUnavailable("waiting for engine cores"))
	})
}

// routeHook forwards routing decisions to a counter set after the client
// is dialled (tandem:routing_decisions_total lives in the server's
// metrics, which exist only once the server does).
type routeHook struct {
	fn atomic.Pointer[func(policy, outcome string)]
}

func (h *routeHook) set(fn func(policy, outcome string)) { h.fn.Store(&fn) }

func (h *routeHook) call(policy, outcome string) {
	if fn := h.fn.Load(); fn != nil {
		(*fn)(policy, outcome)
	}
}
