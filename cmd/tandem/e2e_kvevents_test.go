package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/wire"
)

// consumed is one line of scripts/kvevents/consume.py's output.
type consumed struct {
	Source  string     `json:"source"`
	Topic   string     `json:"topic"`
	Seq     uint64     `json:"seq"`
	Payload *batchJSON `json:"payload"`
	Error   string     `json:"error"`
}

// batchJSON is a KVEventBatch as consume.py prints what msgspec decoded.
type batchJSON struct {
	TS     float64       `json:"ts"`
	DPRank *int          `json:"data_parallel_rank"`
	Events []kvEventJSON `json:"events"`
}

// kvEventJSON is one KV event as consume.py prints it.
type kvEventJSON struct {
	Type            string   `json:"type"`
	BlockHashes     []uint64 `json:"block_hashes"`
	ParentBlockHash *uint64  `json:"parent_block_hash"`
	TokenIDs        []int32  `json:"token_ids"`
	BlockSize       int      `json:"block_size"`
	Medium          *string  `json:"medium"`
	LoraName        *string  `json:"lora_name"`
	LoraID          *int     `json:"lora_id"`
	SessionID       *string  `json:"session_id"`
}

// consumer is a running consume.py.
type consumer struct {
	cmd    *exec.Cmd
	lines  chan consumed
	stderr *strings.Builder
}

// startConsumer runs consume.py with args and waits until it subscribed.
func startConsumer(t *testing.T, args ...string) *consumer {
	t.Helper()
	py, err := filepath.Abs("../../.cache/kvevents-venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Skip("pyzmq/msgspec venv missing: run scripts/kvevents/setup.sh")
	}
	c := &consumer{cmd: exec.Command(py, append([]string{"../../scripts/kvevents/consume.py"}, args...)...),
		lines: make(chan consumed, 4096), stderr: &strings.Builder{}}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l consumed
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("consumer printed %q: %v", sc.Text(), err)
				continue
			}
			c.lines <- l
		}
	}()
	if first := <-c.lines; first.Source != "_connected" {
		t.Fatalf("consumer started with %+v; stderr:\n%s", first, c.stderr.String())
	}
	return c
}

// wait returns every line the consumer printed until it exited.
func (c *consumer) wait(t *testing.T) []consumed {
	t.Helper()
	var got []consumed
	for l := range c.lines {
		got = append(got, l)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("consumer: %v\n%s", err, c.stderr.String())
	}
	return got
}

// chainIndex is what a consumer that needs each block's parent (llm-d's
// indexer, Dynamo's radix tree) makes of the events: a block whose parent
// it does not know is dropped. It also recomputes every hash from the
// tokens of its chain (wire.BlockHashes, the documented chain).
type chainIndex struct {
	tokens   map[uint64][]int32 // hash → every token from the chain's root to the block's end
	orphans  int                // BlockStored events dropped for an unknown parent
	mismatch []string
}

func newChainIndex() *chainIndex { return &chainIndex{tokens: map[uint64][]int32{}} }

func (x *chainIndex) apply(ev kvEventJSON) {
	switch ev.Type {
	case "BlockStored":
		var prefix []int32
		if ev.ParentBlockHash != nil {
			p, ok := x.tokens[*ev.ParentBlockHash]
			if !ok {
				x.orphans++
				return
			}
			prefix = p
		}
		for i, h := range ev.BlockHashes {
			chain := append(slices.Clone(prefix), ev.TokenIDs[i*ev.BlockSize:(i+1)*ev.BlockSize]...)
			want := wire.BlockHashes(nil, chain, ev.BlockSize, "")
			if want[len(want)-1] != h {
				x.mismatch = append(x.mismatch, fmt.Sprintf("%x (recomputed %x)", h, want[len(want)-1]))
			}
			x.tokens[h], prefix = chain, chain
		}
	case "BlockRemoved":
		for _, h := range ev.BlockHashes {
			delete(x.tokens, h)
		}
	case "AllBlocksCleared":
		clear(x.tokens)
	}
}

