package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The replay socket (docs/wire.md §10) is a ROUTER an engine binds beside
// its KV-events PUB, as vLLM's ZmqEventPublisher does. A client (REQ, or
// DEALER sending an empty delimiter frame first) sends one request frame:
//
//   - 8 bytes, a big-endian sequence number: the engine resends, in
//     order, every buffered batch from that number on, each as
//     [topic][8-byte seq][payload] (vLLM's replay);
//   - SnapshotRequest (Tandem): the engine sends BlockStored batches
//     covering every block cached now, parents before children, each
//     framed [topic][8-byte seq][payload] where seq is the number of the
//     first live batch the snapshot does not include.
//
// Either answer ends with the frames ["", ReplayEnd, ""].

// SnapshotRequest is the request frame that asks for a snapshot.
var SnapshotRequest = []byte("kv-snapshot")

// ReplayEnd is the sequence frame of the end marker: -1 as a signed
// 8-byte big-endian integer, as vLLM's END_SEQ.
var ReplayEnd = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ReplayRequest is the request frame for a replay from seq on.
func ReplayRequest(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// ParseReplayRequest reads a request frame: a replay from seq, or a
// snapshot.
func ParseReplayRequest(frame []byte) (seq uint64, snapshot bool, err error) {
	switch {
	case bytes.Equal(frame, SnapshotRequest):
		return 0, true, nil
	case len(frame) == 8:
		return binary.BigEndian.Uint64(frame), false, nil
	}
	return 0, false, fmt.Errorf("%w: replay request of %d bytes, want 8 or %q", ErrMalformed, len(frame), SnapshotRequest)
}

// IsReplayEnd reports whether the frames [topic][seq][payload] of one
// replay answer are its end marker.
func IsReplayEnd(frames [][]byte) bool {
	return len(frames) == 3 && bytes.Equal(frames[1], ReplayEnd)
}
