// Package router decides which engine core serves a request (--routing):
//
//   - session (default): a request with a session goes to the engine that
//     holds it, learned exactly from the engines' session reports (every
//     frontend agrees); a new session goes to its first engine in
//     rendezvous (HRW) order whose load is ≤ LoadFactor × mean + 1 (1.25 by
//     default), so independent frontends place it alike; the sessions of
//     an engine that goes away move to their next engine in that order; a
//     holder whose waiting queue alone is over the bound spills. Requests without a
//     session use prefix.
//   - prefix: the cost of each engine is OverlapWeight × the prompt blocks
//     it would have to prefill (the longest cached prefix comes from its KV
//     events, hashed over the whole conversation exactly as the engine
//     hashes it, see BlockHashes) + the KV blocks its running requests
//     hold, like Dynamo's KV router; the cheapest wins.
//   - least-loaded: vLLM's 4·waiting + running.
//   - round-robin: the healthy engines in turn.
//
// A pinned data-parallel rank (X-data-parallel-rank) overrides every
// policy. Each Decision carries an outcome label for
// tandem:routing_decisions_total. docs/routing.md has the math and the
// comparison with other routers.
//
// The router holds only what engines publish (wire.KVEventBatch,
// wire.SessionReport) and its own recent decisions; engineclient feeds it
// and supplies the healthy engines' loads on every call. It does no I/O.
// It must not import enginecore (an enginecore test checks BlockHashes
// against the engine's own hashing) or any frontend package.
//
//	r, err := router.New(router.Config{Policy: router.Session})
//	r.ApplySessions(0, &wire.SessionReport{EngineIndex: 0, Full: true, Added: []string{"conv-1"}})
//	d, err := r.Route(router.Request{SessionID: "conv-1", TokenIDs: prompt}, engines)
//	// d.Engine == 0, d.Outcome == router.OutcomeSessionHit
package router
