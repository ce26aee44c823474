package main

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/tandem-llm/tandem/enginecore"
)

// TestDefaultModelAnthropicSDK serves the real default model with an API
// key and runs scripts/sdktests/test_anthropic.py: Anthropic's Python SDK
// (PyPI `anthropic`, installed by scripts/sdktests/setup.sh) against
// /v1/messages and /v1/messages/count_tokens: text, stop_sequences,
// messages.stream's accumulated message, the raw event order, a forced
// tool_use and its tool_result turn, a streamed tool call, count_tokens,
// sessions, x-api-key and bearer keys, and typed errors.
func TestDefaultModelAnthropicSDK(t *testing.T) {
	model := defaultModel(t)
	py := pythonWith(t, "anthropic", "the Python anthropic SDK")
	port := freePort(t)
	p := startProc(t, "serve", model, "--port", strconv.Itoa(port), "--max-model-len", "2048",
		"--kv-cache-memory", "256Mi", "--threads", strconv.Itoa(runtime.NumCPU()), "--api-key", sdkKey)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	runSDKScript(t, py, "test_anthropic.py", base, enginecore.ServedName("", model), "--api-key", sdkKey)
}
