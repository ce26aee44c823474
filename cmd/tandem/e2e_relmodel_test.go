package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRelativeModelPath: an engine started with a relative --model in its
// own directory serves frontends and run-batch started elsewhere (issue
// #18: READY carried the path verbatim and they opened it relative to
// their own working directory, exiting 1). The engine reports the model's
// absolute path, which /v1/models gives as the card's root.
func TestRelativeModelPath(t *testing.T) {
	model := defaultModel(t)
	abs, err := filepath.Abs(model)
	if err != nil {
		t.Fatal(err)
	}
	ep := "ipc://" + filepath.Join(t.TempDir(), "engine.sock")
	startProcIn(t, filepath.Dir(abs), "engine", "--model", filepath.Base(abs), "--device", "null", "--listen", ep,
		"--max-model-len", "256", "--kv-cache-memory", "16Mi", "--threads", "1")

	elsewhere := t.TempDir()
	port := freePort(t)
	fe := startProcIn(t, elsewhere, "frontend", "--engines", ep, "--port", fmt.Sprint(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)
	code, list := getJSON(t, base+"/v1/models")
	if code != http.StatusOK {
		t.Fatalf("/v1/models: %d %v", code, list)
	}
	if root := list["data"].([]any)[0].(map[string]any)["root"]; root != abs {
		t.Errorf("model card root %v, want the engine's model as an absolute path %s", root, abs)
	}

	in, out := filepath.Join(elsewhere, "in.jsonl"), filepath.Join(elsewhere, "out.jsonl")
	line := `{"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"hi","max_tokens":2}}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rb := exec.CommandContext(ctx, binPath, "run-batch", "--engines", ep, "-i", "in.jsonl", "-o", "out.jsonl")
	rb.Dir = elsewhere
	if b, err := rb.CombinedOutput(); err != nil {
		t.Fatalf("run-batch --engines from another directory: %v\n%s", err, b)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), `"custom_id":"a"`) || !strings.Contains(string(b), `"status_code":200`) {
		t.Fatalf("run-batch output: %s", b)
	}
}
