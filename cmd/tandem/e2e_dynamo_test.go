package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// A Dynamo-style KV indexer, written from Dynamo's published Rust source
// (ai-dynamo/dynamo, lib/kv-router/src/zmq_wire/types.rs: KvEventBatch,
// RawKvEvent and its visitor, BlockHashValue, convert_event; the radix
// tree's rules for a stored block's parent); none of Tandem's decoding is
// used. What it mirrors:
//
//   - a batch is the tuple (f64, Vec<RawKvEvent>, Option<i32>): an array
//     of exactly three elements;
//   - an event is a map whose "type" names one of BlockStored,
//     BlockRemoved, AllBlocksCleared (any other tag fails the batch), or a
//     tagged array; unknown keys are ignored; BlockStored needs
//     block_hashes, token_ids (u32) and block_size; a hash is an i64 or a
//     u64 (untagged), taken as its 64 bits;
//   - a BlockStored with a repeated hash is dropped; each block is
//     block_size tokens, and a block of another size is not indexed (the
//     router's kv_block_size);
//   - a BlockStored whose parent the tree does not hold is dropped
//     (ParentBlockNotFound).
//
// The tree keys children by a hash of the block's tokens alone (Dynamo's
// LocalBlockHash, xxh3 with seed 1337; FNV-64a here) and finds a worker's
// nodes by the engine's hashes (ExternalSequenceBlockHash).

type dynamoStored struct {
	hashes    []uint64
	parent    *uint64
	tokens    []uint32
	blockSize int
}

type dynamoNode struct {
	children map[uint64]*dynamoNode // by local (tokens) hash
	workers  map[int]bool
}

type dynamoIndex struct {
	mu          sync.Mutex
	kvBlockSize int
	root        *dynamoNode
	lookup      map[int]map[uint64]*dynamoNode // worker → engine hash → node
	ranks       map[int]map[int]bool           // worker → data_parallel_rank seen
	numBatches  int
	dropped     int // ParentBlockNotFound, duplicates, wrong block sizes
	errs        []error
}

func newDynamoIndex(kvBlockSize int) *dynamoIndex {
	return &dynamoIndex{kvBlockSize: kvBlockSize, root: &dynamoNode{children: map[uint64]*dynamoNode{}, workers: map[int]bool{}},
		lookup: map[int]map[uint64]*dynamoNode{}, ranks: map[int]map[int]bool{}}
}

func localHash(tokens []uint32) uint64 {
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, tokens)
	return h.Sum64()
}

// asInt64Bits reads a msgpack integer of any width: BlockHashValue's
// Signed(i64) | Unsigned(u64).
func asInt64Bits(v any) (uint64, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return r.Uint(), true
	}
	return 0, false
}

// asUint reads a non-negative integer no larger than limit (u32, usize).
func asUint(v any, limit uint64) (uint64, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if r.Int() < 0 || uint64(r.Int()) > limit {
			return 0, false
		}
		return uint64(r.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return r.Uint(), r.Uint() <= limit
	}
	return 0, false
}

func dynamoHashes(v any) ([]uint64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("block_hashes: %T, want a sequence", v)
	}
	out := make([]uint64, len(arr))
	for i, x := range arr {
		if out[i], ok = asInt64Bits(x); !ok {
			return nil, fmt.Errorf("block_hashes[%d]: %T, want i64 or u64", i, x)
		}
	}
	return out, nil
}

