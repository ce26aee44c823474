package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// TopicSessions is the PUB topic of SessionReport: which sessions an
// engine holds (deltas as they happen, a full snapshot about every second).
const TopicSessions = "sessions"

// KVEventBatch is the payload under TopicKV, in the format vLLM publishes
// (vllm/distributed/kv_events.py KVEventBatch, msgspec array_like) and
// Dynamo and llm-d consume. Array:
//
//	0 ts      float64 (unix seconds)
//	1 events  [KVEvent]
//	2 dp_rank int (the engine's data-parallel rank)
type KVEventBatch struct {
	Timestamp float64
	Events    []KVEvent
	DPRank    int
}

// KVEvent is one of *BlockStored, *BlockRemoved, *AllBlocksCleared, or
// *UnknownKVEvent when decoding a tag this package does not know. Each
// encodes as a msgspec tagged array: its tag string, then its fields.
type KVEvent interface {
	kvTag() string
	encodeFields(e *enc)
}

// BlockStored says consecutive blocks of one hash chain were cached.
// Array: ["BlockStored", block_hashes [uint64], parent_block_hash uint64 |
// nil, token_ids [int], block_size int, lora_id int | nil, medium str | nil].
type BlockStored struct {
	BlockHashes []uint64 // chained block hashes, in chain order
	ParentHash  uint64   // hash of the block before BlockHashes[0]; valid iff HasParent
	HasParent   bool     // false (nil on the wire) when BlockHashes[0] is a first block
	TokenIDs    []int32  // [len(BlockHashes) × BlockSize] the blocks' tokens
	BlockSize   int      // tokens per block
	Medium      string   // "" (nil on the wire): the engine's own KV pool
}

// BlockRemoved says cached blocks were evicted. Array: ["BlockRemoved",
// block_hashes [uint64], medium str | nil].
type BlockRemoved struct {
	BlockHashes []uint64
	Medium      string
}

// AllBlocksCleared says every cached block was dropped. Array:
// ["AllBlocksCleared"].
type AllBlocksCleared struct{}

// UnknownKVEvent is an event whose tag this package does not know; its
// fields are skipped.
type UnknownKVEvent struct{ Tag string }

func (*BlockStored) kvTag() string      { return "BlockStored" }
func (*BlockRemoved) kvTag() string     { return "BlockRemoved" }
func (*AllBlocksCleared) kvTag() string { return "AllBlocksCleared" }
func (u *UnknownKVEvent) kvTag() string { return u.Tag }

func (b *BlockStored) encodeFields(e *enc) {
	e.arrayLen(7)
	e.str(b.kvTag())
	e.uints(b.BlockHashes)
	if b.HasParent {
		e.uint(b.ParentHash)
	} else {
		e.null()
	}
	e.int32s(b.TokenIDs)
	e.int(int64(b.BlockSize))
	e.null() // lora_id
	e.optStr(b.Medium)
}

func (b *BlockRemoved) encodeFields(e *enc) {
	e.arrayLen(3)
	e.str(b.kvTag())
	e.uints(b.BlockHashes)
	e.optStr(b.Medium)
}

func (*AllBlocksCleared) encodeFields(e *enc) {
	e.arrayLen(1)
	e.str("AllBlocksCleared")
}

func (u *UnknownKVEvent) encodeFields(e *enc) {
	e.arrayLen(1)
	e.str(u.Tag)
}

func (e *enc) uints(s []uint64) {
	e.arrayLen(len(s))
	for _, v := range s {
		e.uint(v)
	}
}

var kvBatchFields = []string{"ts", "events", "dp_rank"}

func (b *KVEventBatch) encode(e *enc) {
	e.arrayLen(3)
	e.float(b.Timestamp)
	e.arrayLen(len(b.Events))
	for _, ev := range b.Events {
		if ev == nil {
			e.fail(fmt.Errorf("KVEventBatch: nil event"))
			return
		}
		ev.encodeFields(e)
	}
	e.int(int64(b.DPRank))
}

