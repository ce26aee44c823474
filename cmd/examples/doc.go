// Package examples holds small programs that use Tandem as a Go library:
// chat streams a conversation through the text API (frontend/llm) with a
// session id, and batch answers many prompts at once like vLLM's
// LLM.generate, both over an engine core started in-process
// (enginecore/inproc). Each is tested by running it (examples_test.go).
package examples