// chatTurn runs one turn of a conversation on the frontend at base.
func chatTurn(t *testing.T, base, session string, messages []map[string]any) {
	t.Helper()
	body := map[string]any{"model": "dummy", "messages": messages, "max_tokens": 3}
	if code, resp := postJSON(t, base+"/v1/chat/completions", body, map[string]string{"X-Session-ID": session}); code != http.StatusOK {
		t.Fatalf("chat: %d %v", code, resp)
	}
}

// kvConversation runs turns of one session, each turn carrying the ones before.
func kvConversation(t *testing.T, base, session, system string, turns ...string) {
	t.Helper()
	msgs := []map[string]any{{"role": "system", "content": system}}
	for _, u := range turns {
		msgs = append(msgs, map[string]any{"role": "user", "content": u})
		chatTurn(t, base, session, msgs)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "noted."})
	}
}

// startKVEngine runs an engine publishing with --kv-events-config cfg
// (ENDPOINT and REPLAY replaced by IPC endpoints) and a frontend on it.
func startKVEngine(t *testing.T, cfg, podID string) (base, events, replay string) {
	t.Helper()
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine-0.sock")
	events, replay = "ipc://"+filepath.Join(dir, "kv.sock"), "ipc://"+filepath.Join(dir, "kv-replay.sock")
	cfg = strings.NewReplacer("ENDPOINT", events, "REPLAY", replay).Replace(cfg)
	port := freePort(t)
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	startProc(t, append([]string{"engine", "--model", "dummy", "--listen", ep, "--kv-events-config", cfg, "--kv-events-pod-id", podID,
		"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--threads", "1"}, hb...)...)
	fe := startProc(t, append([]string{"frontend", "--engines", ep, "--port", fmt.Sprint(port)}, hb...)...)
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)
	return base, events, replay
}

const system = "You are a careful assistant. Answer briefly, cite the rivers, stones and bridges you know of, and never invent a sea."

// TestKVEventsExternalConsumer: a subscriber built from vLLM 0.33.0's
// struct definitions (msgspec), subscribed to everything (topic ""),
// decodes every message an engine publishes during a multi-turn run: all
// under the llm-d topic the config asked for, numbered without a gap, and
// the block hashes chain and recompute from the token ids.
func TestKVEventsExternalConsumer(t *testing.T) {
	base, events, _ := startKVEngine(t, `{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "ENDPOINT", "topic": "kv@{pod}@{model}"}`, "engine-a")
	c := startConsumer(t, events, "--seconds", "6")
	time.Sleep(500 * time.Millisecond) // ZMQ's late joiner: let the subscription reach the engine
	kvConversation(t, base, "py-sess", system, "tell me about rivers", "and about stones", "and bridges, at last")
	got := c.wait(t)

	x := newChainIndex()
	var numStored int
	for i, l := range got {
		switch {
		case l.Error != "":
			t.Errorf("message %d (seq %d) does not decode with vLLM's structs: %s", i, l.Seq, l.Error)
			continue
		case l.Topic != "kv@engine-a@dummy":
			t.Errorf("message %d: topic %q", i, l.Topic)
		case l.Seq != got[0].Seq+uint64(i):
			t.Errorf("message %d: seq %d after %d", i, l.Seq, got[0].Seq)
		case l.Payload.DPRank == nil || *l.Payload.DPRank != 0:
			t.Errorf("message %d: data_parallel_rank %v", i, l.Payload.DPRank)
		}
		for _, ev := range l.Payload.Events {
			if ev.Type == "BlockStored" {
				numStored++
				if ev.SessionID == nil || *ev.SessionID != "py-sess" || ev.Medium == nil || *ev.Medium != "GPU" {
					t.Errorf("BlockStored session_id %v, medium %v", ev.SessionID, ev.Medium)
				}
			}
			x.apply(ev)
		}
	}
	if numStored < 3 {
		t.Fatalf("%d BlockStored events in %d messages, want one a turn at least", numStored, len(got))
	}
	if got[0].Seq != 0 || x.orphans != 0 || len(x.mismatch) != 0 {
		t.Errorf("first seq %d; %d blocks with an unknown parent; hashes that do not recompute: %v", got[0].Seq, x.orphans, x.mismatch)
	}
}

