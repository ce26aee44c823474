// Package llm is Tandem's text-in/text-out Go API, like vLLM's AsyncLLM
// and LLM: prompts and chat messages in, text out, over engine cores
// anywhere (processes found by endpoint, or in this process with
// enginecore/inproc).
//
//   - [LLM.Generate] streams one prompt's samples as text deltas, like
//     AsyncLLM.generate(prompt, params, request_id, session_id=…);
//     [LLM.Chat] renders messages with the model's chat template first.
//   - [LLM.Complete] waits for the whole answer; with [Params.BestOf] it
//     samples BestOf and keeps the N with the highest mean logprob.
//   - [LLM.Batch] is LLM.generate: many prompts at once, results in order.
//
// The text is what the HTTP server returns for the same request: the same
// tokenizer and chat template, and the same [detok.Sequence] (EOS hidden,
// stop strings after min_tokens, UTF-8 never split). Parallel samples are
// engineclient's (children "<i>_<id>" sharing the session), so a session
// id routes every sample and every later turn to the engine holding the
// conversation's KV cache.
//
// It imports frontend packages and wire only, never enginecore (a test
// enforces it); to run engines in-process, start them with
// enginecore/inproc and pass their endpoints.
//
// Usage:
//
//	eng, _ := inproc.Start(ctx, inproc.Config{Model: "model.gguf"})
//	l, _ := llm.Open(ctx, llm.Config{Model: "model.gguf", Engines: []string{eng.Endpoint()}})
//	outs, _ := l.Batch(ctx, []string{"Hello", "Bonjour"}, llm.Params{MaxTokens: 32})
package llm