// dynamoEvent is RawKvEventVisitor: a tagged map (visit_map) or a tagged
// sequence (visit_seq).
func dynamoEvent(v any) (tag string, st *dynamoStored, removed []uint64, err error) {
	fields := map[string]any{}
	switch e := v.(type) {
	case map[string]any:
		fields = e
		t, ok := e["type"].(string)
		if !ok {
			return "", nil, nil, errors.New("missing field type")
		}
		tag = t
	case []any:
		if len(e) == 0 {
			return "", nil, nil, errors.New("sequence must start with event tag")
		}
		t, ok := e[0].(string)
		if !ok {
			return "", nil, nil, errors.New("event tag is not a string")
		}
		tag = t
		names := map[string][]string{"BlockStored": {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"},
			"BlockRemoved": {"block_hashes", "medium"}}[tag]
		for i, n := range names {
			if i+1 < len(e) {
				fields[n] = e[i+1]
			}
		}
	default:
		return "", nil, nil, fmt.Errorf("a kv event encoded as a tagged map or sequence, got %T", v)
	}
	optString := func(k string) error {
		if x, ok := fields[k]; ok && x != nil {
			if _, ok := x.(string); !ok {
				return fmt.Errorf("%s: %T, want a string or nil", k, x)
			}
		}
		return nil
	}
	switch tag {
	case "BlockStored":
		st = &dynamoStored{}
		raw, ok := fields["block_hashes"]
		if !ok {
			return tag, nil, nil, errors.New("missing field block_hashes")
		}
		if st.hashes, err = dynamoHashes(raw); err != nil {
			return tag, nil, nil, err
		}
		if p := fields["parent_block_hash"]; p != nil {
			h, ok := asInt64Bits(p)
			if !ok {
				return tag, nil, nil, fmt.Errorf("parent_block_hash: %T", p)
			}
			st.parent = &h
		}
		toks, ok := fields["token_ids"].([]any)
		if !ok {
			return tag, nil, nil, errors.New("missing field token_ids")
		}
		for i, x := range toks {
			u, ok := asUint(x, math.MaxUint32)
			if !ok {
				return tag, nil, nil, fmt.Errorf("token_ids[%d]: %v, want a u32", i, x)
			}
			st.tokens = append(st.tokens, uint32(u))
		}
		bs, ok := asUint(fields["block_size"], math.MaxInt)
		if !ok {
			return tag, nil, nil, errors.New("missing field block_size")
		}
		st.blockSize = int(bs)
		for _, k := range []string{"medium", "lora_name"} {
			if err := optString(k); err != nil {
				return tag, nil, nil, err
			}
		}
		return tag, st, nil, nil
	case "BlockRemoved":
		raw, ok := fields["block_hashes"]
		if !ok {
			return tag, nil, nil, errors.New("missing field block_hashes")
		}
		if removed, err = dynamoHashes(raw); err != nil {
			return tag, nil, nil, err
		}
		return tag, nil, removed, optString("medium")
	case "AllBlocksCleared":
		return tag, nil, nil, nil
	}
	return tag, nil, nil, fmt.Errorf("unknown variant %q, expected one of BlockStored, BlockRemoved, AllBlocksCleared", tag)
}

// message handles one [topic, seq, payload] message from worker's socket.
func (x *dynamoIndex) message(worker int, frames [][]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(frames) != 3 || len(frames[1]) != 8 {
		x.errs = append(x.errs, fmt.Errorf("message of %d parts", len(frames)))
		return
	}
	var batch []any
	if err := msgpack.Unmarshal(frames[2], &batch); err != nil || len(batch) != 3 {
		x.errs = append(x.errs, fmt.Errorf("batch: want the tuple (f64, Vec<RawKvEvent>, Option<i32>): %d elements, %v", len(batch), err))
		return
	}
	if _, ok := batch[0].(float64); !ok {
		if _, ok := asInt64Bits(batch[0]); !ok {
			x.errs = append(x.errs, fmt.Errorf("batch ts: %T", batch[0]))
			return
		}
	}
	rawEvents, ok := batch[1].([]any)
	if !ok {
		x.errs = append(x.errs, fmt.Errorf("batch events: %T", batch[1]))
		return
	}
	if batch[2] != nil {
		r, ok := asUint(batch[2], math.MaxInt32)
		if !ok {
			x.errs = append(x.errs, fmt.Errorf("data_parallel_rank: %v", batch[2]))
			return
		}
		if x.ranks[worker] == nil {
			x.ranks[worker] = map[int]bool{}
		}
		x.ranks[worker][int(r)] = true
	}
	// The whole batch decodes, or none of it is applied.
	type decoded struct {
		tag     string
		st      *dynamoStored
		removed []uint64
	}
	var evs []decoded
	for _, raw := range rawEvents {
		tag, st, removed, err := dynamoEvent(raw)
		if err != nil {
			x.errs = append(x.errs, fmt.Errorf("%s: %w", tag, err))
			return
		}
		evs = append(evs, decoded{tag, st, removed})
	}
	x.numBatches++
	if x.lookup[worker] == nil {
		x.lookup[worker] = map[uint64]*dynamoNode{}
	}
	for _, ev := range evs {
		switch ev.tag {
		case "BlockStored":
			x.store(worker, ev.st)
		case "BlockRemoved":
			for _, h := range ev.removed {
				if n := x.lookup[worker][h]; n != nil {
					delete(n.workers, worker)
					delete(x.lookup[worker], h)
				}
			}
		case "AllBlocksCleared":
			for h, n := range x.lookup[worker] {
				delete(n.workers, worker)
				delete(x.lookup[worker], h)
			}
		}
	}
}

func (x *dynamoIndex) store(worker int, st *dynamoStored) {
	seen := map[uint64]bool{}
	if st.parent != nil {
		seen[*st.parent] = true
	}
	for _, h := range st.hashes {
		if seen[h] {
			x.dropped++ // a self-referencing block: convert_event drops the event
			return
		}
		seen[h] = true
	}
	node := x.root
	if st.parent != nil {
		if node = x.lookup[worker][*st.parent]; node == nil {
			x.dropped++ // ParentBlockNotFound
			return
		}
	}
	for i, h := range st.hashes {
		lo, hi := i*st.blockSize, (i+1)*st.blockSize
		if st.blockSize != x.kvBlockSize || hi > len(st.tokens) {
			x.dropped++ // create_stored_blocks stops at a block of another size
			return
		}
		local := localHash(st.tokens[lo:hi])
		child := node.children[local]
		if child == nil {
			child = &dynamoNode{children: map[uint64]*dynamoNode{}, workers: map[int]bool{}}
			node.children[local] = child
		}
		child.workers[worker] = true
		x.lookup[worker][h] = child
		node = child
	}
}

// overlap is find_matches: per worker, how many of the prompt's leading
// blocks the tree holds for it.
func (x *dynamoIndex) overlap(prompt []uint32) map[int]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	scores := map[int]int{}
	node, live := x.root, map[int]bool{}
	for w := range x.lookup {
		live[w] = true
	}
	for i := 0; i+x.kvBlockSize <= len(prompt) && len(live) > 0; i += x.kvBlockSize {
		if node = node.children[localHash(prompt[i:i+x.kvBlockSize])]; node == nil {
			break
		}
		for w := range live {
			if !node.workers[w] {
				delete(live, w)
				continue
			}
			scores[w]++
		}
	}
	return scores
}

