package main

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSlotSaveRestore is llama-server's slot save and restore on the
// default model: a slot's KV blocks go to a file and come back into
// another slot, into a restarted server, and — as tokens to recompute —
// into a server whose KV cache has another element type; erase evicts
// them; greedy output after a restore is the output before it.
func TestSlotSaveRestore(t *testing.T) {
	path := defaultModel(t)
	dir := t.TempDir()
	serve := func(extra ...string) (string, *proc) {
		port := freePort(t)
		args := append([]string{"serve", path, "--port", strconv.Itoa(port), "--max-num-seqs", "2", "--threads", "1",
			"--kv-cache-memory", "64Mi", "--slot-save-path", dir}, extra...)
		p := startProc(t, args...)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		waitHealthy(t, base, p)
		return base, p
	}
	base, first := serve()
	prompt := "Once upon a time, in a small village at the edge of a great forest, there lived an old woodcutter and his three daughters. Every morning"
	complete := func(base string, slot int) (content string, promptN, cacheN int) {
		t.Helper()
		code, body := postJSON(t, base+"/completion", map[string]any{"prompt": prompt, "n_predict": 12, "id_slot": slot, "cache_prompt": true, "temperature": 0}, nil)
		if code != http.StatusOK {
			t.Fatalf("/completion on slot %d: %d %v", slot, code, body)
		}
		tm := body["timings"].(map[string]any)
		return body["content"].(string), int(tm["prompt_n"].(float64)), int(tm["cache_n"].(float64))
	}
	action := func(base string, slot int, act string, body map[string]any) map[string]any {
		t.Helper()
		code, resp := postJSON(t, fmt.Sprintf("%s/slots/%d?action=%s", base, slot, act), body, nil)
		if code != http.StatusOK {
			t.Fatalf("%s slot %d: %d %v", act, slot, code, resp)
		}
		return resp
	}
	num := func(m map[string]any, k string) int { return int(m[k].(float64)) }

	want, n, cached := complete(base, 1)
	if cached != 0 {
		t.Fatalf("first request: %d cached tokens", cached)
	}
	saved := action(base, 1, "save", map[string]any{"filename": "slot1.bin"})
	numSaved := n + 11 // the prompt and every generated token but the last
	if num(saved, "n_saved") != numSaved || num(saved, "n_kv_blocks") != numSaved/16 || saved["filename"] != "slot1.bin" {
		t.Errorf("save: %v, want %d tokens in %d blocks", saved, numSaved, numSaved/16)
	}
	if st, err := os.Stat(filepath.Join(dir, "slot1.bin")); err != nil || st.Size() != int64(num(saved, "n_written")) {
		t.Errorf("saved file: %v %v, n_written %v", st, err, saved["n_written"])
	}

	if erased := action(base, 1, "erase", nil); num(erased, "n_erased") != numSaved {
		t.Errorf("erase: %v", erased)
	}
	if _, promptN, cacheN := complete(base, 1); cacheN != 0 || promptN != n {
		t.Errorf("after erase: %d cached, %d computed; want none cached", cacheN, promptN)
	}
	action(base, 1, "erase", nil)

	wantCached := (n - 1) / 16 * 16
	restored := action(base, 0, "restore", map[string]any{"filename": "slot1.bin"})
	if num(restored, "n_restored") != numSaved || num(restored, "n_kv_blocks") != numSaved/16 || num(restored, "n_read") != num(saved, "n_written") {
		t.Errorf("restore: %v", restored)
	}
	if got, _, cacheN := complete(base, 0); cacheN != wantCached || got != want {
		t.Errorf("after restore into slot 0: %d cached (want %d), content %q (want %q)", cacheN, wantCached, got, want)
	}

	// A chat on a slot: the chat template's prompt and the answer.
	chat := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Tell me a short story about a fox who wants to cross a wide river."}},
		"max_tokens": 16, "temperature": 0, "id_slot": 1, "timings_per_token": true}
	code, answer := postJSON(t, base+"/v1/chat/completions", chat, nil)
	if code != http.StatusOK {
		t.Fatalf("chat on slot 1: %d %v", code, answer)
	}
	chatSaved := action(base, 1, "save", map[string]any{"filename": "chat.bin"})
	if num(chatSaved, "n_kv_blocks") < 2 {
		t.Errorf("save of a chat slot: %v, want its blocks", chatSaved)
	}

	// Across a restart.
	first.signal(syscall.SIGTERM)
	select {
	case <-first.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the first server did not stop")
	}
	base, _ = serve()
	action(base, 1, "restore", map[string]any{"filename": "slot1.bin"})
	if got, _, cacheN := complete(base, 1); cacheN != wantCached || got != want {
		t.Errorf("restored after a restart: %d cached (want %d), content %q (want %q)", cacheN, wantCached, got, want)
	}
	action(base, 0, "restore", map[string]any{"filename": "chat.bin"})
	chat["id_slot"] = 0
	code, again := postJSON(t, base+"/v1/chat/completions", chat, nil)
	if code != http.StatusOK {
		t.Fatalf("chat after restoring its slot: %d %v", code, again)
	}
	if tm, _ := again["timings"].(map[string]any); tm == nil || tm["cache_n"].(float64) < 16 {
		t.Errorf("chat after restoring its slot: timings %v, want its prompt from the restored cache", again["timings"])
	}
	if again["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] != answer["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] {
		t.Errorf("chat after restoring its slot answers %v, before %v", again["choices"], answer["choices"])
	}

	// A file of tokens only, as older llama-servers wrote it (a plain
	// token list and no KV of ours), and a cache of another element type:
	// the tokens are recomputed.
	b, err := os.ReadFile(filepath.Join(dir, "slot1.bin"))
	if err != nil {
		t.Fatal(err)
	}
	legacy := binary.LittleEndian.AppendUint32(nil, 0x67677371)
	legacy = binary.LittleEndian.AppendUint32(legacy, 3)
	legacy = binary.LittleEndian.AppendUint32(legacy, uint32(numSaved))
	legacy = append(legacy, b[24:24+4*numSaved]...)
	if err := os.WriteFile(filepath.Join(dir, "legacy.bin"), legacy, 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ = serve("--kv-cache-dtype", "float16")
	for _, file := range []string{"slot1.bin", "legacy.bin"} {
		r := action(base, 0, "restore", map[string]any{"filename": file})
		if num(r, "n_restored") != numSaved || num(r, "n_kv_blocks") != 0 {
			t.Errorf("restore %s into a float16 cache: %v, want %d tokens recomputed", file, r, numSaved)
		}
		if _, _, cacheN := complete(base, 0); cacheN != wantCached {
			t.Errorf("after restoring %s by recomputing: %d cached, want %d", file, cacheN, wantCached)
		}
		action(base, 0, "erase", nil)
	}
	if code, body := postJSON(t, base+"/slots/0?action=restore", map[string]any{"filename": "missing.bin"}, nil); code != http.StatusBadRequest {
		t.Errorf("restore of a missing file: %d %v", code, body)
	}
}
