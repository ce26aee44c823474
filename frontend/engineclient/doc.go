// Package engineclient is the frontend's connection to its engine cores:
// one DEALER per engine, the HELLO/READY handshake, heartbeats both ways,
// routing (package router, fed by a SUB to each engine's PUB socket: load
// reports every ~100 ms, KV events, session reports), output
// demultiplexing by request id, aborts, utility calls, and membership
// (dns+tcp://name:port endpoints re-resolved while serving; AddEngine,
// RemoveEngine). It is Tandem's counterpart of vLLM's AsyncMPClient, and
// the programmatic Go client:
//
//	c, err := engineclient.Dial(engineclient.Config{
//		Endpoints: []string{"ipc:///tmp/tandem/engine-0", "dns+tcp://tandem-engines:5555"},
//		Routing:   router.Session,
//		OnRoute:   metrics.ObserveRouting, // tandem:routing_decisions_total
//	})
//	defer c.Close()
//	err = c.WaitReady(ctx)
//	params.N = 3 // parallel sampling: three samples, children 0_req-1 … 2_req-1
//	g, err := c.Generate(ctx, promptIDs, params, "req-1", engineclient.WithSessionID("conv-42"))
//	for {
//		out, err := g.Next(ctx) // out.Index is the sample; io.EOF once all finished
//		...
//	}
//
// Generate fans a request with SamplingParams.N = n out to n engine
// requests as vLLM's ParentRequest does (Children: ids "i_<id>", the
// parent's session, seed + i); Generation.Children are their Streams, and
// Next merges them. Cancelling ctx, or Close before the request finished,
// sends ABORT to the engine. When an engine fails (its heartbeats stop, it says
// ENGINE_DEAD, it restarts, or it leaves), each of its requests that has
// produced no output yet is sent to another engine (Config.MaxRetries);
// the others fail with ErrEngineDead. The client learns the PUB endpoint
// to subscribe to from the engine itself (utility get_events_endpoint),
// and loads the blocks the engine cached before it joined from its replay
// socket (get_replay_endpoint; replay.go).
//
// It must not import enginecore or gpu packages.
package engineclient
