package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeHFModel serves one model of a local fake Hugging Face hub
// ($MODEL_ENDPOINT) as llama-server's -hf and vllm serve's OWNER/REPO
// do: downloaded into the models cache ($LLAMA_CACHE), served as --model
// under the name given, chatting; then offline from the cache (-hff and
// --alias), and the start-up failures that exit at once with their cause.
func TestServeHFModel(t *testing.T) {
	model := defaultModel(t)
	const repo = "tandem-test/smollm2"
	hub := newModelHub(t, repo, "smollm2-Q4_1.gguf", model)
	cache := t.TempDir()
	t.Setenv("LLAMA_CACHE", cache)
	t.Setenv("MODEL_ENDPOINT", hub.URL)
	small := []string{"--threads", "1", "--max-model-len", "512", "--kv-cache-memory", "64Mi"}

	// serve answers as the served name, in /v1/models and in a chat
	serve := func(served string, args ...string) *proc {
		t.Helper()
		port := freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		p := startProc(t, append(append([]string{"serve", "--port", fmt.Sprint(port)}, small...), args...)...)
		waitHealthy(t, base, p)
		if _, list := getJSON(t, base+"/v1/models"); fmt.Sprint(list["data"]) == "" || !strings.Contains(fmt.Sprint(list["data"]), "id:"+served+" ") {
			t.Errorf("serve %v: /v1/models %v, want the model %q", args, list, served)
		}
		code, out := postJSON(t, base+"/v1/chat/completions", map[string]any{"model": served, "max_tokens": 4,
			"messages": []map[string]string{{"role": "user", "content": "Say hi."}}}, nil)
		if code != 200 || out["model"] != served {
			t.Errorf("serve %v: chat as %q: %d %v", args, served, code, out)
		}
		return p
	}

	p := serve(repo+":Q4_1", "-hf", repo+":Q4_1")
	if out := p.out.String(); !strings.Contains(out, "downloaded") || !strings.Contains(out, "smollm2-Q4_1.gguf") {
		t.Errorf("no download progress on serve's log:\n%s", out)
	}
	if got, _ := filepath.Glob(filepath.Join(cache, "models--tandem-test--smollm2", "snapshots", "*", "smollm2-Q4_1.gguf")); len(got) != 1 {
		t.Errorf("the model in the models cache: %v", got)
	}
	// vllm serve's form: the repository as the model, no tag (no Q4_K_M or
	// Q8_0 there, so the first GGUF), named as given
	serve(repo, repo)

	// offline, from the cache: -hff names the file, --alias the model
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("MODEL_ENDPOINT", "http://127.0.0.1:1") // nothing listens: any request would fail
	serve("smol", "-hf", repo, "-hff", "smollm2-Q4_1.gguf", "--alias", "smol")

	fails := []struct {
		name string
		env  map[string]string
		args []string
		want []string // in serve's last line
	}{
		{"offline, not in the cache", map[string]string{"LLAMA_CACHE": t.TempDir()}, []string{"-hf", repo},
			[]string{"-hf " + repo, "offline mode", "lacks it"}},
		{"a missing repository", nil, []string{"-hf", "tandem-test/missing"},
			[]string{"-hf tandem-test/missing", "not found (HTTP 404)", "Repository not found"}},
		{"a file the repository lacks", nil, []string{"-hf", repo, "-hff", "nope.gguf"},
			[]string{"no file nope.gguf", "available: smollm2-Q4_1.gguf"}},
		{"a tag the repository lacks", nil, []string{"-hf", repo + ":Q2_K"},
			[]string{"no GGUF file", "no model for tag Q2_K"}},
		{"the hub is unreachable", map[string]string{"LLAMA_CACHE": t.TempDir(), "MODEL_ENDPOINT": "http://127.0.0.1:1"}, []string{"Qwen/Qwen3-0.6B"},
			[]string{"--model Qwen/Qwen3-0.6B", "connection refused"}},
	}
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("MODEL_ENDPOINT", hub.URL)
	for _, tt := range fails {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "offline, not in the cache" {
				t.Setenv("HF_HUB_OFFLINE", "1")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, last, took, stderr := runToExit(t, append(append([]string{"serve", "--port", fmt.Sprint(freePort(t))}, small...), tt.args...)...)
			if code == 0 || took > failFastWithin {
				t.Errorf("exit %d after %v, want non-zero within %v\n%s", code, took, failFastWithin, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q lacks %q", last, w)
				}
			}
		})
	}
}
