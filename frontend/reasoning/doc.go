// Package reasoning splits a thinking model's answer into its reasoning
// and its content, as vLLM's --reasoning-parser, llama-server's
// --reasoning-format and Ollama do: the text between the model's think
// tags (<think> … </think> for DeepSeek-R1, Qwen3, QwQ, GLM, Kimi, ERNIE,
// OLMo and their distills; <seed:think> … </seed:think> for Seed-OSS;
// the special tokens [THINK] … [/THINK] for Mistral's Magistral) is the
// reasoning, the rest the content; gpt-oss's harmony messages split by
// channel (analysis is the reasoning, final the content, and a message to
// a function a tool call for the toolparse package: harmony.go). The
// formats carry vLLM's --reasoning-parser names.
//
// A Splitter reads the answer as it is generated (Push, then Finish),
// holding back text that may be the start of a tag, so that a streamed
// answer splits exactly as the same answer whole (Split), wherever the
// tokens fall. The package is pure: text in, text out.
package reasoning
