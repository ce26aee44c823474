package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/tandem-llm/tandem/frontend/anthropic"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/frontend/metrics"
	"github.com/tandem-llm/tandem/frontend/ollama"
	"github.com/tandem-llm/tandem/frontend/openai"
	"github.com/tandem-llm/tandem/frontend/reasoning"
	"github.com/tandem-llm/tandem/frontend/responses"
	"github.com/tandem-llm/tandem/frontend/servertools"
	"github.com/tandem-llm/tandem/frontend/tokenizer"
	"github.com/tandem-llm/tandem/frontend/toolparse"
)

// Config is the server's settings.
type Config struct {
	ServedModelName string
	MaxModelLen     int      // tokens per request, from the engines' READY
	BlockSize       int      // tokens per KV block, from READY
	NumBlocks       int      // KV blocks of the smallest engine, from READY
	MaxRequestBody  string   // echo BodyLimit syntax, e.g. "16M"
	APIKey          string   // "" = no auth (unless APIKeys)
	APIKeys         []string // more accepted keys; with two or more in all, each is a tenant (tenant.go)
	Version         string
	Logger          *slog.Logger
	// MaxWaitingRequests answers 429 (with Retry-After) while this many
	// requests or more are waiting for their first token; 0 = no limit.
	MaxWaitingRequests int
	// MaxRequestOutputTokens bounds what one request may generate, and so
	// what the frontend may hold for it: the sum over its sequences of
	// max_tokens × (1 + logprobs). 0 = DefaultMaxRequestOutputTokens,
	// negative = no limit.
	MaxRequestOutputTokens int
	// StoredResponses bounds the Responses API store (zero = defaults).
	StoredResponses responses.Limits
	// ShowHiddenMetricsForVersion brings back vLLM's deprecated metric
	// names (--show-hidden-metrics-for-version; see frontend/metrics).
	ShowHiddenMetricsForVersion string
	// MetricsPeers are the Unix sockets of the other frontends of one
	// serve: /metrics adds their own series (see frontend/metrics).
	MetricsPeers []string
	// DisableEngineMetrics leaves the engines' own series off /metrics
	// (they export them themselves; see frontend/metrics).
	DisableEngineMetrics bool
	// ToolParser reads tool calls out of tool_choice "auto" answers, in
	// the syntax the model writes them (--tool-call-parser); nil: those
	// answers are text.
	ToolParser *toolparse.Format
	// ReasoningParser splits a thinking model's answers into reasoning
	// and content (--reasoning-parser); nil: answers stay whole.
	ReasoningParser *reasoning.Format
	// ReasoningBudget (--reasoning-budget; nil: no limit) bounds the think
	// block of requests that set no budget of their own, and
	// ReasoningBudgetMsg (--reasoning-budget-message) is forced into a
	// block whose budget is spent, before its end tag.
	ReasoningBudget    *int
	ReasoningBudgetMsg string
	// ReasoningFormat (--reasoning-format, llama-server's: none, auto,
	// deepseek or deepseek-legacy; "" = auto) is how chat answers return
	// the reasoning when the request's reasoning_format does not say.
	ReasoningFormat string
	// ReasoningEffortMap (--reasoning-effort-map) rewrites a request's
	// reasoning effort to one the chat template knows.
	ReasoningEffortMap map[string]string
	// ModelRoot is the model the engines loaded (a path or "dummy"), the
	// root of /v1/models' cards.
	ModelRoot string
	// VocabSize is the model's vocabulary (READY's vocab_size), which
	// logit_bias ids must be under; 0 = the tokenizer's.
	VocabSize int
	// MaxLogprobs is the engines' max logprobs per token (READY's
	// max_logprobs, their --max-logprobs); -1 = the whole vocabulary;
	// nil = 20, vLLM's default.
	MaxLogprobs *int
	// Pooling is the engines' default embedding pooling as their READY
	// reports it; wire.PoolingNone (--pooling none) gives per-token
	// vectors on llama-server's /embedding and a 400 on the OpenAI route.
	Pooling string
	// ClassifierLabels names the classes of the model's classification
	// head as READY reports them (a reranker): /score and /rerank then
	// score pairs with it, /classify labels inputs; nil: no head, and
	// /score and /rerank compare embeddings (cosine).
	ClassifierLabels []string
	// ScoreTemplate renders a reranker's pairs through the chat template
	// (the one --chat-template gave) as a "query" and a "document"
	// message, as vLLM does; false: the model's rerank template, or
	// llama-server's layout.
	ScoreTemplate bool
	// ModelArch is the served model's architecture (general.architecture),
	// which LoRA adapters must name; "" = not checked here.
	ModelArch string
	// LoRA are the adapters requests may apply (lora.go); the engines
	// load them from Path. RuntimeLoRAUpdating serves vLLM's
	// /v1/load_lora_adapter and /v1/unload_lora_adapter
	// (VLLM_ALLOW_RUNTIME_LORA_UPDATING).
	LoRA                []LoRAAdapter
	RuntimeLoRAUpdating bool
	// MaxLoRAs is the adapters an engine keeps loaded, as READY reports
	// it: vllm:lora_requests_info's max_lora.
	MaxLoRAs int
	// ForceIncludeUsage sends usage on every stream, as if each asked
	// for include_usage and continuous_usage_stats
	// (--enable-force-include-usage).
	ForceIncludeUsage bool
	// ReturnTokensAsTokenIDs writes logprobs' tokens as "token_id:N"
	// unless a request says otherwise (--return-tokens-as-token-ids).
	ReturnTokensAsTokenIDs bool
	// CORSProxy serves GET and POST /cors-proxy?url= (llama-server's
	// --webui-mcp-proxy); off, the route answers 403.
	CORSProxy bool
	// SlotSavePath is llama-server's --slot-save-path: the directory of
	// POST /slots/{id}?action=save|restore files; "" answers those 501.
	SlotSavePath string
	// ContextShift lets generation go on past max_model_len: the engine
	// drops half of a request's tokens after its first n_keep and
	// recomputes the rest, as llama-server's --context-shift.
	ContextShift bool
	// EnableSleepMode serves vLLM's sleep-mode endpoints (/sleep,
	// /wake_up, /is_sleeping, /release_kv_cache_memory;
	// --enable-sleep-mode).
	EnableSleepMode bool
	// EnableTokenizerInfo serves GET /tokenizer_info
	// (--enable-tokenizer-info-endpoint).
	EnableTokenizerInfo bool
	// EnablePerRequestMetrics adds "metrics" (timings of the request) to
	// single-sequence responses (--enable-per-request-metrics).
	EnablePerRequestMetrics bool
	// RootPath is the path prefix a proxy strips before the request
	// reaches this server (--root-path): the OpenAPI document's server
	// URL, and a prefix also accepted on every route.
	RootPath string
	// DisableWebUI leaves out the web console (/, /console; see
	// frontend/webui; --disable-web-ui).
	DisableWebUI bool
	// DisableSlots answers GET /slots with 501, as llama-server does with
	// --no-slots.
	DisableSlots bool
	// ModelAliases are more names the model answers to besides
	// ServedModelName (llama-server's --alias); ModelTags label its card
	// (--tags). Both are listed on /v1/models' card.
	ModelAliases []string
	ModelTags    []string
	// AcceptAnyModel answers requests whatever model they name, as
	// llama-server does (--accept-any-model); else a name neither served
	// nor an alias is 404 model_not_found, as vLLM answers.
	AcceptAnyModel bool
	// DefaultChatTemplateKwargs are chat_template_kwargs every request
	// gets unless it sets the key itself (vLLM's
	// --default-chat-template-kwargs).
	DefaultChatTemplateKwargs map[string]any
	// Reasoning is llama-server's --reasoning: "on" or "off" set the
	// template's enable_thinking for requests that do not; "" or "auto"
	// set it true when the template reads enable_thinking, so thinking
	// models think unless asked not to.
	Reasoning string
	// PrefillAssistant continues a final assistant message (as if the
	// request said continue_final_message) unless the request sets
	// continue_final_message or add_generation_prompt: llama-server's
	// default (--prefill-assistant).
	PrefillAssistant bool
	// Verbose adds llama.cpp's __verbose object to every chat answer
	// (--verbose), as a request's verbose does.
	Verbose bool
	// Vertex serves Vertex AI's prediction protocol (AIP_MODE=PREDICTION:
	// vertex.go); zero serves none.
	Vertex Vertex
	// CORS is the cross-origin policy (zero: every origin, reflected,
	// with credentials; only localhost ones while Tools are on).
	CORS CORS
	// Tools are llama-server's built-in tools for agents and MCP
	// servers' tools served on /tools (--tools, --tools-runtime,
	// --mcp-servers-*); nil: the route answers 403.
	Tools *servertools.Set
	// DefaultSeed is the sampling seed of requests that set none
	// (--seed, as llama-server's: each such request samples as if it
	// had sent this seed); nil = a random one each.
	DefaultSeed *int64
}

