// Package vllmengines puts vLLM 0.33 engine cores (`vllm serve
// --headless`) behind Tandem's frontend. It binds what vLLM's frontend
// binds (the handshake ROUTER at --data-parallel-address:
// --data-parallel-rpc-port, and per engine an input ROUTER and an output
// PULL), runs vLLM's handshake with each DP rank (docs/wire.md §12), and
// presents every rank as a Tandem engine on an ipc:// ROUTER of its own,
// which package engineclient dials like any other: routing by session,
// retries, metrics and the whole HTTP API work unchanged on top.
//
// Gate is the pure core: it takes one message at a time (from a vLLM
// engine's handshake, input or output socket, or from a Tandem frontend on
// a rank's endpoint) and returns the messages to send, translating with
// package wire/vllm. It answers what vLLM engines do not have (Tandem's
// HELLO/READY, heartbeats with load and session reports, the sessions and
// events utilities) itself. Bridge is the goroutine shell around it.
//
// vLLM engines send no heartbeats: an engine is dead once it sends
// ENGINE_CORE_DEAD, which Gate turns into Tandem's ENGINE_DEAD for every
// frontend of that rank. Each rank gets its own output socket, so a dead
// frame names its sender. A rank that says HELLO again (a restarted
// engine) is handshaken anew and reported with a new engine id.
//
//	b, err := vllmengines.Start(vllmengines.Config{
//		HandshakeAddress: "tcp://0.0.0.0:29550", Host: "10.0.0.1", Engines: 2,
//		Model: "/models/llama", EOSTokenIDs: []int32{2}, VocabSize: 32000,
//	})
//	client, err := engineclient.Dial(engineclient.Config{Endpoints: b.Endpoints()})
package vllmengines