// TestKVEventsLateSubscriber: subscribers that join after a shared system
// prompt was cached index the later conversations completely, one from a
// snapshot of the cache, one from vLLM's replay; one that only listens
// drops the later conversations' first blocks (their parents are the
// system prompt's).
func TestKVEventsLateSubscriber(t *testing.T) {
	base, events, replay := startKVEngine(t, `{"enable_kv_cache_events": true, "endpoint": "ENDPOINT", "replay_endpoint": "REPLAY", "buffer_steps": 1000}`, "engine-b")
	kvConversation(t, base, "first", system, "tell me about rivers")
	snap := startConsumer(t, events, "--replay", replay, "--snapshot", "--seconds", "6")
	rep := startConsumer(t, events, "--replay", replay, "--from", "0", "--seconds", "6")
	live := startConsumer(t, events, "--seconds", "6")
	time.Sleep(500 * time.Millisecond)
	kvConversation(t, base, "second", system, "what of stones?")
	kvConversation(t, base, "third", system, "and of bridges?")

	index := func(name string, lines []consumed) *chainIndex {
		x := newChainIndex()
		from, seen := uint64(0), map[uint64]bool{}
		for _, l := range lines {
			if l.Error != "" {
				t.Errorf("%s: %s message does not decode: %s", name, l.Source, l.Error)
				continue
			}
			if l.Payload == nil {
				continue // the end marker
			}
			switch l.Source {
			case "snapshot":
				from = l.Seq // live batches from this number on come after it
			case "live", "replay":
				if l.Seq < from || seen[l.Seq] {
					continue // in the snapshot already, or replayed and received live
				}
				seen[l.Seq] = true
			}
			for _, ev := range l.Payload.Events {
				x.apply(ev)
			}
		}
		if len(x.mismatch) != 0 {
			t.Errorf("%s: hashes that do not recompute: %v", name, x.mismatch)
		}
		return x
	}
	s, r, l := index("snapshot", snap.wait(t)), index("replay", rep.wait(t)), index("live", live.wait(t))
	if s.orphans != 0 || r.orphans != 0 {
		t.Errorf("blocks with an unknown parent: %d after a snapshot, %d after a replay", s.orphans, r.orphans)
	}
	if l.orphans == 0 {
		t.Error("a subscriber that only listens knew every parent: the test does not reproduce a late join")
	}
	if len(s.tokens) != len(r.tokens) || len(s.tokens) <= len(l.tokens) {
		t.Errorf("blocks indexed: %d from a snapshot, %d from a replay, %d listening only", len(s.tokens), len(r.tokens), len(l.tokens))
	}
}

// freePortPair finds p such that p and p+1 are free on 127.0.0.1.
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 20 {
		p := freePort(t)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no two consecutive free ports")
	return 0
}

