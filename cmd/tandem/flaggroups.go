package main

import "github.com/tandem-llm/tandem/cmd/tandem/internal/cli"

// servingGroups are the help sections of serve, engine, frontend and
// run-batch, in the order they print; each command shows the flags it
// has. Every flag must be in one (TestEveryFlagInAGroup): a new flag goes
// here too.
var servingGroups = []cli.Group{
	{Title: "Model", Flags: []string{"model", "served-model-name", "tokenizer", "chat-template", "tool-call-parser", "enable-auto-tool-choice", "reasoning-parser", "reasoning-budget", "reasoning-budget-message", "reasoning-effort-map", "reasoning-format", "max-model-len", "max-logprobs", "pooling", "pooler-config", "runner", "convert", "task", "embeddings", "embedding", "rope-scaling", "rope-scale", "yarn-orig-ctx", "hf-overrides"}},
	{Title: "Engine", Flags: []string{"device", "threads", "cpu-precision", "kv-cache-dtype", "weights-cache-dir", "gpu-memory-utilization", "kv-cache-memory",
		"block-size", "enable-prefix-caching", "max-num-seqs", "max-num-batched-tokens", "long-prefill-token-threshold", "target-step-time", "max-session-records", "sleep-idle-seconds", "protocol", "listen", "events", "kv-events-config", "kv-events-pod-id", "metrics-address"}},
	{Title: "Speculative decoding", Flags: specFlagNames},
	{Title: "LoRA adapters", Flags: []string{"enable-lora", "lora-modules", "lora", "lora-scaled", "lora-init-without-apply", "max-lora-rank", "max-loras", "max-cpu-loras"}},
	{Title: "Parallelism", Flags: []string{"data-parallel-size", "data-parallel-rank", "api-server-count", "run-dir", "data-parallel-address", "data-parallel-rpc-port"}},
	{Title: "Frontend", Flags: []string{"host", "port", "reuse-port", "max-request-body", "max-request-output-tokens", "max-waiting-requests", "max-connections", "show-hidden-metrics-for-version", "metrics-socket", "metrics-peers", "disable-engine-metrics",
		"enable-force-include-usage", "enable-server-load-tracking", "return-tokens-as-token-ids", "enable-tokenizer-info-endpoint", "enable-sleep-mode", "context-shift", "webui-mcp-proxy", "ui-mcp-proxy", "enable-per-request-metrics", "root-path", "disable-web-ui", "enable-prompt-tokens-details", "no-slots", "slot-save-path", "seed",
		"alias", "tags", "accept-any-model", "default-chat-template-kwargs", "reasoning",
		"allowed-origins", "cors-origins", "allow-credentials", "allowed-methods", "allowed-headers", "verbose", "prefill-assistant",
		"tools", "tools-runtime", "mcp-servers-config", "mcp-servers-json"}},
	{Title: "Hugging Face hub", Flags: []string{"hf", "hfr", "hf-repo", "hff", "hf-file", "hft", "hf-token", "offline"}},
	{Title: "Router mode (several models)", Flags: []string{"models-dir", "models-preset", "models-cache", "models-max", "no-models-autoload", "models-debug-delay"}},
	{Title: "Routing", Flags: []string{"engines", "engine-protocol", "routing"}},
	{Title: "Heartbeats", Flags: []string{"heartbeat-interval", "heartbeat-timeout"}},
	{Title: "Batch", Flags: []string{"i", "input-file", "o", "output-file", "max-concurrency"}},
	{Title: "Security", Flags: []string{"api-key", "api-key-file", "curve-secret-key-file", "curve-authorized-keys", "insecure-engine-socket", "engine-public-key"}},
	{Title: "Logging", Flags: []string{"log-level", "log-format"}},
}
