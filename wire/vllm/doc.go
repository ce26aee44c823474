// Package vllm speaks vLLM 0.33's engine-core wire protocol byte for byte
// (read from the vllm-0.33.0 sdist; checked live against msgspec with
// scripts/vllmwire/structs.py). It imports only package wire, for the
// pure Tandem ⇄ vLLM translations, and does no I/O.
//
// Frames. On an input socket a request is [type][payload][aux...]
// (EncodeAdd, EncodeAbort, EncodeUtility, EncodeStartDPWave;
// DecodeRequest). On an output socket a message is [payload][aux...] with
// no type byte (EncodeOutputs, DecodeOutputs), or the single frame
// EngineCoreDead. Aux frames carry ndarray/tensor data of
// ZeroCopyThreshold bytes or more; NDArray.Data holds it either way.
// Handshake messages are single frames (EncodeHandshake,
// EncodeHandshakeMetadata, EncodeReadyResponse and their Decode*).
// Decoders wrap ErrMalformed, tolerate extra and missing trailing array
// elements, bound nesting and lengths, and never panic.
//
// Handshake, as vLLM 0.33 runs it (core.py _perform_handshake,
// process_input_sockets, process_output_sockets; utils.py
// wait_for_engine_startup):
//
//  1. The frontend binds a ROUTER handshake socket
//     (--data-parallel-address:--data-parallel-rpc-port, 29550 by
//     default, for headless engines), one ROUTER input socket and one PULL
//     output socket per frontend client.
//  2. Each engine connects a DEALER to the handshake socket with identity
//     = its DP rank as 2 little-endian bytes, and sends HandshakeMessage
//     {status HELLO, local, headless}.
//  3. The frontend answers (ROUTER → that identity) with
//     EngineHandshakeMetadata: the input and output addresses, and
//     parallel_config (empty unless DP is coordinated).
//  4. The engine connects a DEALER (same identity) to every input address
//     and a PUSH to every output address, and sends
//     EngineCoreReadyResponse as its first message on each input socket:
//     the frontend's ROUTER learns the identity from it and only then can
//     route requests to the engine.
//  5. The engine sends HandshakeMessage {status READY, local, headless}
//     (plus parallel_config_hash when DP > 1) on the handshake socket. The
//     frontend considers the engine ready when READY arrives in state
//     CONNECTED (after HELLO); any other order is an error.
//  6. Requests flow ROUTER → DEALER as [identity][type][payload][aux...];
//     outputs PUSH → PULL. EngineCoreRequest.ClientIndex picks the output
//     socket; UtilityRequest answers come back as
//     EngineCoreOutputs.UtilityOutput.
//
// There are no heartbeats. The frontend considers an engine dead when its
// process exits (local engines) or it receives the single frame
// ENGINE_CORE_DEAD on an output socket (IsEngineCoreDead).
//
// DP waves: the coordinator sends START_DP_WAVE (StartDPWave) to engines;
// engines report EngineCoreOutputs.WaveComplete / StartWave, and their
// SchedulerStats (current_wave, step_counter) on the coordinator's socket.
//
// API:
//
//	EncodeAdd(*EngineCoreRequest) ([][]byte, error)
//	EncodeAbort([]string) ([][]byte, error)
//	EncodeUtility(*UtilityRequest) ([][]byte, error)
//	EncodeStartDPWave(*StartDPWave) ([][]byte, error)
//	DecodeRequest([][]byte) (*Request, error)
//	EncodeOutputs(*EngineCoreOutputs) ([][]byte, error)
//	DecodeOutputs([][]byte) (*EngineCoreOutputs, error) // ErrEngineCoreDead
//	EncodeHandshake / DecodeHandshake (HandshakeMessage)
//	EncodeHandshakeMetadata / DecodeHandshakeMetadata
//	EncodeReadyResponse / DecodeReadyResponse
//	FromTandemRequest(*wire.EngineCoreRequest, clientIndex, currentWave int64) (*EngineCoreRequest, error)
//	ToTandemRequest(*EngineCoreRequest) (*wire.EngineCoreRequest, error)
//	FromTandemOutputs(*wire.EngineCoreOutputs, firsts map[string]int) (*EngineCoreOutputs, error)
//	ToTandemOutputs(*EngineCoreOutputs) (*wire.EngineCoreOutputs, error)
//	(*SchedulerStats).SetStep(cur, prev *wire.SchedulerStats, requests int)
//
// Translations return ErrUntranslatable for set fields that have no
// counterpart and would change what is computed; their doc comments list
// what is dropped instead.
package vllm