// Server is the frontend's HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	eng     Engine
	tok     tokenizer.Tokenizer
	e       *echo.Echo
	metrics *metrics.Metrics
	created int64 // unix seconds, for /v1/models
	// permissionID is the id of the model card's permission, fixed for
	// the process as the card's created time is.
	permissionID string
	store        *responses.Store
	background   sync.Map       // response id → context.CancelFunc of a background response still generating
	load         atomic.Int64   // requests in flight on the engine routes (GET /load)
	eventLogs    eventLogs      // streamed background responses' events (responses_events.go)
	streams      streamSessions // llama-server's resumable streams by conversation id (streams.go)
	labelsOnce   sync.Once
	labels       *decisionLabels // the decision labels' token ids (labelIDs)
	keys         []apiKey        // cfg.APIKey and cfg.APIKeys as digests, compared in constant time
	// fingerprint is system_fingerprint: a hash of the version and the
	// served model, the same on every frontend of one deployment.
	fingerprint string
	// numWaiting counts this frontend's engine requests submitted and not
	// yet given their first token (requests).
	numWaiting atomic.Int64
	// sleepSeen: an engine was seen asleep, so routes that count as
	// activity tell the engines (touch, sleep.go).
	sleepSeen atomic.Bool
	// slotTab is each llama-server slot's tokens, for slot save and
	// restore (slotsave.go).
	slotTab slotTable
	// loras are the LoRA adapters (lora.go).
	loras *loraSet
}

