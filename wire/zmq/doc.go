// Package zmq is Tandem's ZeroMQ socket plumbing: it moves multipart messages (a
// [][]byte, one slice per frame) between engine cores and frontends and knows nothing
// of their contents. Package wire encodes and decodes them.
//
// Topology (design brief §1): each engine core binds a ROUTER (requests in, outputs
// back to the sender's identity) and a PUB (load reports, KV events). Each frontend
// connects a DEALER to every engine's ROUTER and a SUB to every engine's PUB.
// vLLM's engine-core protocol (package wire/vllm) adds PULL, bound by the
// frontend for engine outputs (BindPull), and PUSH, connected by the engine
// (DialPush).
//
// This package must not import any other Tandem package. It is the only part of
// package wire that uses cgo (through github.com/pebbe/zmq4 and libzmq); built with
// CGO_ENABLED=0 it still compiles, but its constructors return ErrNoCgo.
//
// # Usage
//
//	// engine core
//	router, err := zmq.BindRouter("tcp://0.0.0.0:5555")
//	if err != nil { … }
//	defer router.Close()
//	for msg := range router.Recv() { // msg[0] is the frontend's identity
//		_ = router.Send([][]byte{msg[0], []byte("reply")})
//	}
//
//	// frontend
//	dealer, err := zmq.DialDealer("tcp://engine-0:5555") // works before the engine is up
//	if err != nil { … }
//	defer dealer.Close()
//	_ = dealer.Send([][]byte{[]byte("request")})
//	reply := <-dealer.Recv()
//
// # Goroutines
//
// libzmq sockets are not goroutine-safe, and a blocking receive cannot be cancelled, so
// each Conn runs two goroutines and exposes only channels and a queue:
//
//	Send (any goroutine) ─▶ outq ─────────────────────┐
//	     └─ sendReady ─▶ helper ─wake─▶ inproc PAIR ─▶ socket goroutine ─▶ main socket ─▶ network
//	Recv channel ◀─ helper ◀─ inq ◀─ socket goroutine ◀─ main socket ◀─ network
//
// The roles:
//
//   - The socket goroutine is the only goroutine that touches the main socket and the
//     reading end of an inproc PAIR. It creates both, then loops on one zmq_poll over
//     them. When the PAIR is readable it drains the wake-up bytes, then takes everything
//     Send queued (in that order, so no wake-up is lost) and sends it with DONTWAIT;
//     when the main socket is readable it reads up to 256 messages into inq. It never
//     blocks except in the poll, so Close always takes effect at once.
//   - The helper goroutine is the only goroutine that touches the writing end of the
//     PAIR. Send appends to outq under a mutex and signals a 1-slot channel; the helper
//     turns that signal into a wake-up byte, so a message's latency is one goroutine
//     hop and one inproc hop, never a poll timeout (the 100 ms timeout is a safety net).
//     The helper also moves messages from inq to the Recv channel, blocking there when
//     the consumer is slow.
//
// A slow Recv consumer therefore never stops sends: the socket goroutine does not wait
// on the Recv channel. Received messages pile up in inq until it holds the Recv buffer
// size again (WithRecvBuffer); then the socket goroutine stops reading and leaves further
// messages in libzmq's queue, and the helper wakes it when the backlog has halved.
//
// # Socket options
//
// All sockets share one process-wide libzmq context and use linger 0, so Close never
// waits for a peer. Send and receive high-water marks default to 0 (unbounded, as in
// vLLM). ROUTER sockets set ZMQ_ROUTER_MANDATORY: a message to an identity that is not
// connected is dropped and counted (Dropped) rather than blocking or vanishing silently.
// A message that hits a peer's high-water mark (only with WithHWM) stays at the head of
// the queue and is retried. For ipc:// binds, the parent directory is created and a
// stale socket file removed; a file a live process listens on gives ErrAddrInUse. libzmq
// closes listeners asynchronously and leaves ipc files behind, so Close waits (briefly)
// until the listener is gone and removes the file: the endpoint can be bound again at
// once. A tcp:// port may stay busy for a moment after Close.
//
// # Security
//
// Sockets are plain (ZMTP's NULL mechanism) unless given CURVE options. A bound socket
// with WithCurveServer(secretKey, allowedClientKeys) encrypts every connection and admits
// only clients whose public key is in the list; a connecting socket with
// WithCurveClient(serverPublicKey, publicKey, secretKey) talks only to that server.
// Keys are 40-character Z85 text (NewCurveKeypair, CurvePublic, CheckKey). The
// decision is made by a ZAP handler (RFC 27) that this package runs in its libzmq
// context while any CURVE server is open; pebbe/zmq4's AuthStart is not used (other
// context, global policy). Every refused peer (unknown client key, no CURVE, wrong
// server key) is counted by Refused and logged at warn level, at most once a second per
// socket; a CURVE client logs the handshakes its server refused. Secret keys are never
// logged.
//
//	pub, sec, _ := zmq.NewCurveKeypair() // the engine's keypair; cpub, csec the frontend's
//	router, err := zmq.BindRouter("tcp://0.0.0.0:5555", zmq.WithCurveServer(sec, []string{cpub}))
//	dealer, err := zmq.DialDealer("tcp://engine-0:5555", zmq.WithCurveClient(pub, cpub, csec))
package zmq
