package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tandem-llm/tandem/wire"
)

// consumed is one line of scripts/kvevents/consume.py's output.
type consumed struct {
	Topic   string          `json:"topic"`
	Seq     uint64          `json:"seq"`
	Payload json.RawMessage `json:"payload"`
}

// kvEventJSON is one KV event as consume.py prints it.
type kvEventJSON struct {
	Type            string   `json:"type"`
	BlockHashes     []uint64 `json:"block_hashes"`
	ParentBlockHash *uint64  `json:"parent_block_hash"`
	TokenIDs        []int32  `json:"token_ids"`
	BlockSize       int      `json:"block_size"`
}

// TestKVEventsExternalConsumer: a Python consumer with only pyzmq and
// msgpack (scripts/kvevents/consume.py, the way vLLM/Dynamo/llm-d
// consumers decode) reads an engine's load reports, KV events and session
// reports; the block hashes it decodes are the ones the router computes
// from the token ids.
func TestKVEventsExternalConsumer(t *testing.T) {
	py, err := filepath.Abs("../../.cache/kvevents-venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Skip("pyzmq/msgpack venv missing: run scripts/kvevents/setup.sh")
	}
	dir := t.TempDir()
	ep := "ipc://" + filepath.Join(dir, "engine-0.sock")
	events := "ipc://" + filepath.Join(dir, "events-0.sock")
	port := freePort(t)
	hb := []string{"--heartbeat-interval", "200ms", "--heartbeat-timeout", "1500ms"}
	startProc(t, append([]string{"engine", "--model", "dummy", "--listen", ep, "--events", events, "--max-model-len", "1024", "--kv-cache-memory", "32Mi", "--threads", "1"}, hb...)...)
	fe := startProc(t, append([]string{"frontend", "--engines", ep, "--port", fmt.Sprint(port)}, hb...)...)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)

	cmd := exec.Command(py, "../../scripts/kvevents/consume.py", events, "--seconds", "6")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan consumed, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var c consumed
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				t.Errorf("consumer printed %q: %v", sc.Text(), err)
				continue
			}
			lines <- c
		}
	}()
	if first := <-lines; first.Topic != "_connected" {
		t.Fatalf("consumer started with %+v; stderr:\n%s", first, stderr.String())
	}
	time.Sleep(500 * time.Millisecond) // ZMQ's late joiner: let the subscription reach the engine
	for _, msg := range []string{"tell me about rivers, stones, bridges and the sea", "and about forests"} {
		body := map[string]any{"model": "dummy", "messages": []map[string]any{{"role": "user", "content": msg}}, "max_tokens": 3}
		if code, resp := postJSON(t, base+"/v1/chat/completions", body, map[string]string{"X-Session-ID": "py-sess"}); code != http.StatusOK {
			t.Fatalf("chat: %d %v", code, resp)
		}
	}
	var got []consumed
	for c := range lines {
		got = append(got, c)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("consumer: %v\n%s", err, stderr.String())
	}

	seqs := map[string][]uint64{}
	var stored []kvEventJSON
	sawSession := false
	for _, c := range got {
		seqs[c.Topic] = append(seqs[c.Topic], c.Seq)
		switch c.Topic {
		case "load":
			var l struct {
				EngineIndex    int     `json:"engine_index"`
				NumTotalBlocks int     `json:"num_total_blocks"`
				KVCacheUsage   float64 `json:"kv_cache_usage"`
			}
			if err := json.Unmarshal(c.Payload, &l); err != nil || l.NumTotalBlocks == 0 {
				t.Errorf("load report %s: %v", c.Payload, err)
			}
		case "kv":
			var b struct {
				TS     float64           `json:"ts"`
				DPRank int               `json:"dp_rank"`
				Events []json.RawMessage `json:"events"`
			}
			if err := json.Unmarshal(c.Payload, &b); err != nil || b.TS == 0 {
				t.Errorf("kv batch %s: %v", c.Payload, err)
			}
			for _, raw := range b.Events {
				var ev kvEventJSON
				if err := json.Unmarshal(raw, &ev); err != nil {
					t.Errorf("kv event %s: %v", raw, err)
				}
				if ev.Type == "BlockStored" {
					stored = append(stored, ev)
				}
			}
		case "sessions":
			var s struct {
				Added []string `json:"added"`
			}
			if err := json.Unmarshal(c.Payload, &s); err != nil {
				t.Errorf("session report %s: %v", c.Payload, err)
			}
			sawSession = sawSession || slices.Contains(s.Added, "py-sess")
		}
	}
	if n := len(seqs["load"]); n < 20 {
		t.Errorf("%d load reports in ~6 s, want about one per 100 ms", n)
	}
	for topic, s := range seqs {
		for i := 1; i < len(s); i++ {
			if s[i] != s[i-1]+1 {
				t.Errorf("topic %s: sequence %d after %d", topic, s[i], s[i-1])
			}
		}
	}
	if !sawSession {
		t.Error("no session report announced py-sess")
	}
	if len(stored) == 0 {
		t.Fatalf("no BlockStored event among %d messages", len(got))
	}
	first := stored[0]
	if first.ParentBlockHash != nil || first.BlockSize != 16 || len(first.TokenIDs) != 16*len(first.BlockHashes) {
		t.Fatalf("first BlockStored: parent %v, block_size %d, %d tokens for %d hashes", first.ParentBlockHash, first.BlockSize, len(first.TokenIDs), len(first.BlockHashes))
	}
	if diff := cmp.Diff(wire.BlockHashes(nil, first.TokenIDs, 16, ""), first.BlockHashes); diff != "" {
		t.Errorf("hashes decoded in Python vs recomputed by the router (-router +python):\n%s", diff)
	}
}