func (b *KVEventBatch) decode(d *dec) error {
	*b = KVEventBatch{}
	n, err := d.arrayLen()
	if err != nil {
		return fmt.Errorf("KVEventBatch: %w", err)
	}
	for i := range n {
		var err error
		switch i {
		case 0:
			b.Timestamp, err = d.float64()
		case 1:
			b.Events, err = d.kvEvents()
		case 2:
			b.DPRank, err = d.int()
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("KVEventBatch", kvBatchFields, i, err)
		}
	}
	return nil
}

func (d *dec) kvEvents() ([]KVEvent, error) { return list(d, d.kvEvent) }

// kvEvent reads one tagged array. Missing trailing fields take defaults;
// extra ones are skipped.
func (d *dec) kvEvent() (KVEvent, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("event without a tag")
	}
	tag, err := d.str()
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	var ev KVEvent
	var field func(i int) error // i counts from 1 (0 is the tag)
	switch tag {
	case "BlockStored":
		b := &BlockStored{}
		ev = b
		field = func(i int) error {
			var err error
			switch i {
			case 1:
				b.BlockHashes, err = d.blockHashes()
			case 2:
				var isNil bool
				if isNil, err = d.takeNil(); err == nil && !isNil {
					b.ParentHash, err = d.blockHash()
					b.HasParent = err == nil
				}
			case 3:
				b.TokenIDs, err = d.int32s()
			case 4:
				b.BlockSize, err = d.int()
			case 6:
				b.Medium, err = d.str()
			default: // 5 lora_id, 7+ lora_name and later additions
				err = d.skip()
			}
			return err
		}
	case "BlockRemoved":
		b := &BlockRemoved{}
		ev = b
		field = func(i int) error {
			var err error
			switch i {
			case 1:
				b.BlockHashes, err = d.blockHashes()
			case 2:
				b.Medium, err = d.str()
			default:
				err = d.skip()
			}
			return err
		}
	case "AllBlocksCleared":
		ev = &AllBlocksCleared{}
		field = func(int) error { return d.skip() }
	default:
		ev = &UnknownKVEvent{Tag: tag}
		field = func(int) error { return d.skip() }
	}
	for i := 1; i < n; i++ {
		if err := field(i); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", tag, i, err)
		}
	}
	return ev, nil
}

func (d *dec) blockHashes() ([]uint64, error) { return list(d, d.blockHash) }

// blockHash reads one block hash as the peers send it: an unsigned int
// (Tandem, vLLM), a signed int (Dynamo's i64, reinterpreted as its two's
// complement bits), or bytes (vLLM's raw hashes: the first 8 bytes,
// big-endian, zero-padded when shorter).
func (d *dec) blockHash() (uint64, error) {
	c, err := d.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Uint64:
		return d.uint64()
	case isInt(c):
		n, err := d.int64()
		return uint64(n), err
	case msgpcode.IsBin(c) || msgpcode.IsString(c):
		var b []byte
		if msgpcode.IsBin(c) {
			b, err = d.bin()
		} else {
			var s string
			s, err = d.str()
			b = []byte(s)
		}
		if err != nil {
			return 0, err
		}
		var buf [8]byte
		copy(buf[:], b)
		return binary.BigEndian.Uint64(buf[:]), nil
	}
	return 0, fmt.Errorf("want block hash (int or bytes), got %s", describe(c))
}

// SessionReport is the payload under TopicSessions: the sessions an engine
// holds (a request registered, or KV blocks resident). Array:
//
//	0 engine_index int
//	1 timestamp    float64 (unix seconds)
//	2 full         bool (true: added is the complete set, replacing what
//	               the subscriber knew of this engine)
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
	_ msgpack.CustomEncoder = (*KVEventBatch)(nil)
	_ msgpack.CustomDecoder = (*KVEventBatch)(nil)
	_ msgpack.CustomEncoder = (*SessionReport)(nil)
	_ msgpack.CustomDecoder = (*SessionReport)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *KVEventBatch) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *KVEventBatch) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }

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
