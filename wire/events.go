package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// KVEventBatch is the payload of every message on an engine's KV-events
// PUB socket, in the format vLLM publishes (vllm/distributed/kv_events.py
// KVEventBatch, a msgspec array_like struct) and Dynamo and llm-d consume.
// Array:
//
//	0 ts                 float64 (unix seconds)
//	1 events             [KVEvent], each laid out as Layout says
//	2 data_parallel_rank int (the engine's data-parallel rank)
type KVEventBatch struct {
	Timestamp float64
	Events    []KVEvent
	DPRank    int
	// Layout is how the events are encoded. Decoding accepts both layouts,
	// event by event, and sets Layout from the first event.
	Layout KVLayout
}

// KVLayout is how a KVEventBatch encodes its events (docs/wire.md §10).
type KVLayout int

const (
	// KVLayoutMap is vLLM's layout since 0.24.0 (pinned: 0.33.0): each
	// event a msgspec tagged map, {"type": "BlockStored", field: value, …},
	// fields with a default omitted when they hold it.
	KVLayoutMap KVLayout = iota
	// KVLayoutArray is vLLM's layout up to 0.23: each event a msgspec
	// tagged array, ["BlockStored", field, …]. Tandem writes the fields of
	// vLLM 0.17-0.19 (BlockStored with lora_name and extra_keys, 9
	// elements; BlockRemoved 3), which older and newer array decoders read
	// and llm-d-kv-cache's vLLM adapter requires exactly.
	KVLayoutArray
)

// ParseKVLayout reads "map" or "array".
func ParseKVLayout(s string) (KVLayout, error) {
	switch s {
	case "map", "":
		return KVLayoutMap, nil
	case "array":
		return KVLayoutArray, nil
	}
	return 0, fmt.Errorf("KV event layout %q: want map or array", s)
}

func (l KVLayout) String() string {
	if l == KVLayoutArray {
		return "array"
	}
	return "map"
}

// Medium names of vLLM's KV tiers.
const (
	MediumGPU = "GPU" // the engine's own KV pool (vLLM's MEDIUM_GPU), whatever the device
	MediumCPU = "CPU"
)

// KVEvent is one of *BlockStored, *BlockRemoved, *AllBlocksCleared, or
// *UnknownKVEvent when decoding a tag this package does not know.
type KVEvent interface {
	kvTag() string
	encodeMap(e *enc)
	encodeArray(e *enc)
}

// BlockStored says consecutive blocks of one hash chain were cached.
// Fields as vLLM 0.33.0 names them: block_hashes, parent_block_hash,
// token_ids, block_size, lora_id, medium, lora_name, session_id.
type BlockStored struct {
	BlockHashes []uint64 // chained block hashes, in chain order
	ParentHash  uint64   // hash of the block before BlockHashes[0]; valid iff HasParent
	HasParent   bool     // false (nil on the wire) when BlockHashes[0] is a first block
	TokenIDs    []int32  // [len(BlockHashes) × BlockSize] the blocks' tokens
	BlockSize   int      // tokens per block
	Medium      string   // "" is nil on the wire; the engine sends MediumGPU
	LoraName    string   // the LoRA adapter of the request that stored them; "" is nil on the wire
	LoraID      int      // its lora_int_id (vLLM's deprecated lora_id); 0 is nil on the wire
	SessionID   string   // the session of the request that stored the blocks; "" = none (omitted)
}

// BlockRemoved says cached blocks were evicted: block_hashes, medium.
type BlockRemoved struct {
	BlockHashes []uint64
	Medium      string
}

// AllBlocksCleared says every cached block was dropped.
type AllBlocksCleared struct{}

// UnknownKVEvent is an event whose tag this package does not know; its
// fields are skipped.
type UnknownKVEvent struct{ Tag string }

func (*BlockStored) kvTag() string      { return "BlockStored" }
func (*BlockRemoved) kvTag() string     { return "BlockRemoved" }
func (*AllBlocksCleared) kvTag() string { return "AllBlocksCleared" }
func (u *UnknownKVEvent) kvTag() string { return u.Tag }

