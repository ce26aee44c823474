// Package vllmfrontend puts a Tandem engine core behind a vLLM 0.33
// frontend (`vllm serve --data-parallel-size-local 0`, or any AsyncLLM
// whose engines are headless): `tandem engine --protocol vllm`. It is
// package frontend/vllmengines the other way round. It connects what a
// headless vLLM engine connects (a DEALER to the handshake ROUTER at
// --data-parallel-address:--data-parallel-rpc-port, then a DEALER to each
// input ROUTER and a PUSH to each output PULL the frontend names, all with
// the DP rank as identity), runs vLLM's handshake from the engine's side
// (docs/wire.md §12), and is the engine core's one Tandem frontend, over
// an in-process Pipe instead of a socket.
//
// Gate is the pure core: it takes one message at a time (from the engine
// core, or from the frontend's handshake or input sockets) and returns the
// messages to send, translating with package wire/vllm. It answers what a
// Tandem engine lacks the way a vLLM engine without the feature would
// (is_sleeping false, list_loras empty, sleep and LoRA calls refused with
// vLLM's "Call to METHOD method failed: …"), and forwards
// reset_prefix_cache. Run is the goroutine shell around it.
//
// Death: when the engine core dies (ENGINE_DEAD, or Serve returning), the
// Gate sends the single frame ENGINE_CORE_DEAD on every output socket, as
// vLLM's EngineCoreProc does, and Run returns an error wrapping
// ErrEngineDied (the process then exits non-zero). A cancelled ctx is
// vLLM's SIGTERM: in-flight requests finish with ABORT and Run returns
// nil. Not supported: vLLM's DP coordinator (counts and waves; the engine
// serves without reporting to it) and more than one engine per process.
//
// It imports package wire, wire/vllm and wire/zmq; not enginecore (the
// Pipe satisfies enginecore.Conn) and never frontend.
//
//	err := vllmfrontend.Run(ctx, vllmfrontend.Config{
//		HandshakeAddress: "tcp://10.0.0.1:29550",
//		Gate:             vllmfrontend.GateConfig{Rank: 0, DPSize: 1, MaxNumSeqs: 256, MaxNumBatchedTokens: 2048},
//	}, func(ctx context.Context, p *vllmfrontend.Pipe) error { return core.Serve(ctx, p, nil) })
package vllmfrontend
