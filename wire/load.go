package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Topics of the reports that engines before 2026-12 published on their PUB
// socket beside the KV events. Engines now send both over the ROUTER
// connection (load in every HEARTBEAT, SessionReport in HEARTBEAT[4]), so
// the PUB socket carries KV events only; frontends still read these topics
// from an older engine.
const (
	TopicLoad     = "load"     // payload: LoadReport
	TopicSessions = "sessions" // payload: SessionReport
	TopicKV       = "kv"       // the KV-events topic engines used before --kv-events-config
)

// LoadReport is what engines before 2026-12 published under TopicLoad.
// Array:
//
//	0 engine_index     int
//	1 timestamp        float64 (unix seconds)
//	2 num_waiting      int (requests)
//	3 num_running      int (requests)
//	4 num_free_blocks  int (KV blocks)
//	5 num_total_blocks int (KV blocks)
//	6 kv_cache_usage   float64 (0..1)
type LoadReport struct {
	EngineIndex    int
	Timestamp      float64
	NumWaiting     int
	NumRunning     int
	NumFreeBlocks  int
	NumTotalBlocks int
	KVCacheUsage   float64
}

var loadReportFields = []string{
	"engine_index", "timestamp", "num_waiting", "num_running", "num_free_blocks",
	"num_total_blocks", "kv_cache_usage",
}

func (l *LoadReport) encode(e *enc) {
	e.arrayLen(len(loadReportFields))
	e.int(int64(l.EngineIndex))
	e.float(l.Timestamp)
	e.int(int64(l.NumWaiting))
	e.int(int64(l.NumRunning))
	e.int(int64(l.NumFreeBlocks))
	e.int(int64(l.NumTotalBlocks))
	e.float(l.KVCacheUsage)
}

func (l *LoadReport) decode(d *dec) error {
	*l = LoadReport{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("LoadReport: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			l.EngineIndex, err = d.int()
		case 1:
			l.Timestamp, err = d.float64()
		case 2:
			l.NumWaiting, err = d.int()
		case 3:
			l.NumRunning, err = d.int()
		case 4:
			l.NumFreeBlocks, err = d.int()
		case 5:
			l.NumTotalBlocks, err = d.int()
		case 6:
			l.KVCacheUsage, err = d.float64()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("LoadReport", loadReportFields, i, err)
		}
	}
	return nil
}

// PubFrames returns the three frames of one PUB message: [topic, 8-byte
// big-endian seq, payload]. payload is already-encoded msgpack (see Marshal).
func PubFrames(topic string, seq uint64, payload []byte) [][]byte {
	return [][]byte{[]byte(topic), binary.BigEndian.AppendUint64(nil, seq), payload}
}

// ParsePub splits the frames of one PUB message. The payload aliases
// frames[2].
func ParsePub(frames [][]byte) (topic string, seq uint64, payload []byte, err error) {
	if len(frames) != 3 {
		return "", 0, nil, fmt.Errorf("%w: PUB message has %d frames, want 3", ErrMalformed, len(frames))
	}
	if len(frames[1]) != 8 {
		return "", 0, nil, fmt.Errorf("%w: PUB sequence frame is %d bytes, want 8", ErrMalformed, len(frames[1]))
	}
	return string(frames[0]), binary.BigEndian.Uint64(frames[1]), frames[2], nil
}

// SessionReport says which sessions an engine holds (a request
// registered, or KV blocks resident): a delta when a session arrives, a
// full snapshot about every second. It rides in HEARTBEAT[4]. Array:
//
//	0 engine_index int
//	1 timestamp    float64 (unix seconds)
//	2 full         bool (true: added is the complete set, replacing what
//	               the receiver knew of this engine)
//	3 added        [str] session ids now held
//	4 removed      [str] session ids no longer held (empty when full)
type SessionReport struct {
	EngineIndex int
	Timestamp   float64
	Full        bool
	Added       []string
	Removed     []string
}

var sessionReportFields = []string{"engine_index", "timestamp", "full", "added", "removed"}

func (s *SessionReport) encode(e *enc) {
	e.arrayLen(len(sessionReportFields))
	e.int(int64(s.EngineIndex))
	e.float(s.Timestamp)
	e.bool(s.Full)
	e.strs(s.Added)
	e.strs(s.Removed)
}

func (s *SessionReport) decode(d *dec) error {
	*s = SessionReport{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("SessionReport: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			s.EngineIndex, err = d.int()
		case 1:
			s.Timestamp, err = d.float64()
		case 2:
			s.Full, err = d.bool()
		case 3:
			s.Added, err = d.strs()
		case 4:
			s.Removed, err = d.strs()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("SessionReport", sessionReportFields, i, err)
		}
	}
	return nil
}

var (
	_ msgpack.CustomEncoder = (*SessionReport)(nil)
	_ msgpack.CustomDecoder = (*SessionReport)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *SessionReport) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *SessionReport) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

// PubSeq is the per-topic PUB sequence state of one subscriber: it tells
// a gap (messages lost) from a restart (the sequence went back). The zero
// value expects any first sequence number.
type PubSeq struct {
	next map[string]uint64 // topic → expected next sequence number
}

// SeqStatus is what Observe found.
type SeqStatus int

// Observe results.
const (
	SeqInOrder SeqStatus = iota // the expected number (or the first seen)
	SeqGap                      // numbers were skipped: messages were lost
	SeqRestart                  // the number went back: the publisher restarted
)

// Observe records seq on topic and classifies it.
func (p *PubSeq) Observe(topic string, seq uint64) SeqStatus {
	if p.next == nil {
		p.next = map[string]uint64{}
	}
	want, seen := p.next[topic]
	p.next[topic] = seq + 1
	switch {
	case !seen || seq == want:
		return SeqInOrder
	case seq < want:
		return SeqRestart
	}
	return SeqGap
}

// Reset forgets every topic (after a reconnect).
func (p *PubSeq) Reset() { clear(p.next) }