// New builds the server and its routes.
func New(cfg Config, eng Engine, tok tokenizer.Tokenizer) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRequestBody == "" {
		cfg.MaxRequestBody = "16M"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, eng: eng, tok: tok, e: echo.New(), created: time.Now().Unix(),
		metrics: metrics.New(metrics.Config{ModelName: cfg.ServedModelName, MaxModelLen: cfg.MaxModelLen,
			ShowHiddenMetricsForVersion: cfg.ShowHiddenMetricsForVersion, Engines: eng.Engines, Peers: cfg.MetricsPeers,
			NoEngineSeries: cfg.DisableEngineMetrics, LoRA: len(cfg.LoRA) > 0 || cfg.RuntimeLoRAUpdating, MaxLoRA: cfg.MaxLoRAs}),
		store: responses.NewStore(cfg.StoredResponses),
		keys:  newKeys(allKeys(cfg)), loras: newLoRASet(cfg.LoRA)}
	fp := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d", cfg.Version, cfg.ServedModelName, cfg.MaxModelLen))
	s.fingerprint = "fp_" + hex.EncodeToString(fp[:5])
	s.permissionID = "modelperm-" + randomHex(16)
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	if cfg.RootPath != "" && cfg.RootPath != "/" {
		e.Pre(s.rootPath)
	}
	e.Pre(s.cors)
	e.Use(middleware.Recover())
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: func() string { return randomHex(16) }}))
	e.Use(s.accessLog)
	e.Use(s.observeHTTP)
	e.Use(s.trackLoad)
	e.Use(s.flow)
	e.Use(middleware.BodyLimit(cfg.MaxRequestBody))
	e.Use(s.auth)

	e.GET("/health", s.health)
	e.GET("/ping", s.health)
	e.POST("/ping", s.health)
	e.GET("/version", s.version)
	e.GET("/metrics", echo.WrapHandler(s.metrics.Handler()))
	e.GET("/v1/models", s.models)
	e.GET("/v1/models/*", s.model)
	e.GET("/v1/engines", s.engines)
	e.POST("/v1/chat/completions", s.chat)
	e.POST("/v1/chat/completions/batch", s.batchChat)
	e.POST("/invocations", s.invocations)
	e.POST("/v1/completions", s.completions)
	e.POST("/v1/embeddings", s.embeddings)
	e.GET("/load", s.serverLoad)
	e.POST("/reset_prefix_cache", s.resetPrefixCache)
	e.GET("/flush_cache", s.flushCache)
	e.POST("/flush_cache", s.flushCache)
	e.POST("/embed", s.teiEmbed)
	e.POST("/", s.teiEmbed)
	if s.cfg.DisableWebUI { // GET / stays a 404, not a 405 for POST /'s sake
		e.GET("/", func(echo.Context) error { return echo.ErrNotFound })
	}
	e.POST("/v1/embed", s.cohereEmbed)
	e.POST("/v2/embed", s.cohereEmbed)
	for _, r := range []string{"/score", "/v1/score"} {
		e.POST(r, s.score)
	}
	for _, r := range []string{"/rerank", "/v1/rerank", "/v2/rerank", "/reranking", "/v1/reranking"} {
		e.POST(r, s.rerank)
	}
	e.POST("/classify", s.classify)
	e.POST("/pooling", s.pooling)
	e.POST("/v1/responses", s.createResponse)
	e.GET("/v1/responses/:id", s.getResponse)
	e.DELETE("/v1/responses/:id", s.deleteResponse)
	e.POST("/v1/responses/:id/cancel", s.cancelResponse)
	e.POST("/v1/decisions", s.createDecisions)
	e.POST("/tokenize", s.waking(s.tokenize))
	e.POST("/detokenize", s.waking(s.detokenize))
	e.GET("/v1/sessions/:id", s.getSession)
	e.DELETE("/v1/sessions/:id", s.deleteSession)
	e.GET("/openapi.json", s.openAPI)
	e.GET("/tools", s.listTools)
	e.POST("/tools", s.callTool)
	s.mountLlamaCpp(e)
	s.mountAnthropic(e)
	s.mountOllama(e)
	s.mountLoRA(e)
	if cfg.EnableTokenizerInfo {
		e.GET("/tokenizer_info", s.tokenizerInfo)
	}
	s.sleepRoutes(e)
	if !cfg.DisableWebUI {
		s.mountWebUI()
	}
	s.mountVertex(e) // last: its aliases are of the routes above
	if c, ok := eng.(iterationReporter); ok {
		c.OnIteration(s.metrics.ObserveIteration)
	}
	return s
}