// kvTagKey is msgspec's default tag field for tagged map structs.
const kvTagKey = "type"

func (b *BlockStored) parent(e *enc) {
	if b.HasParent {
		e.uint(b.ParentHash)
	} else {
		e.null()
	}
}

func (b *BlockStored) encodeMap(e *enc) {
	n := 8 // type + the seven fields without a default, always written
	if b.SessionID != "" {
		n++
	}
	e.mapLen(n)
	e.str(kvTagKey)
	e.str(b.kvTag())
	e.str("block_hashes")
	e.uints(b.BlockHashes)
	e.str("parent_block_hash")
	b.parent(e)
	e.str("token_ids")
	e.int32s(b.TokenIDs)
	e.str("block_size")
	e.int(int64(b.BlockSize))
	e.str("lora_id")
	e.optID(b.LoraID)
	e.str("medium")
	e.optStr(b.Medium)
	e.str("lora_name")
	e.optStr(b.LoraName)
	if b.SessionID != "" {
		e.str("session_id")
		e.str(b.SessionID)
	}
}

func (b *BlockStored) encodeArray(e *enc) {
	e.arrayLen(9)
	e.str(b.kvTag())
	e.uints(b.BlockHashes)
	b.parent(e)
	e.int32s(b.TokenIDs)
	e.int(int64(b.BlockSize))
	e.optID(b.LoraID)
	e.optStr(b.Medium)
	e.optStr(b.LoraName)
	e.null() // extra_keys
}

func (b *BlockRemoved) encodeMap(e *enc) {
	e.mapLen(3)
	e.str(kvTagKey)
	e.str(b.kvTag())
	e.str("block_hashes")
	e.uints(b.BlockHashes)
	e.str("medium")
	e.optStr(b.Medium)
}

func (b *BlockRemoved) encodeArray(e *enc) {
	e.arrayLen(3)
	e.str(b.kvTag())
	e.uints(b.BlockHashes)
	e.optStr(b.Medium)
}

func (*AllBlocksCleared) encodeMap(e *enc) {
	e.mapLen(1)
	e.str(kvTagKey)
	e.str("AllBlocksCleared")
}

func (*AllBlocksCleared) encodeArray(e *enc) {
	e.arrayLen(1)
	e.str("AllBlocksCleared")
}

func (u *UnknownKVEvent) encodeMap(e *enc) {
	e.mapLen(1)
	e.str(kvTagKey)
	e.str(u.Tag)
}

func (u *UnknownKVEvent) encodeArray(e *enc) {
	e.arrayLen(1)
	e.str(u.Tag)
}

func (e *enc) uints(s []uint64) {
	e.arrayLen(len(s))
	for _, v := range s {
		e.uint(v)
	}
}

var kvBatchFields = []string{"ts", "events", "data_parallel_rank"}

func (b *KVEventBatch) encode(e *enc) {
	e.arrayLen(3)
	e.float(b.Timestamp)
	e.arrayLen(len(b.Events))
	for _, ev := range b.Events {
		switch {
		case ev == nil:
			e.fail(fmt.Errorf("KVEventBatch: nil event"))
			return
		case b.Layout == KVLayoutArray:
			ev.encodeArray(e)
		default:
			ev.encodeMap(e)
		}
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
			b.Events, b.Layout, err = d.kvEvents()
		case 2:
			var isNil bool // vLLM's data_parallel_rank may be None
			if isNil, err = d.takeNil(); !isNil && err == nil {
				b.DPRank, err = d.int()
			}
		default:
			err = d.skip()
		}
		if err != nil {
			return fieldErr("KVEventBatch", kvBatchFields, i, err)
		}
	}
	return nil
}

func (d *dec) kvEvents() ([]KVEvent, KVLayout, error) {
	n, err := d.arrayLen()
	if err != nil || n == 0 {
		return nil, KVLayoutMap, err
	}
	out := make([]KVEvent, 0, d.capHint(n))
	layout := KVLayoutMap
	for i := range n {
		c, err := d.peek()
		if err != nil {
			return nil, layout, fmt.Errorf("[%d]: %w", i, err)
		}
		var ev KVEvent
		if msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32 {
			ev, err = d.kvEventMap()
		} else {
			if i == 0 {
				layout = KVLayoutArray
			}
			ev, err = d.kvEventArray()
		}
		if err != nil {
			return nil, layout, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, ev)
	}
	return out, layout, nil
}

