package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tandem-llm/tandem/wire/zmq"
)

// An llm-d-style KV indexer, written from llm-d-kv-cache's published
// source (pkg/kvevents: the vLLM adapter's msgpack structs and topic
// parsing, the pool's event handling, the default topic filter "kv@"); none
// of Tandem's decoding is used. Its structs are vmihailenco/msgpack
// `,array` structs, which decode an array only when its length is exactly
// the number of fields: the array layout, as llm-d reads it.

type llmdBatch struct {
	_                struct{} `msgpack:",array"`
	TS               float64
	Events           []msgpack.RawMessage
	DataParallelRank *int `msgpack:",omitempty"`
}

type llmdBlockStored struct {
	_               struct{} `msgpack:",array"`
	Tag             string
	BlockHashes     []any
	ParentBlockHash any
	TokenIds        []uint32
	BlockSize       int
	LoraID          *int    `msgpack:",omitempty"`
	Medium          *string `msgpack:",omitempty"`
	LoraName        *string `msgpack:",omitempty"`
	ExtraKeys       []any   `msgpack:",omitempty"`
}

type llmdBlockRemoved struct {
	_           struct{} `msgpack:",array"`
	Tag         string
	BlockHashes []any
	Medium      *string `msgpack:",omitempty"`
}

// llmdHash is the adapter's getHashAsUint64.
func llmdHash(raw any) (uint64, error) {
	switch v := raw.(type) {
	case uint64:
		return v, nil
	case int64:
		return uint64(v), nil
	case []byte:
		var buf [8]byte
		copy(buf[max(0, 8-len(v)):], v[max(0, len(v)-8):])
		return binary.BigEndian.Uint64(buf[:]), nil
	}
	return 0, fmt.Errorf("unsupported hash type %T", raw)
}

// llmdTopic is parseVLLMTopic: kv@<pod-id>@<model>, else the topic as pod.
func llmdTopic(topic string) (pod, model string) {
	if p := strings.Split(topic, "@"); len(p) == 3 {
		return p[1], p[2]
	}
	return topic, ""
}

// llmdIndex keeps, per pod, the request keys it computes itself from the
// events' tokens (chained over the parent's request key and the model, as
// llm-d's token processor does; FNV-64a here) and the engine-key →
// request-key map it needs for parents and removals.
type llmdIndex struct {
	mu        sync.Mutex
	blockSize int
	engine    map[string]map[uint64]uint64   // pod → engine key → request key
	keys      map[string]map[uint64]struct{} // pod → request keys
	models    map[string]string              // pod → model
	dropped   int                            // BlockStored with an unknown parent
	errs      []error
}

func newLLMDIndex(blockSize int) *llmdIndex {
	return &llmdIndex{blockSize: blockSize, engine: map[string]map[uint64]uint64{}, keys: map[string]map[uint64]struct{}{}, models: map[string]string{}}
}

func requestKeys(parent uint64, model string, tokens []uint32, blockSize int) []uint64 {
	var out []uint64
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		h := fnv.New64a()
		_ = binary.Write(h, binary.LittleEndian, parent)
		h.Write([]byte(model))
		_ = binary.Write(h, binary.LittleEndian, tokens[i:i+blockSize])
		parent = h.Sum64()
		out = append(out, parent)
	}
	return out
}