// ObserveRouting counts one routing decision in
// tandem:routing_decisions_total (the engine client reports them).
func (s *Server) ObserveRouting(policy, outcome string) { s.metrics.ObserveRouting(policy, outcome) }

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// OwnMetrics serves only this frontend's own series, for its peers'
// /metrics to add up (Config.MetricsPeers).
func (s *Server) OwnMetrics() http.Handler { return s.metrics.OwnHandler() }

// allKeys is every accepted key: APIKey, then APIKeys, without blanks or
// repeats.
func allKeys(cfg Config) []string {
	var keys []string
	for _, k := range append([]string{cfg.APIKey}, cfg.APIKeys...) {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// openPaths stay reachable without the API key: probes, Prometheus, the
// version and the OpenAPI document.
var openPaths = map[string]bool{"/health": true, "/ping": true, "/metrics": true, "/version": true, "/openapi.json": true}

// auth checks Authorization: Bearer <key> (or, without an Authorization
// header, x-api-key: <key>, Anthropic's) on every route but openPaths
// when a key is set (the web console's pages are open too: they ask for
// the key and send it). The keys' SHA-256 digests are compared in constant
// time, as vLLM does, so neither content nor length leaks. CORS preflight
// (OPTIONS) passes.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if len(s.keys) == 0 || openPaths[r.URL.Path] || s.openPage(r.URL.Path) || r.Method == http.MethodOptions ||
			r.URL.Path == s.cfg.Vertex.HealthRoute && r.URL.Path != "" {
			return next(c)
		}
		got, ok := strings.CutPrefix(r.Header.Get(echo.HeaderAuthorization), "Bearer ")
		if r.Header.Get(echo.HeaderAuthorization) == "" { // Anthropic's clients send x-api-key, as llama-server reads it
			got, ok = r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Key") != ""
		}
		tenant, known := match(s.keys, sha256.Sum256([]byte(got)))
		if !ok || !known {
			return writeError(c, openai.Unauthorized("Invalid or missing API key: send it as 'Authorization: Bearer <key>' or 'x-api-key: <key>'."))
		}
		c.Set(ctxTenantKey, tenant)
		return next(c)
	}
}