// kvFields collects the fields of one event before its tag is known (a
// map may put the tag anywhere).
type kvFields struct {
	hashes    []uint64
	parent    uint64
	hasParent bool
	tokens    []int32
	blockSize int
	medium    string
	loraName  string
	loraID    int
	session   string
}

// field decodes the value of the named field; unknown names are skipped.
func (f *kvFields) field(d *dec, name string) error {
	var err error
	switch name {
	case "block_hashes":
		f.hashes, err = d.blockHashes()
	case "parent_block_hash":
		var isNil bool
		if isNil, err = d.takeNil(); err == nil && !isNil {
			f.parent, err = d.blockHash()
			f.hasParent = err == nil
		}
	case "token_ids":
		f.tokens, err = d.int32s()
	case "block_size":
		f.blockSize, err = d.int()
	case "medium":
		f.medium, err = d.optString()
	case "lora_name":
		f.loraName, err = d.optString()
	case "lora_id":
		var isNil bool
		if isNil, err = d.takeNil(); err == nil && !isNil {
			f.loraID, err = d.int()
		}
	case "session_id":
		f.session, err = d.optString()
	default: // extra_keys, group_idx, locality, … and later additions
		err = d.skip()
	}
	return err
}

func (f *kvFields) event(tag string) KVEvent {
	switch tag {
	case "BlockStored":
		return &BlockStored{BlockHashes: f.hashes, ParentHash: f.parent, HasParent: f.hasParent, TokenIDs: f.tokens,
			BlockSize: f.blockSize, Medium: f.medium, LoraName: f.loraName, LoraID: f.loraID, SessionID: f.session}
	case "BlockRemoved":
		return &BlockRemoved{BlockHashes: f.hashes, Medium: f.medium}
	case "AllBlocksCleared":
		return &AllBlocksCleared{}
	}
	return &UnknownKVEvent{Tag: tag}
}

// optString reads a str or nil ("").
func (d *dec) optString() (string, error) {
	if isNil, err := d.takeNil(); err != nil || isNil {
		return "", err
	}
	return d.str()
}

// kvEventMap reads one tagged map (vLLM ≥ 0.24).
func (d *dec) kvEventMap() (KVEvent, error) {
	n, err := d.mapLen()
	if err != nil {
		return nil, err
	}
	var f kvFields
	tag, hasTag := "", false
	for range n {
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		if k == kvTagKey {
			if tag, err = d.str(); err != nil {
				return nil, fmt.Errorf("tag: %w", err)
			}
			hasTag = true
			continue
		}
		if err := f.field(d, k); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if !hasTag {
		return nil, fmt.Errorf("event without a %q tag", kvTagKey)
	}
	return f.event(tag), nil
}

// kvArrayFields are the positions of the array layout's fields, after
// the tag, per tag.
var kvArrayFields = map[string][]string{
	"BlockStored":  {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys"},
	"BlockRemoved": {"block_hashes", "medium"},
}

// kvEventArray reads one tagged array (vLLM ≤ 0.23). Missing trailing
// fields take defaults; extra ones are skipped.
func (d *dec) kvEventArray() (KVEvent, error) {
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
	names := kvArrayFields[tag]
	var f kvFields
	for i := 1; i < n; i++ {
		name := ""
		if i-1 < len(names) {
			name = names[i-1]
		}
		if err := f.field(d, name); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", tag, i, err)
		}
	}
	return f.event(tag), nil
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

var (
	_ msgpack.CustomEncoder = (*KVEventBatch)(nil)
	_ msgpack.CustomDecoder = (*KVEventBatch)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (v *KVEventBatch) EncodeMsgpack(e *msgpack.Encoder) error { return encodeTo(e, v) }

// DecodeMsgpack implements msgpack.CustomDecoder.
func (v *KVEventBatch) DecodeMsgpack(d *msgpack.Decoder) error { return decodeFrom(d, v) }
