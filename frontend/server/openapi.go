package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// apiOperation is one route in the OpenAPI document.
type apiOperation struct {
	method, path string // path in OpenAPI's form: /v1/models/{model}
	summary      string
	request      string // schema name of the JSON body; "" = none
	response     string // schema name of the JSON answer; "" = none (or not JSON)
	stream       bool   // answers text/event-stream with "stream": true
}

// apiOperations are the routes Tandem serves (TestOpenAPICoversEveryRoute
// checks it against the router).
var apiOperations = []apiOperation{
	{"get", "/health", "Liveness and readiness: 200, or 503 without a live engine core", "", "", false},
	{"get", "/ping", "SageMaker's health check (as /health)", "", "", false},
	{"post", "/ping", "SageMaker's health check (as /health)", "", "", false},
	{"get", "/version", "The server's version", "", "Version", false},
	{"get", "/metrics", "Prometheus metrics (text exposition format)", "", "", false},
	{"get", "/v1/models", "The served model", "", "ModelList", false},
	{"get", "/v1/models/{model}", "One model's card", "", "Model", false},
	{"get", "/v1/engines", "The engine cores this frontend knows", "", "Object", false},
	{"post", "/v1/chat/completions", "Chat completion", "ChatCompletionRequest", "ChatCompletion", true},
	{"post", "/v1/chat/completions/batch", "Chat completions of several conversations, one choice each", "BatchChatCompletionRequest", "ChatCompletion", false},
	{"post", "/v1/completions", "Text completion", "CompletionRequest", "Completion", true},
	{"post", "/v1/embeddings", "Embeddings of one input or many: the pooled hidden states (--pooling)", "EmbeddingRequest", "EmbeddingResponse", false},
	{"post", "/v1/score", "Scores of text pairs: a reranker's head, else the cosine of embeddings", "Object", "Object", false},
	{"post", "/score", "As /v1/score", "Object", "Object", false},
	{"get", "/load", "The requests in flight on the engine routes: {\"server_load\"} (vLLM's)", "", "Object", false},
	{"post", "/reset_prefix_cache", "Every engine drops its cached prefixes: {\"success\"} (vLLM's)", "", "Object", false},
	{"post", "/flush_cache", "As /reset_prefix_cache, answered in text (SGLang's)", "", "", false},
	{"get", "/flush_cache", "As POST /flush_cache (SGLang's)", "", "", false},
	{"post", "/embed", "Embeddings as Hugging Face's text-embeddings-inference answers them: an array of vectors", "Object", "Object", false},
	{"post", "/", "As /embed (huggingface_hub's InferenceClient.feature_extraction posts here)", "Object", "Object", false},
	{"post", "/v2/embed", "Embeddings in Cohere's shape, by type: float, base64, binary, ubinary (vLLM's Cohere path)", "Object", "Object", false},
	{"post", "/v1/embed", "As /v2/embed; without embedding_types, plain floats (Cohere's v1 clients)", "Object", "Object", false},
	{"post", "/v1/rerank", "Documents ranked by relevance to a query (Jina's, Cohere's)", "Object", "Object", false},
	{"post", "/rerank", "As /v1/rerank; with texts, TEI's answer (llama-server's)", "Object", "Object", false},
	{"post", "/v2/rerank", "As /v1/rerank (vLLM's Cohere v2 path)", "Object", "Object", false},
	{"post", "/reranking", "As /rerank (llama-server's)", "Object", "Object", false},
	{"post", "/v1/reranking", "As /rerank (llama-server's)", "Object", "Object", false},
	{"post", "/classify", "Class probabilities of inputs through the model's classification head", "Object", "Object", false},
	{"post", "/pooling", "Pooled outputs of inputs: embeddings, or a classification head's probabilities", "Object", "Object", false},
	{"post", "/invocations", "SageMaker inference: a chat or a completions request, by its shape", "Object", "Object", true},
	{"post", "/v1/responses", "Create a response (Responses API)", "Object", "Object", true},
	{"get", "/v1/responses/{response_id}", "A stored response", "", "Object", false},
	{"delete", "/v1/responses/{response_id}", "Delete a stored response", "", "Object", false},
	{"post", "/v1/responses/{response_id}/cancel", "Cancel a background response", "", "Object", false},
	{"post", "/v1/decisions", "Answer typed questions about an input with probabilities (vLLM's Decisions API)", "", "Object", false},
	{"post", "/tokenize", "Text or chat messages to token ids", "TokenizeRequest", "TokenizeResponse", false},
	{"post", "/detokenize", "Token ids to text", "DetokenizeRequest", "DetokenizeResponse", false},
	{"get", "/tokenizer_info", "The tokenizer's configuration (with --enable-tokenizer-info-endpoint)", "", "Object", false},
	{"post", "/sleep", "Put the engines to sleep (vLLM's sleep mode, with --enable-sleep-mode)", "", "Object", false},
	{"post", "/wake_up", "Wake the engines (with --enable-sleep-mode)", "", "Object", false},
	{"get", "/is_sleeping", "Whether an engine sleeps (with --enable-sleep-mode)", "", "Object", false},
	{"post", "/release_kv_cache_memory", "Free the paused engines' KV caches (with --enable-sleep-mode)", "", "Object", false},
	{"get", "/v1/sessions/{session_id}", "Which engine holds a session and what it caches", "", "Object", false},
	{"delete", "/v1/sessions/{session_id}", "End a session and release its cache", "", "Object", false},
	{"get", "/openapi.json", "This document", "", "Object", false},
	// llama-server's own routes and its OpenAI routes without /v1 (llamacpp_routes.go)
	{"post", "/completion", "llama.cpp's native completion", "Object", "Object", true},
	{"post", "/embedding", "llama.cpp's native embeddings: [{\"index\", \"embedding\": [[…]]}], normalized by embd_normalize", "Object", "Array", false},
	{"post", "/embeddings", "As /embedding (llama.cpp)", "Object", "Array", false},
	{"post", "/completions", "llama.cpp's native completion (as /completion)", "Object", "Object", true},
	{"post", "/infill", "Code infill between a prefix and a suffix with the model's FIM tokens (llama.cpp)", "Object", "Object", true},
	{"post", "/apply-template", "Chat messages rendered by the chat template (llama.cpp)", "ChatCompletionRequest", "Object", false},
	{"get", "/props", "Server properties and default generation settings (llama.cpp)", "", "Object", false},
	{"get", "/slots", "The engines' sequence slots (llama.cpp)", "", "Array", false},
	{"post", "/slots/{id_slot}", "Save, restore or erase a slot's KV cache: ?action=save|restore|erase, {\"filename\"} (llama.cpp, with --slot-save-path)", "Object", "Object", false},
	{"get", "/cors-proxy", "Forward a GET to the url parameter (llama.cpp's MCP proxy, with --webui-mcp-proxy)", "", "", false},
	{"post", "/cors-proxy", "Forward a POST to the url parameter (with --webui-mcp-proxy)", "", "", false},
	{"get", "/v1/stream", "Replay a stream sent with X-Conversation-Id from byte offset 'from', then follow it (llama.cpp)", "", "", true},
	{"delete", "/v1/stream", "Stop a stream sent with X-Conversation-Id and forget it (llama.cpp)", "", "", false},
	{"post", "/v1/streams/lookup", "The kept streams of the given conversation ids (llama.cpp)", "Object", "Array", false},
	{"get", "/tools", "The built-in agent tools --tools enables, a JSON array (llama.cpp)", "", "", false},
	{"post", "/tools", "Run a built-in agent tool: {\"tool\", \"params\"}; exec_shell_command streams with \"stream\": true (llama.cpp, with --tools)", "Object", "Object", true},
	{"get", "/lora-adapters", "The LoRA adapters by id, with their global scales (llama.cpp)", "", "Array", false},
	{"post", "/lora-adapters", "Set the adapters' global scales: [{\"id\", \"scale\"}], the others to 0 (llama.cpp)", "Array", "Object", false},
	{"post", "/v1/load_lora_adapter", "Add a LoRA adapter as a model: {\"lora_name\", \"lora_path\"} (vLLM's, with VLLM_ALLOW_RUNTIME_LORA_UPDATING)", "Object", "", false},
	{"post", "/v1/unload_lora_adapter", "Remove a LoRA adapter added as a model: {\"lora_name\"} (vLLM's, with VLLM_ALLOW_RUNTIME_LORA_UPDATING)", "Object", "", false},
	{"get", "/v1/health", "As /health (llama.cpp)", "", "", false},
	{"get", "/models", "As /v1/models (llama.cpp)", "", "ModelList", false},
	{"post", "/chat/completions", "As /v1/chat/completions (llama.cpp)", "ChatCompletionRequest", "ChatCompletion", true},
	{"post", "/responses", "As /v1/responses (llama.cpp)", "Object", "Object", true},
	{"post", "/v1/chat/completions/input_tokens", "The prompt tokens a chat request would run, counted", "ChatCompletionRequest", "Object", false},
	{"post", "/chat/completions/input_tokens", "As /v1/chat/completions/input_tokens (llama.cpp)", "ChatCompletionRequest", "Object", false},
	// Anthropic's Messages API (anthropic.go)
	{"post", "/v1/messages", "Create a message (Anthropic's Messages API); SSE events with \"stream\": true", "Object", "Object", true},
	{"post", "/v1/messages/count_tokens", "The prompt tokens a Messages request would run, counted (Anthropic)", "Object", "Object", false},
	// Ollama's API (ollama.go): streamed as NDJSON unless "stream": false, errors {"error": "…"}
	{"post", "/api/chat", "Chat (Ollama's API)", "Object", "Object", true},
	{"post", "/api/generate", "Generate from a prompt (Ollama's API)", "Object", "Object", true},
	{"get", "/api/tags", "The served model (Ollama's API)", "", "Object", false},
	{"post", "/api/show", "The model's template, details and capabilities (Ollama's API)", "Object", "Object", false},
	{"get", "/api/ps", "The loaded model (Ollama's API)", "", "Object", false},
	{"get", "/api/version", "The server's version (Ollama's API)", "", "Version", false},
	{"post", "/api/embed", "Normalized embeddings of one input or many (Ollama's API)", "Object", "Object", false},
	{"post", "/api/embeddings", "One prompt's embedding, not normalized (Ollama's older API)", "Object", "Object", false},
	{"post", "/api/pull", "Not served: 404 with the reason (Ollama's model management)", "", "", false},
	{"post", "/api/push", "Not served: 404 with the reason (Ollama's model management)", "", "", false},
	{"post", "/api/create", "Not served: 404 with the reason (Ollama's model management)", "", "", false},
	{"post", "/api/copy", "Not served: 404 with the reason (Ollama's model management)", "", "", false},
	{"delete", "/api/delete", "Not served: 404 with the reason (Ollama's model management)", "", "", false},
}

