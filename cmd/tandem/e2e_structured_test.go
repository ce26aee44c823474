package main

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/tandem-llm/tandem/enginecore"
)

// TestDefaultModelStructuredOutputs serves the real default model and
// runs scripts/sdktests/test_structured.py: the OpenAI Python SDK's
// chat.completions.parse with 20 Pydantic models (nested objects, arrays,
// enums, optional fields, unions), streaming and not, response_format
// json_object, structured_outputs choice, guided_regex, a 400 for a
// schema the engine cannot compile, and tools: tool_choice required with
// three tools (every answer calls one, with arguments valid for its
// schema), a named function, tool calls streamed, and a two-step loop
// (call, tool result, answer); then scripts/sdktests/test_langchain.py:
// LangChain's ChatOpenAI.bind_tools in a call-result-answer loop, a named
// tool, and with_structured_output. The server reads hermes tool calls
// (--tool-call-parser), so tool_choice auto answers' calls are checked
// too (a regex makes the model write one). Then the agent frameworks'
// own loops: OpenAI's Agents SDK, Pydantic AI, LiteLLM and the Vercel
// AI SDK (test_agents.py, test_pydantic_ai.py, test_litellm.py,
// test_aisdk.mjs).
func TestDefaultModelStructuredOutputs(t *testing.T) {
	model := defaultModel(t)
	py := sdkPython(t)
	port := freePort(t)
	p := startProc(t, "serve", model, "--port", strconv.Itoa(port), "--max-model-len", "2048",
		"--kv-cache-memory", "256Mi", "--threads", strconv.Itoa(runtime.NumCPU()), "--tool-call-parser", "hermes")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	t.Run("openai", func(t *testing.T) { runSDKScript(t, py, "test_structured.py", base, enginecore.ServedName("", model)) })
	t.Run("langchain", func(t *testing.T) { runSDKScript(t, py, "test_langchain.py", base, enginecore.ServedName("", model)) })
	for _, c := range []struct{ name, module, what, script string }{
		{"agents", "agents", "OpenAI's Agents SDK (openai-agents)", "test_agents.py"},
		{"pydantic_ai", "pydantic_ai", "Pydantic AI (pydantic-ai-slim)", "test_pydantic_ai.py"},
		{"litellm", "litellm", "LiteLLM", "test_litellm.py"},
	} {
		t.Run(c.name, func(t *testing.T) {
			runSDKScript(t, pythonWith(t, c.module, c.what), c.script, base, enginecore.ServedName("", model))
		})
	}
	t.Run("aisdk", func(t *testing.T) {
		runSDKScript(t, nodeWith(t, "ai/dist/index.mjs", "the Vercel AI SDK (npm ai)"), "test_aisdk.mjs", base, enginecore.ServedName("", model))
	})
}