// TestServeKVEvents: tandem serve gives each engine its own endpoint,
// offset by its rank from the --kv-events-config base, and its own topic;
// a vLLM-struct subscriber on each sees that engine's events only.
func TestServeKVEvents(t *testing.T) {
	kv, port := freePortPair(t), freePort(t)
	cfg := fmt.Sprintf(`{"enable_kv_cache_events": true, "endpoint": "tcp://127.0.0.1:%d", "topic": "kv@{pod}-{rank}@{model}"}`, kv)
	p := startProc(t, "serve", "--model", "dummy", "--port", fmt.Sprint(port), "--data-parallel-size", "2", "--threads", "2",
		"--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--kv-events-config", cfg, "--kv-events-pod-id", "box")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	var consumers []*consumer
	for rank := range 2 {
		consumers = append(consumers, startConsumer(t, fmt.Sprintf("tcp://127.0.0.1:%d", kv+rank), "--seconds", "4"))
	}
	time.Sleep(500 * time.Millisecond)
	for rank := range 2 {
		body := map[string]any{"model": "dummy", "prompt": strings.Repeat(fmt.Sprint("engine ", rank, " "), 20), "max_tokens": 2}
		if code, resp := postJSON(t, base+"/v1/completions", body, map[string]string{"X-data-parallel-rank": fmt.Sprint(rank)}); code != http.StatusOK {
			t.Fatalf("completion on engine %d: %d %v", rank, code, resp)
		}
	}
	for rank, c := range consumers {
		got := c.wait(t)
		stored := 0
		for _, l := range got {
			if l.Error != "" {
				t.Errorf("engine %d: message does not decode: %s", rank, l.Error)
				continue
			}
			if want := fmt.Sprintf("kv@box-%d@dummy", rank); l.Topic != want || l.Payload.DPRank == nil || *l.Payload.DPRank != rank {
				t.Errorf("engine %d: topic %q, data_parallel_rank %v; want %q, %d", rank, l.Topic, l.Payload.DPRank, want, rank)
			}
			for _, ev := range l.Payload.Events {
				if ev.Type == "BlockStored" {
					stored++
				}
			}
		}
		if stored == 0 {
			t.Errorf("engine %d: no BlockStored in %d messages", rank, len(got))
		}
	}
}

// TestPrefixRoutingFromKVEvents: Tandem's own router is a consumer of the
// new events too. A prompt sent through one frontend is cached on some
// engine; its continuation, through the other frontend (which never routed
// it, so only the engines' KV events can tell it), goes to that engine and
// hits the cache, for every one of several prompts.
func TestPrefixRoutingFromKVEvents(t *testing.T) {
	s := startScaleout(t, 2, 2, "prefix")
	for i := range 6 {
		prefix := strings.Repeat(fmt.Sprintf("document %d says rivers run to the sea. ", i), 6)
		for j, fe := range s.frontends {
			body := map[string]any{"model": "dummy", "prompt": prefix + fmt.Sprint("question ", j), "max_tokens": 1}
			code, resp := postJSON(t, fe+"/v1/completions", body, nil)
			if code != http.StatusOK {
				t.Fatalf("prompt %d via frontend %d: %d %v", i, j, code, resp)
			}
			usage, _ := resp["usage"].(map[string]any)
			details, _ := usage["prompt_tokens_details"].(map[string]any)
			cached, _ := details["cached_tokens"].(float64)
			if j == 1 && cached < 128 {
				t.Errorf("prompt %d: the continuation through the other frontend had %v cached tokens, want the prefix's", i, cached)
			}
			time.Sleep(100 * time.Millisecond) // the batch reaches the other frontend
		}
	}
}

