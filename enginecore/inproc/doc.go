// Package inproc runs an engine core inside the calling Go process: the
// model loaded on the CPU backend, warmed up, and served on a private
// ipc:// socket in a directory only this user can enter. A frontend in
// the same process (frontend/llm's offline API, engineclient, the
// examples) dials [Engine.Endpoint] as it would a `tandem engine`
// process: same wire, same scheduler, same sessions.
//
// It imports enginecore, its CPU backend and loader, and wire/zmq; never
// frontend (a test enforces it).
//
// Usage:
//
//	eng, err := inproc.Start(ctx, inproc.Config{Model: "model.gguf"})
//	defer eng.Close()
//	client, err := engineclient.Dial(engineclient.Config{Endpoints: []string{eng.Endpoint()}})
package inproc
