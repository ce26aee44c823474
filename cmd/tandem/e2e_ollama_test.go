package main

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// TestDefaultModelOllamaClient serves the real default model with an API
// key and runs scripts/sdktests/test_ollama.py: Ollama's own Python
// client (PyPI `ollama`, installed by scripts/sdktests/setup.sh) against
// /api/tags, /api/show, /api/ps, /api/chat and /api/generate: greedy
// text equal streamed and not, options, format (a schema and "json"), a
// tool result turn, raw and continued generation, sessions, the load
// requests, logprobs and the errors as the client raises them; and
// LangChain's ChatOllama (PyPI `langchain-ollama`) through it.
func TestDefaultModelOllamaClient(t *testing.T) {
	model := defaultModel(t)
	py := pythonWith(t, "ollama", "the Python ollama client")
	port := freePort(t)
	p := startProc(t, "serve", model, "--port", strconv.Itoa(port), "--max-model-len", "2048",
		"--kv-cache-memory", "256Mi", "--threads", strconv.Itoa(runtime.NumCPU()), "--api-key", sdkKey)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	runSDKScript(t, py, "test_ollama.py", base, "--api-key", sdkKey)
}
