package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tandem-llm/tandem/enginecore/lora"
	"github.com/tandem-llm/tandem/enginecore/model"
)

// writeDummyAdapter writes a random LoRA adapter for the dummy model:
// every layer matrix, the LM head and the token embedding.
func writeDummyAdapter(t *testing.T, path string, seed uint64) {
	t.Helper()
	cfg, _ := model.Dummy(0)
	shapes := lora.LayerShapes(cfg)
	shapes["output.weight"], shapes["token_embd.weight"] = [2]int{cfg.Dim, cfg.VocabSize}, [2]int{cfg.Dim, cfg.VocabSize}
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
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "4096",
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

	// vllm:lora_requests_info, read as the Gateway API Inference
	// Extension's endpoint picker (llm-d's) reads it: while a request of
	// alpha streams, alpha is a running adapter; once it ends, none is.
	// The stream is not read: its 4,000 tokens outgrow the socket's
	// buffers, so the request stays running however fast the dummy is.
	body := `{"model":"alpha","prompt":"Once","max_tokens":4000,"ignore_eos":true,"stream":true}`
	stream, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := stream.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	active, waiting, maxActive := gieLoRA(scrapeWith(t, http.DefaultClient, base))
	stream.Body.Close()
	if _, ok := active["alpha"]; !ok || len(active) != 1 || len(waiting) != 0 || maxActive != 8 {
		t.Errorf("while alpha streams: active %v, waiting %v, max %d; want alpha running and max_lora 8", active, waiting, maxActive)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		active, waiting, _ = gieLoRA(scrapeWith(t, http.DefaultClient, base))
		if active == nil && waiting == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if active != nil || waiting != nil {
		t.Errorf("after the stream was closed: active %v, waiting %v", active, waiting)
	}
}

// gieLoRA reads vllm:lora_requests_info as the Gateway API Inference
// Extension's endpoint picker does (written from its published source,
// pkg/epp/backend/metrics/metrics.go: getLatestLoraMetric and
// promToPodMetrics): the series with the largest value among those whose
// running or waiting label is not empty, its lists split on commas and
// max_lora read with strconv.Atoi. nil maps: no such series.
func gieLoRA(fams map[string]*dto.MetricFamily) (active, waiting map[string]int, maxActive int) {
	var latest *dto.Metric
	latestTS := 0.0
	for _, m := range fams["vllm:lora_requests_info"].GetMetric() {
		running, wait := "", ""
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "running_lora_adapters":
				running = lp.GetValue()
			case "waiting_lora_adapters":
				wait = lp.GetValue()
			}
		}
		if running == "" && wait == "" {
			continue
		}
		if m.GetGauge().GetValue() > latestTS {
			latestTS, latest = m.GetGauge().GetValue(), m
		}
	}
	if latest == nil {
		return nil, nil, 0
	}
	active, waiting = map[string]int{}, map[string]int{}
	for _, lp := range latest.GetLabel() {
		switch lp.GetName() {
		case "running_lora_adapters":
			if lp.GetValue() != "" {
				for _, a := range strings.Split(lp.GetValue(), ",") {
					active[a] = 0
				}
			}
		case "waiting_lora_adapters":
			if lp.GetValue() != "" {
				for _, a := range strings.Split(lp.GetValue(), ",") {
					waiting[a] = 0
				}
			}
		case "max_lora":
			maxActive, _ = strconv.Atoi(lp.GetValue())
		}
	}
	return active, waiting, maxActive
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

// TestLoRAClients runs scripts/sdktests/test_lora.py: the OpenAI Python
// SDK and LangChain's ChatOpenAI naming a LoRA module served by
// --lora-modules, and llama-server's per-request lora list through the
// SDK's extra_body, against the dummy model with a random adapter.
func TestLoRAClients(t *testing.T) {
	py := pythonWith(t, "langchain_openai", "langchain-openai")
	adapter := filepath.Join(t.TempDir(), "tuned.gguf")
	writeDummyAdapter(t, adapter, 6)
	port := freePort(t)
	p := startProc(t, "serve", "--model", "dummy", "--port", strconv.Itoa(port), "--max-model-len", "1024",
		"--kv-cache-memory", "16Mi", "--threads", "1", "--lora-modules", "tuned="+adapter, "--lora", adapter, "--lora-init-without-apply")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, p)
	runSDKScript(t, py, "test_lora.py", base, "dummy", "tuned")
}