// webUIOperations are the web console's routes (frontend/webui), in the
// document unless --disable-web-ui leaves them out.
var webUIOperations = []apiOperation{
	{"get", "/", "The web console's chat page (HTML)", "", "", false},
	{"get", "/console", "The web console's cluster view (HTML)", "", "", false},
	{"get", "/webui/{asset}", "The web console's scripts and styles", "", "", false},
	{"get", "/console/events", "The cluster view's live feed: engines, sessions, routing (text/event-stream)", "", "", false},
}

// apiSchemas are the document's component schemas: the main fields of
// each body (docs/api.md has every parameter), open to more.
var apiSchemas = map[string]any{
	"Object":  map[string]any{"type": "object"},
	"Array":   map[string]any{"type": "array"},
	"Version": object(nil, map[string]any{"version": str()}),
	"Model": object([]string{"id", "object"}, map[string]any{"id": str(), "object": str(), "created": integer(), "owned_by": str(),
		"root": nullable(str()), "parent": nullable(str()), "max_model_len": integer(), "permission": array(map[string]any{"type": "object"})}),
	"ModelList": object([]string{"object", "data"}, map[string]any{"object": str(), "data": array(ref("Model"))}),
	"ChatCompletionRequest": object([]string{"messages"}, map[string]any{"model": str(), "messages": array(map[string]any{"type": "object"}),
		"max_tokens": integer(), "max_completion_tokens": integer(), "temperature": number(), "top_p": number(), "n": integer(),
		"stream": boolean(), "stream_options": map[string]any{"type": "object"}, "stop": map[string]any{}, "logprobs": boolean(),
		"top_logprobs": integer(), "tools": array(map[string]any{"type": "object"}), "tool_choice": map[string]any{},
		"response_format": map[string]any{"type": "object"}, "session_id": str()}),
	"BatchChatCompletionRequest": object([]string{"messages"}, map[string]any{"model": str(),
		"messages": array(array(map[string]any{"type": "object"})), "max_tokens": integer(), "temperature": number()}),
	"ChatCompletion": object([]string{"id", "object", "choices", "usage"}, map[string]any{"id": str(), "object": str(), "created": integer(),
		"model": str(), "choices": array(map[string]any{"type": "object"}), "usage": ref("Usage")}),
	"CompletionRequest": object([]string{"prompt"}, map[string]any{"model": str(), "prompt": map[string]any{}, "max_tokens": integer(),
		"temperature": number(), "n": integer(), "stream": boolean(), "logprobs": integer(), "echo": boolean(), "session_id": str()}),
	"Completion": object([]string{"id", "object", "choices", "usage"}, map[string]any{"id": str(), "object": str(), "created": integer(),
		"model": str(), "choices": array(map[string]any{"type": "object"}), "usage": ref("Usage")}),
	"EmbeddingRequest": object([]string{"input"}, map[string]any{"model": str(), "input": map[string]any{}, "encoding_format": str(),
		"dimensions": integer(), "normalize": boolean(), "truncate_prompt_tokens": integer(), "session_id": str()}),
	"EmbeddingResponse": object([]string{"object", "data", "usage"}, map[string]any{"id": str(), "object": str(), "created": integer(),
		"model": str(), "data": array(map[string]any{"type": "object"}), "usage": ref("Usage")}),
	"Usage": object([]string{"prompt_tokens", "total_tokens"}, map[string]any{"prompt_tokens": integer(), "completion_tokens": integer(),
		"total_tokens": integer(), "prompt_tokens_details": map[string]any{"type": "object"}}),
	"TokenizeRequest": object(nil, map[string]any{"model": str(), "prompt": str(), "messages": array(map[string]any{"type": "object"}),
		"add_special_tokens": boolean(), "return_token_strs": boolean()}),
	"TokenizeResponse": object([]string{"count", "max_model_len", "tokens"}, map[string]any{"count": integer(), "max_model_len": integer(),
		"tokens": array(integer()), "token_strs": nullable(array(str()))}),
	"DetokenizeRequest":  object([]string{"tokens"}, map[string]any{"model": str(), "tokens": array(integer())}),
	"DetokenizeResponse": object([]string{"prompt"}, map[string]any{"prompt": str()}),
	"OllamaError":        object([]string{"error"}, map[string]any{"error": str()}),
	"ErrorResponse": object([]string{"error"}, map[string]any{"error": object([]string{"message", "type"}, map[string]any{
		"message": str(), "type": str(), "param": nullable(str()), "code": map[string]any{}})}),
}