// TestKVEventsDynamoIndexer: a Dynamo-style indexer subscribed to two
// engines' events with vLLM's defaults (topic "", the map layout)
// decodes every batch with Dynamo's struct rules, drops none for an
// unknown parent, and its overlap of each prompt with each worker is the
// longest prefix cached there.
func TestKVEventsDynamoIndexer(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	x := newDynamoIndex(16)
	var engines []string
	for i := range 2 {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		kv := "ipc://" + filepath.Join(dir, fmt.Sprintf("kv-%d.sock", i))
		cfg := fmt.Sprintf(`{"enable_kv_cache_events": true, "endpoint": %q}`, kv)
		startProc(t, append([]string{"engine", "--model", "dummy", "--listen", ep, "--kv-events-config", cfg, "--data-parallel-rank", fmt.Sprint(i),
			"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--threads", "1"}, hb...)...)
		engines = append(engines, ep)
		sub, err := zmq.DialSub(kv, []string{""})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		go func() {
			for frames := range sub.Recv() {
				x.message(i, frames)
			}
		}()
	}
	fe := startProc(t, append([]string{"frontend", "--engines", strings.Join(engines, ","), "--port", fmt.Sprint(port)}, hb...)...)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)
	time.Sleep(500 * time.Millisecond) // ZMQ's late joiner

	tokens := func(seed, n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			out[i] = uint32(3 + (seed*41+i*13)%240)
		}
		return out
	}
	p1 := tokens(1, 80)                        // 5 blocks, to engine 0
	p2 := append(p1[:32:32], tokens(2, 48)...) // shares 2 blocks with p1, to engine 1
	p3 := append(p1[:48:48], tokens(3, 40)...) // shares 3 blocks with p1, sent nowhere
	for rank, p := range [][]uint32{p1, p2} {
		body := map[string]any{"model": "dummy", "prompt": p, "max_tokens": 1}
		if code, resp := postJSON(t, base+"/v1/completions", body, map[string]string{"X-data-parallel-rank": fmt.Sprint(rank)}); code != http.StatusOK {
			t.Fatalf("completion on engine %d: %d %v", rank, code, resp)
		}
	}
	want := [3]map[int]int{{0: 5, 1: 2}, {0: 2, 1: 5}, {0: 3, 1: 2}}
	var got [3]map[int]int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got = [3]map[int]int{x.overlap(p1), x.overlap(p2), x.overlap(p3)}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("overlap blocks (p1, p2, p3) by worker: got %v, want %v", got, want)
	}
	if len(x.errs) != 0 || x.dropped != 0 || x.numBatches == 0 {
		t.Errorf("%d batches applied; decode errors %v; %d events dropped", x.numBatches, x.errs, x.dropped)
	}
	if fmt.Sprint(x.ranks) != "map[0:map[0:true] 1:map[1:true]]" {
		t.Errorf("data_parallel_rank by worker: %v", x.ranks)
	}
}