// TestLateFrontendRoutesCachedPrefixes: a frontend that starts after the
// engines cached prefixes (scale-out) loads them from each engine's
// snapshot, so it sends every continuation to the engine that holds its
// prefix, as a frontend that was there from the start does.
func TestLateFrontendRoutesCachedPrefixes(t *testing.T) {
	dir := t.TempDir()
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	var eps []string
	for i := range 2 {
		sock := func(name string) string { return "ipc://" + filepath.Join(dir, fmt.Sprintf("%s-%d.sock", name, i)) }
		cfg := fmt.Sprintf(`{"enable_kv_cache_events": true, "endpoint": %q, "replay_endpoint": %q}`, sock("events"), sock("replay"))
		startProc(t, append([]string{"engine", "--model", "dummy", "--listen", sock("engine"), "--kv-events-config", cfg,
			"--data-parallel-rank", fmt.Sprint(i), "--max-model-len", "2048", "--kv-cache-memory", "64Mi", "--threads", "1"}, hb...)...)
		eps = append(eps, sock("engine"))
	}
	startFrontend := func() string {
		port := freePort(t)
		fe := startProc(t, append([]string{"frontend", "--engines", strings.Join(eps, ","), "--port", fmt.Sprint(port), "--routing", "prefix"}, hb...)...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHealthy(t, base, fe)
		(&scaleout{}).waitEngines(t, base, 2)
		return base
	}
	prefix := func(i int) string {
		return strings.Repeat(fmt.Sprintf("document %d says rivers run to the sea. ", i), 6)
	}
	cached := func(base, prompt string, header map[string]string) float64 {
		body := map[string]any{"model": "dummy", "prompt": prompt, "max_tokens": 1}
		code, resp := postJSON(t, base+"/v1/completions", body, header)
		if code != http.StatusOK {
			t.Fatalf("completion: %d %v", code, resp)
		}
		usage, _ := resp["usage"].(map[string]any)
		details, _ := usage["prompt_tokens_details"].(map[string]any)
		n, _ := details["cached_tokens"].(float64)
		return n
	}
	first := startFrontend()
	time.Sleep(500 * time.Millisecond) // routed to once synced
	const numPrefixes = 8
	for i := range numPrefixes {
		// Pinned alternately, so no hash of the prompt tells where each is.
		cached(first, prefix(i)+"question 0", map[string]string{"X-data-parallel-rank": fmt.Sprint(i % 2)})
	}
	late := startFrontend()
	time.Sleep(500 * time.Millisecond)
	for i := range numPrefixes {
		if n := cached(late, prefix(i)+"question 1", nil); n < 128 {
			t.Errorf("prefix %d: the late frontend's continuation had %v cached tokens, want the prefix's", i, n)
		}
	}
}

// TestKVEventsNameTheLoRA serves the dummy model with a LoRA module and
// reads its KV events with vLLM's own struct definitions: the blocks a
// request of the module stores carry lora_name (the module's name) and
// lora_id (its lora_int_id), as vLLM's do, so that a consumer keying
// blocks by adapter (llm-d's indexer) keeps them apart from the base
// model's, which carry neither.
func TestKVEventsNameTheLoRA(t *testing.T) {
	adapter := filepath.Join(t.TempDir(), "alpha.gguf")
	writeDummyAdapter(t, adapter, 1)
	kv, port := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`{"enable_kv_cache_events": true, "endpoint": "tcp://127.0.0.1:%d"}`, kv)
	p := startProc(t, "serve", "--model", "dummy", "--port", fmt.Sprint(port), "--threads", "1", "--max-model-len", "1024",
		"--kv-cache-memory", "16Mi", "--kv-events-config", cfg, "--enable-lora", "--lora-modules", "alpha="+adapter, "--max-lora-rank", "8")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	c := startConsumer(t, fmt.Sprintf("tcp://127.0.0.1:%d", kv), "--seconds", "4")
	time.Sleep(500 * time.Millisecond)
	for _, m := range []string{"alpha", "dummy"} {
		body := map[string]any{"model": m, "prompt": strings.Repeat(m+" says hello. ", 12), "max_tokens": 2}
		if code, resp := postJSON(t, base+"/v1/completions", body, nil); code != http.StatusOK {
			t.Fatalf("%s: %d %v", m, code, resp)
		}
	}
	named, plain := 0, 0
	for _, l := range c.wait(t) {
		if l.Error != "" {
			t.Fatalf("a message vLLM's structs do not decode: %s", l.Error)
		}
		for _, ev := range l.Payload.Events {
			if ev.Type != "BlockStored" {
				continue
			}
			switch {
			case ev.LoraName == nil && ev.LoraID == nil:
				plain++
			case ev.LoraName != nil && *ev.LoraName == "alpha" && ev.LoraID != nil && *ev.LoraID == 1:
				named++
			default:
				t.Errorf("BlockStored names lora_name %v, lora_id %v", ev.LoraName, ev.LoraID)
			}
		}
	}
	if named == 0 || plain == 0 {
		t.Errorf("%d BlockStored named alpha, %d none; want both", named, plain)
	}
}
