package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// writeDummyAdapter writes a random LoRA adapter for the dummy model:
// every layer matrix, the LM head and the token embedding.
func writeDummyAdapter(t *testing.T, path string, seed uint64) {
	t.Helper()
	cfg, _ := model.Dummy(0)
	q, kv := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	shapes := map[string][2]int{"output.weight": {cfg.Dim, cfg.VocabSize}, "token_embd.weight": {cfg.Dim, cfg.VocabSize}}
	for l := range cfg.NumLayers {
		for n, s := range map[string][2]int{"attn_q": {cfg.Dim, q}, "attn_k": {cfg.Dim, kv}, "attn_v": {cfg.Dim, kv}, "attn_output": {q, cfg.Dim},
			"ffn_gate": {cfg.Dim, cfg.FFNDim}, "ffn_up": {cfg.Dim, cfg.FFNDim}, "ffn_down": {cfg.FFNDim, cfg.Dim}} {
			shapes[fmt.Sprintf("blk.%d.%s.weight", l, n)] = s
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := lora.Random(f, lora.Spec{Arch: cfg.Arch, Alpha: 16, Rank: 8, Shapes: shapes, Std: 0.05, Seed: seed}); err != nil {
		t.Fatal(err)
	}
}

// TestServeLoRA serves the dummy model with a LoRA adapter named the
// ways vLLM and llama-server name them, in real processes: a model of
// its own on /v1/models (--lora-modules), and an id on /lora-adapters
// (--lora, with --lora-init-without-apply so it applies only when
// asked). The adapter changes the greedy answer; the same file asked
// for either way gives the same answer; a second request with it hits
// its own prefix cache and the base model's answer stays the base
// model's; a second module from a file not yet loaded works beside it.
func TestServeLoRA(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
	writeDummyAdapter(t, a, 1)
	writeDummyAdapter(t, b, 2)
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "256",
		"--kv-cache-memory", "16Mi", "--threads", "1", "--enable-lora", "--lora-modules", "alpha="+a, `{"name": "beta", "path": "`+b+`"}`,
		"--lora", a, "--lora-init-without-apply", "--max-lora-rank", "8")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)

	complete := func(body map[string]any) (string, int) {
		t.Helper()
		body["prompt"], body["max_tokens"], body["temperature"] = "Once upon a time", 12, 0
		code, resp := postJSON(t, base+"/v1/completions", body, nil)
		if code != http.StatusOK {
			t.Fatalf("%v: %d %v", body, code, resp)
		}
		cached := 0
		if d, ok := resp["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any); ok {
			cached = int(d["cached_tokens"].(float64))
		}
		return resp["choices"].([]any)[0].(map[string]any)["text"].(string), cached
	}
	plain, _ := complete(map[string]any{"model": "dummy"})
	withA, _ := complete(map[string]any{"model": "alpha"})
	withB, _ := complete(map[string]any{"model": "beta"})
	if withA == plain || withB == plain || withA == withB {
		t.Fatalf("the adapters change nothing: base %q, alpha %q, beta %q", plain, withA, withB)
	}
	again, cached := complete(map[string]any{"model": "alpha"})
	if again != withA || cached == 0 {
		t.Errorf("alpha again: %q with %d cached tokens, first %q", again, cached, withA)
	}
	if got, _ := complete(map[string]any{"model": "dummy"}); got != plain {
		t.Errorf("the base model after the adapters: %q, first %q", got, plain)
	}
	// llama-server's way: the --lora file by id, at scale 1, is alpha's file.
	if got, _ := complete(map[string]any{"lora": []map[string]any{{"id": 0, "scale": 1}}}); got != withA {
		t.Errorf("lora id 0 at scale 1: %q, alpha (the same file) %q", got, withA)
	}
	if got, _ := complete(map[string]any{"lora": []map[string]any{{"id": 0, "scale": 0.4}}}); got == withA || got == plain {
		t.Errorf("lora id 0 at scale 0.4: %q, the same as at 1 or at 0", got)
	}
	code, resp := getJSON(t, base+"/v1/models")
	if code != 200 || len(resp["data"].([]any)) != 3 {
		t.Fatalf("/v1/models: %d %v", code, resp)
	}
	if card := resp["data"].([]any)[1].(map[string]any); card["id"] != "alpha" || card["parent"] != "dummy" || card["root"] != a {
		t.Errorf("alpha's card: %v", card)
	}
	if code, _ := postJSON(t, base+"/v1/completions", map[string]any{"model": "gamma", "prompt": "x"}, nil); code != http.StatusNotFound {
		t.Errorf("an unknown adapter name: %d, want 404", code)
	}
	if !strings.Contains(p.out.String(), "loaded LoRA adapter") {
		t.Error("the engine logged no adapter load")
	}
}

// TestServeLoRARefusesBadFiles: an adapter flag naming a file that is not
// a LoRA adapter (here the model itself), or an adapter of a higher rank
// than --max-lora-rank, is a clear error.
func TestServeLoRARefusesBadFiles(t *testing.T) {
	notLoRA := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(notLoRA, []byte("GGUF\x03\x00\x00\x00"+strings.Repeat("\x00", 16)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, last, took, stderr := runToExit(t, "serve", "--model", "dummy", "--port", strconv.Itoa(freePort(t)), "--threads", "1",
		"--kv-cache-memory", "16Mi", "--lora-modules", "x="+notLoRA)
	if code == 0 || !strings.Contains(stderr, "not a LoRA adapter") || took > failFastWithin {
		t.Errorf("serve with a non-adapter: exit %d after %v, last line %q", code, took, last)
	}

	a := filepath.Join(t.TempDir(), "a.gguf")
	writeDummyAdapter(t, a, 3)
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "256",
		"--kv-cache-memory", "16Mi", "--threads", "1", "--lora-modules", "a="+a, "--max-lora-rank", "4")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	code, resp := postJSON(t, base+"/v1/completions", map[string]any{"model": "a", "prompt": "x", "max_tokens": 2}, nil)
	if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(resp), "max-lora-rank") {
		t.Errorf("an adapter of rank 8 under --max-lora-rank 4: %d %v", code, resp)
	}
}