// message handles one [topic, seq, payload] message, as the pool does.
func (x *llmdIndex) message(frames [][]byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(frames) != 3 || len(frames[1]) != 8 {
		x.errs = append(x.errs, fmt.Errorf("message of %d parts", len(frames)))
		return
	}
	pod, model := llmdTopic(string(frames[0]))
	var b llmdBatch
	if err := msgpack.Unmarshal(frames[2], &b); err != nil {
		x.errs = append(x.errs, fmt.Errorf("batch: %w", err))
		return
	}
	x.models[pod] = model
	if x.engine[pod] == nil {
		x.engine[pod], x.keys[pod] = map[uint64]uint64{}, map[uint64]struct{}{}
	}
	for _, raw := range b.Events {
		var tagged []any
		if err := msgpack.Unmarshal(raw, &tagged); err != nil || len(tagged) == 0 {
			x.errs = append(x.errs, fmt.Errorf("tagged union: %v", err))
			continue
		}
		switch tagged[0] {
		case "BlockStored":
			var ev llmdBlockStored
			if err := msgpack.Unmarshal(raw, &ev); err != nil {
				x.errs = append(x.errs, fmt.Errorf("BlockStored: %w", err))
				continue
			}
			var parentKey uint64
			if ev.ParentBlockHash != nil {
				ph, err := llmdHash(ev.ParentBlockHash)
				if err != nil {
					x.errs = append(x.errs, err)
					continue
				}
				k, ok := x.engine[pod][ph]
				if !ok {
					x.dropped++
					continue
				}
				parentKey = k
			}
			keys := requestKeys(parentKey, model, ev.TokenIds, x.blockSize)
			for i, raw := range ev.BlockHashes {
				h, err := llmdHash(raw)
				if err != nil || i >= len(keys) {
					x.errs = append(x.errs, fmt.Errorf("block hash %d: %v", i, err))
					break
				}
				x.engine[pod][h] = keys[i]
				x.keys[pod][keys[i]] = struct{}{}
			}
		case "BlockRemoved":
			var ev llmdBlockRemoved
			if err := msgpack.Unmarshal(raw, &ev); err != nil {
				x.errs = append(x.errs, fmt.Errorf("BlockRemoved: %w", err))
				continue
			}
			for _, raw := range ev.BlockHashes {
				if h, err := llmdHash(raw); err == nil {
					delete(x.keys[pod], x.engine[pod][h])
					delete(x.engine[pod], h)
				}
			}
		case "AllBlocksCleared":
		default:
			x.errs = append(x.errs, fmt.Errorf("unknown vLLM event tag %v", tagged[0]))
		}
	}
}

// score is the longest consecutive prefix of the prompt's blocks that pod
// holds, in blocks (every block on the GPU tier, weight 1).
func (x *llmdIndex) score(pod, model string, prompt []uint32) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, k := range requestKeys(0, model, prompt, x.blockSize) {
		if _, ok := x.keys[pod][k]; !ok {
			break
		}
		n++
	}
	return n
}

// TestKVEventsLLMDIndexer: with llm-d's default topic filter "kv@", an
// llm-d-style indexer subscribed to two engines (topic
// kv@{pod}@{model}, the array layout) keeps them apart, and its score of
// each prompt on each engine is the longest prefix cached there.
func TestKVEventsLLMDIndexer(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	x := newLLMDIndex(16)
	var engines []string
	for i := range 2 {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("engine-%d.sock", i))
		kv := "ipc://" + filepath.Join(dir, fmt.Sprintf("kv-%d.sock", i))
		cfg := fmt.Sprintf(`{"enable_kv_cache_events": true, "endpoint": %q, "topic": "kv@{pod}@{model}", "layout": "array"}`, kv)
		startProc(t, append([]string{"engine", "--model", "dummy", "--listen", ep, "--kv-events-config", cfg,
			"--kv-events-pod-id", fmt.Sprintf("engine-%d", i), "--data-parallel-rank", fmt.Sprint(i),
			"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--threads", "1"}, hb...)...)
		engines = append(engines, ep)
		sub, err := zmq.DialSub(kv, []string{"kv@"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		go func() {
			for frames := range sub.Recv() {
				x.message(frames)
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
			out[i] = uint32(3 + (seed*37+i*11)%240)
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
	want := map[string][3]int{"engine-0": {5, 2, 3}, "engine-1": {2, 5, 2}}
	got := map[string][3]int{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for pod := range want {
			got[pod] = [3]int{x.score(pod, "dummy", p1), x.score(pod, "dummy", p2), x.score(pod, "dummy", p3)}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scores (p1, p2, p3) per pod: got %v, want %v", got, want)
	}
	if len(x.models) != 2 || x.models["engine-0"] != "dummy" || x.models["engine-1"] != "dummy" {
		t.Errorf("pods and models from the topics: %v", x.models)
	}
	if len(x.errs) != 0 || x.dropped != 0 {
		t.Errorf("decode errors %v; %d events dropped for an unknown parent", x.errs, x.dropped)
	}
}
