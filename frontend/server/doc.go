// Package server is the frontend's HTTP API (echo v4): the OpenAI routes,
// SSE streaming, sessions, health and version. It turns HTTP requests into
// EngineCoreRequests (tokenize, chat template, session_id resolution,
// sampling parameters, n>1 fan-out) and engine outputs back into OpenAI
// responses (incremental detokenization, stop strings, usage).
//
// It consumes the Engine interface defined here (engineclient implements
// it through ClientEngine) and must not import enginecore or gpu packages.
//
//	srv := server.New(server.Config{ServedModelName: "dummy", MaxModelLen: 4096}, server.ClientEngine(client), tok)
//	http.ListenAndServe(":8000", srv.Handler())
package server