func object(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}
func str() map[string]any            { return map[string]any{"type": "string"} }
func integer() map[string]any        { return map[string]any{"type": "integer"} }
func number() map[string]any         { return map[string]any{"type": "number"} }
func boolean() map[string]any        { return map[string]any{"type": "boolean"} }
func array(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
func nullable(s map[string]any) any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
func jsonContent(schema any) any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}
func operationID(o apiOperation) string {
	id := o.method + strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_").Replace(o.path)
	return strings.TrimSuffix(id, "_")
}

// openAPIDocument is the OpenAPI 3.1 document of the routes this server
// serves; with --root-path its server URL is the prefix, as FastAPI
// writes it.
func (s *Server) openAPIDocument() map[string]any {
	paths := map[string]any{}
	ops := apiOperations
	if !s.cfg.DisableWebUI {
		ops = append(slices.Clip(ops), webUIOperations...)
	}
	for _, o := range ops {
		if o.path == "/tokenizer_info" && !s.cfg.EnableTokenizerInfo || sleepPaths[o.path] && !s.cfg.EnableSleepMode ||
			o.path == "/slots/{id_slot}" && s.cfg.SlotSavePath == "" ||
			strings.HasSuffix(o.path, "load_lora_adapter") && !s.cfg.RuntimeLoRAUpdating ||
			o.path == "/infill" && s.fimTokens().Missing() != "" { // a model without FIM tokens answers /infill 501
			continue
		}
		op := map[string]any{"summary": o.summary, "operationId": operationID(o)}
		ok := map[string]any{"description": "Successful Response"}
		errSchema := ref("ErrorResponse")
		if isOllamaPath(o.path) {
			errSchema = ref("OllamaError")
		}
		switch {
		case o.response != "" && o.stream && isOllamaPath(o.path):
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": ref(o.response)},
				"application/x-ndjson": map[string]any{"schema": str()}}
		case o.response != "" && o.stream:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": ref(o.response)},
				"text/event-stream": map[string]any{"schema": str()}}
		case o.response != "":
			ok["content"] = jsonContent(ref(o.response))
		}
		op["responses"] = map[string]any{"200": ok, "default": map[string]any{"description": "Error", "content": jsonContent(errSchema)}}
		if o.request != "" {
			op["requestBody"] = map[string]any{"required": true, "content": jsonContent(ref(o.request))}
		}
		if params := pathParams(o.path); len(params) > 0 {
			op["parameters"] = params
		}
		item, _ := paths[o.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[o.path] = item
		}
		item[o.method] = op
	}
	doc := map[string]any{
		"openapi":    "3.1.0",
		"info":       map[string]any{"title": "Tandem", "version": s.cfg.Version, "description": "An OpenAI-compatible LLM server (docs/api.md)."},
		"paths":      paths,
		"components": map[string]any{"schemas": apiSchemas},
	}
	if s.cfg.RootPath != "" {
		doc["servers"] = []any{map[string]any{"url": s.cfg.RootPath}}
	}
	return doc
}

// pathParams are the {name} parameters of an OpenAPI path.
func pathParams(path string) []any {
	var out []any
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, map[string]any{"name": strings.TrimSuffix(name, "}"), "in": "path", "required": true, "schema": str()})
		}
	}
	return out
}

// openAPI serves GET /openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	return c.JSON(http.StatusOK, s.openAPIDocument())
}
