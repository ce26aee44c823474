// Package enginecore is one engine core: it owns the model backend, the
// paged KV cache, the scheduler and the busy loop, and talks to frontends
// only through wire messages on a ROUTER socket (vLLM's EngineCore and
// EngineCoreProc).
//
// Two layers, as in etcd-raft's RawNode and Node:
//
//   - Engine (engine.go, handle.go, events.go, compile.go) is the logic
//     as a state machine: Handle(now, client, msg) and Step(ctx, now)
//     return the messages for frontends as data, Publish(now) the PUB
//     payloads, Drop(now, clients…) aborts silent frontends' requests,
//     NextCompile hands out the constraints requests wait on and
//     Compiled(now, result) takes them back, Load and Clients are its
//     figures. It has no goroutines, channels, atomics, timers or
//     sockets and never reads the clock, so testdata/engine's scripts
//     drive it directly. (Core lends Step one fork-join: structured-output
//     masks are filled on a goroutine while the forward pass runs and
//     joined before sampling; nothing outlives the call, and no result
//     depends on the timing. Driven without Core, Step fills them in
//     line.)
//   - Core (proc.go, compilers.go) is the process shell, the only files
//     with goroutines: an input goroutine (router.Recv → decode →
//     liveness), the loop (Engine.Handle; compile results to
//     Engine.Compiled; Engine.Step while there is work; drop silent
//     frontends; Engine.Publish), one or two compile workers
//     (CompileJob.Run, so a slow schema never stalls a step) and an
//     output goroutine (encode → router.Send; heartbeats and load reports
//     on tickers; PUB payloads numbered per topic).
//
// It knows nothing of HTTP and must not import frontend packages.
//
//	c, err := enginecore.New(cfg, backend)
//	err = c.Serve(ctx, router, pub) // returns when ctx ends or the engine dies
package enginecore
