// Package ollama is Ollama's native API (/api/chat, /api/generate,
// /api/tags, /api/show, /api/ps, /api/version) on Tandem's chat pipeline,
// so that Ollama's clients (its Python and JavaScript libraries,
// LangChain's ChatOllama, editors and web UIs that speak only Ollama)
// work unchanged: a request becomes an OpenAI chat request (ChatBody,
// GenerateRequest.ChatBody) that the server renders, tokenizes and runs
// as any chat completion, and the answer goes back as Ollama's objects
// (ChatResponse, GenerateResponse), one JSON object per line when
// streamed (Ollama's default).
//
// The package is pure: it decodes, converts and builds values, and does
// no I/O; frontend/server mounts the routes. docs/api.md lists what is
// served and how it maps.
package ollama
