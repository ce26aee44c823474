// Package engineclient is the frontend's connection to its engine cores:
// one DEALER per engine, the HELLO/READY handshake, heartbeats both ways,
// request routing, output demultiplexing by request id, aborts, and
// utility calls. It is Tandem's counterpart of vLLM's AsyncMPClient, and
// the programmatic Go client:
//
//	c, err := engineclient.Dial(engineclient.Config{Endpoints: []string{"ipc:///tmp/tandem/engine-0"}})
//	defer c.Close()
//	err = c.WaitReady(ctx)
//	st, err := c.Generate(ctx, promptIDs, params, "req-1", engineclient.WithSessionID("conv-42"))
//	for {
//		out, err := st.Next(ctx) // io.EOF after the finishing output
//		...
//	}
//
// Cancelling ctx, or Stream.Close before the request finished, sends ABORT
// to the engine. An engine whose heartbeats stop (or that says
// ENGINE_DEAD) fails its in-flight streams with ErrEngineDead.
//
// It must not import enginecore or gpu packages.
package engineclient
