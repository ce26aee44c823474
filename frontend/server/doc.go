// Package server is the frontend's HTTP API (echo v4): the OpenAI routes
// (chat, completions, responses, models), tokenize/detokenize, SSE
// streaming, sessions, health, version and metrics, API-key auth and the
// waiting-queue limit (429). It turns HTTP requests into
// EngineCoreRequests (tokenize, chat template, session_id resolution,
// sampling parameters, n>1 fan-out, best_of, beam search orchestration)
// and engine outputs back into OpenAI responses (incremental
// detokenization, stop strings, logprobs, usage).
//
// Files by responsibility: server.go (routes, auth, errors), params.go
// (shared request resolution), generate.go and run.go (engine requests,
// collecting and streaming choices), chat.go, completions.go,
// responses.go and responses_stream.go (the endpoints), beam.go (beam
// search over engine sub-requests), prompt.go (chat templates),
// tokenize.go, limits.go (429), sessions.go, sse.go.
//
// It consumes the Engine interface defined here (engineclient implements
// it through ClientEngine) and must not import enginecore or gpu packages.
// Every endpoint resolves session_id with package session; beam search and
// n>1 children carry it on every engine request.
//
//	srv := server.New(server.Config{ServedModelName: "dummy", MaxModelLen: 4096, MaxWaitingRequests: 256}, server.ClientEngine(client), tok)
//	http.ListenAndServe(":8000", srv.Handler())
package server