// httpError turns echo's errors (404 route, 405, 413 body limit, panics)
// into OpenAI-shaped errors.
func (s *Server) httpError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		_ = writeError(c, oe)
		return
	}
	status := http.StatusInternalServerError
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		}
	}
	typ := "internal_server_error"
	switch status {
	case http.StatusNotFound:
		typ, msg = "not_found_error", "route "+c.Request().Method+" "+c.Request().URL.Path+" not found"
	case http.StatusMethodNotAllowed:
		typ = "invalid_request_error"
	case http.StatusRequestEntityTooLarge:
		typ, msg = "invalid_request_error", "request body larger than the server's --max-request-body"
	}
	_ = writeError(c, &openai.Error{Status: status, Type: typ, Message: msg})
}

// writeError writes e in OpenAI's shape, or in Anthropic's on the
// Anthropic Messages API's routes.
func writeError(c echo.Context, e *openai.Error) error {
	if e.Status == http.StatusTooManyRequests {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	if isAnthropicPath(c.Request().URL.Path) {
		return c.JSON(e.Status, anthropic.NewError(e.Status, e.Message))
	}
	if isOllamaPath(c.Request().URL.Path) {
		return c.JSON(e.Status, ollama.Error{Error: e.Message})
	}
	if isTEIPath(c.Request().Method, c.Request().URL.Path) {
		return c.JSON(teiErrorOf(e))
	}
	return c.JSON(e.Status, e)
}

func (s *Server) ready() bool {
	for _, e := range s.eng.Engines() {
		if e.Ready {
			return true
		}
	}
	return false
}

func (s *Server) health(c echo.Context) error {
	if !s.ready() {
		return writeError(c, openai.ServiceUnavailable("no engine core is available"))
	}
	return c.NoContent(http.StatusOK)
}

func (s *Server) version(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"version": s.cfg.Version})
}

// engineError maps a submit/stream failure to an API error.
func engineError(err error) *openai.Error {
	var oe *openai.Error
	switch {
	case errors.As(err, &oe):
		return oe
	case errors.Is(err, engineclient.ErrEngineDead), errors.Is(err, engineclient.ErrNoEngine), errors.Is(err, engineclient.ErrClosed):
		return openai.ServiceUnavailable("%v", err)
	case errors.Is(err, errEngineRejected):
		return openai.BadRequest("", "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return openai.ServiceUnavailable("request cancelled: %v", err)
	}
	return openai.Internal("%v", err)
}
