// Package wire is the frontend⇄engine message codec: the message structs,
// their type bytes, the protocol version and the msgpack encoding, mimicking
// vLLM's msgspec rules. docs/wire.md is the full protocol description.
//
// Every message is two ZMQ frames, [type byte][msgpack payload]. Structs are
// msgpack arrays in their documented field order; SamplingParams is a map
// of its non-default keys; SchedulerStats and SessionInfo are maps with all
// keys. Evolution is append-only: decoders skip extra trailing array
// elements and fill missing ones with defaults, and ignore unknown map keys.
// A nil element decodes as the field's default.
//
// Decoding is safe on hostile input: declared lengths are checked against
// the bytes left before anything is allocated, free-form values nest at most
// 32 deep, and every failure wraps ErrMalformed.
//
// Encode, Decode, Marshal and Unmarshal are safe for concurrent use; the
// values they return do not alias their inputs.
//
// wire imports nothing from this repository; socket plumbing is in
// wire/zmq.
//
// Usage:
//
//	frames, err := wire.Encode(wire.MsgAdd, &wire.EngineCoreRequest{
//		RequestID:      "cmpl-1-9f8e7d6c",
//		PromptTokenIDs: []int32{1, 15043},
//		SamplingParams: wire.DefaultSamplingParams(),
//	})
//	// ... send frames on a DEALER socket; on the other side:
//	t, payload, err := wire.Decode(frames)
//	if t == wire.MsgAdd {
//		req := payload.(*wire.EngineCoreRequest)
//		_ = req
//	}
//
// Utility results travel as Raw msgpack:
//
//	raw, _ := wire.Marshal(&wire.SessionInfo{SessionID: "conv-42"})
//	res := wire.UtilityResult{CallID: 7, Result: raw}
//	var info wire.SessionInfo
//	err = wire.Unmarshal(res.Result, &info)
package wire
