// Package llamacpp is llama-server's own HTTP dialect, the routes a
// llama.cpp user calls without /v1: POST /completion (also /completions),
// /infill, /apply-template and GET /props. It is a pure translation
// layer: CompletionRequest decodes llama.cpp's request fields (its
// defaults, its prompt and logit_bias shapes) and maps them onto the
// OpenAI parameters the server already runs (Params); Result and Partial
// are its response bodies (timings, stop_type, completion_probabilities)
// and SelectFields applies response_fields. The frontend's server package
// serves them; nothing here does I/O.
//
// Field names, defaults and shapes follow llama.cpp's
// tools/server/README.md and server-task.cpp (release of 2026-09).
package llamacpp
