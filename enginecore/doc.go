// Package enginecore is one engine core: it owns the model backend, the
// paged KV cache, the scheduler and the busy loop, and talks to frontends
// only through wire messages on a ROUTER socket (vLLM's EngineCoreProc).
//
// Goroutines (the only ones in the engine besides the backend's workers):
//
//	input:  router.Recv → decode → liveness bookkeeping → events channel
//	core:   events → schedule → execute → update → outputs channel
//	output: outputs channel → encode → router.Send; heartbeats and load
//	        reports on a ticker
//
// The core goroutine owns all scheduler, KV-cache, session and runner
// state, so none of it is locked. It knows nothing of HTTP and must not
// import frontend packages.
//
//	c, err := enginecore.New(cfg, backend)
//	err = c.Serve(ctx, router, pub) // returns when ctx ends or the engine dies
package enginecore
