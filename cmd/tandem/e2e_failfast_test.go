package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/loader/testmodel"
	"github.com/tandem-llm/tandem/wire/gguf"
)

// failFastWithin is how quickly a deterministic start-up error must end
// the command (the acceptance says "within a few seconds"; the margin is
// for a loaded 2-core machine).
const failFastWithin = 10 * time.Second

// runToExit runs `tandem args…` to its end and returns its exit status,
// stderr's last non-empty line and how long it took.
func runToExit(t *testing.T, args ...string) (code int, last string, took time.Duration, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("tandem %v: %v", args, err)
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	return code, strings.TrimSpace(lines[len(lines)-1]), took, errb.String()
}

// TestServeFailsFast: every deterministic start-up error ends `tandem serve`
// with exit status 1 and the engine's (or the port's) own error as its last
// line, within seconds, instead of a restart loop.
func TestServeFailsFast(t *testing.T) {
	dir := t.TempDir()
	emptyDir := filepath.Join(dir, "hf-without-config")
	if err := os.Mkdir(emptyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	notGGUF := filepath.Join(dir, "notes.gguf")
	if err := os.WriteFile(notGGUF, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	mamba := filepath.Join(dir, "mamba.gguf")
	writeEditedGGUF(t, mamba, map[string]any{"general.architecture": "mamba"}, nil)
	valid := filepath.Join(dir, "valid.gguf")
	writeEditedGGUF(t, valid, nil, nil)
	q8_1 := filepath.Join(dir, "q8_1.gguf")
	writeEditedGGUF(t, q8_1, nil, map[string]uint32{"blk.0.ffn_up.weight": 9}) // Q8_1
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	const engineFailed = "tandem: engine-0 failed to start: engine: "
	type tc struct {
		name     string
		args     []string
		prefix   string // serve's last line starts with it
		contains string // and contains this
	}
	tests := []tc{
		{"missing model", []string{"--model", "/no/such/file"}, engineFailed, "loader: stat /no/such/file: no such file or directory"},
		{"not a model file", []string{notGGUF}, engineFailed, "loader: " + notGGUF + " is neither a GGUF file nor a Hugging Face model directory"},
		{"directory without config.json", []string{emptyDir}, engineFailed,
			"loader: open " + filepath.Join(emptyDir, "config.json") + ": no such file or directory"},
		{"unsupported architecture", []string{mamba}, engineFailed, `loader: architecture "mamba" is not supported (supported: ernie4_5, ernie4_5-moe, gemma2, gemma3, gpt-oss, granite, granitemoe, llama, olmo2, olmoe, phi3, qwen2, qwen2moe, qwen3, qwen3moe, smollm3)`},
		{"unsupported tensor type", []string{q8_1}, engineFailed, `tensor "blk.0.ffn_up.weight" has type Q8_1, which is not supported`},
		{"port in use", []string{"--model", "dummy", "--port", busyPort}, "tandem: serve: ", "listen tcp 127.0.0.1:" + busyPort + ": bind: address already in use"},
		{"address not on this machine", []string{"--model", "dummy", "--host", "192.0.2.1"}, "tandem: serve: ", "listen tcp 192.0.2.1:"},
		{"unknown tool call parser", []string{"--model", "dummy", "--tool-call-parser", "qwen"}, "tandem: serve: ",
			`--tool-call-parser: toolparse: unknown tool call parser "qwen" (valid: hermes, llama3_json, llama4_json, mistral, pythonic, llama4_pythonic, granite, phi4_mini_json, qwen3_coder, qwen3_xml, openai)`},
		{"speculative method not built", []string{"--model", "dummy", "--speculative-config", `{"method": "eagle", "model": "x", "num_speculative_tokens": 3}`}, engineFailed,
			`--speculative-config: method "eagle" is not built`},
		{"speculative type not built", []string{"--model", "dummy", "--spec-type", "draft-mtp"}, engineFailed, `--spec-type "draft-mtp": Tandem runs none, ngram-simple and draft-simple`},
		{"draft-simple without a draft model", []string{"--model", "dummy", "--spec-type", "draft-simple"}, engineFailed, `--spec-type draft-simple needs the draft model, -md`},
		{"missing draft model", []string{"--model", "dummy", "-md", "/no/such/draft.gguf"}, engineFailed, "engine: the draft model: engine: loader: stat /no/such/draft.gguf"},
		{"hf-overrides key not read", []string{"--model", "dummy", "--hf-overrides", `{"num_labels": 3}`}, engineFailed, `--hf-overrides: key "num_labels" is not supported`},
		{"classifier token not in the vocabulary", []string{valid, "--hf-overrides", `{"classifier_from_token": ["<no>", "<yes>"], "is_original_qwen3_reranker": true}`}, engineFailed,
			`--hf-overrides: classifier_from_token "<no>": no token of the vocabulary is "<no>"`},
	}
	if os.Geteuid() != 0 { // root reads any file
		unreadable := filepath.Join(dir, "unreadable.gguf")
		writeEditedGGUF(t, unreadable, nil, nil)
		if err := os.Chmod(unreadable, 0); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, tc{"unreadable model", []string{unreadable}, engineFailed, "permission denied"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"serve", "--port", strconv.Itoa(freePort(t)), "--run-dir", t.TempDir()}, tt.args...)
			code, last, took, stderr := runToExit(t, args...)
			if code != 1 || took > failFastWithin {
				t.Fatalf("tandem serve %v: exit %d after %s, want 1 within %s; stderr:\n%s", tt.args, code, took, failFastWithin, stderr)
			}
			if !strings.HasPrefix(last, tt.prefix) || !strings.Contains(last, tt.contains) {
				t.Errorf("last line %q, want %q … %q; stderr:\n%s", last, tt.prefix, tt.contains, stderr)
			}
			if strings.Contains(stderr, "restarting") {
				t.Errorf("serve restarted a process that failed to start:\n%s", stderr)
			}
		})
	}
}

// TestFrontendPortInUse: `tandem frontend` binds its port before it waits
// for engines, so a port in use fails at once.
func TestFrontendPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	code, last, took, stderr := runToExit(t, "frontend", "--port", port, "--engines", "ipc://"+filepath.Join(t.TempDir(), "none.sock"))
	want := "tandem: frontend: listen tcp 127.0.0.1:" + port + ": bind: address already in use"
	if code != 1 || last != want || took > failFastWithin {
		t.Fatalf("exit %d after %s, last line %q; want 1 and %q; stderr:\n%s", code, took, last, want, stderr)
	}
}

// writeEditedGGUF writes a tiny llama GGUF (testmodel) to path with the
// metadata in set replaced and the tensors in retype given another type
// (their data zeroed to its size): files the loader must refuse.
func writeEditedGGUF(t *testing.T, path string, set map[string]any, retype map[string]uint32) {
	t.Helper()
	orig := path + ".orig"
	spec := testmodel.Spec{Arch: "llama", VocabSize: 300, Dim: 32, NumLayers: 1, NumHeads: 2, FFNDim: 32}
	if err := testmodel.WriteGGUF(orig, spec); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, key := range f.Keys() {
		v, _ := f.KV(key)
		if nv, ok := set[key]; ok {
			v = nv
		}
		if err := w.AddKV(key, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range f.Tensors() {
		data, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		typ := ti.Type
		if nt, ok := retype[ti.Name]; ok {
			size, err := gguf.TensorSize(nt, ti.Shape)
			if err != nil {
				t.Fatal(err)
			}
			typ, data = nt, make([]byte, size)
		}
		if err := w.AddTensor(ti.Name, typ, ti.Shape, data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(orig)
}

// TestFrontendAnswersWhileWaiting: a frontend whose engines are not there
// yet serves HTTP at once: 503 with Retry-After on /health and the API,
// 200 on /version (alive, not ready), instead of a hanging connection.
func TestFrontendAnswersWhileWaiting(t *testing.T) {
	port := freePort(t)
	p := startProc(t, "frontend", "--port", strconv.Itoa(port), "--engines", "ipc://"+filepath.Join(t.TempDir(), "later.sock"))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("/health while waiting: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("frontend never answered: %v\n%s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := getJSON(t, base+"/version"); code != http.StatusOK || body["version"] == nil {
		t.Errorf("/version while waiting: %d %v", code, body)
	}
	if code, body := postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi"}, nil); code != http.StatusServiceUnavailable {
		t.Errorf("/v1/completions while waiting: %d %v", code, body)
	}
}

// TestRunBatchFailsFast: run-batch supervises its engines as serve does, so
// a model that cannot load ends it with the engine's error.
func TestRunBatchFailsFast(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"custom_id":"a","method":"POST","url":"/v1/completions","body":{"prompt":"hi"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, last, took, stderr := runToExit(t, "run-batch", "-i", in, "-o", filepath.Join(dir, "out.jsonl"), "--model", "/no/such/file")
	want := "tandem: run-batch: engine-0 failed to start: engine: loader: stat /no/such/file: no such file or directory"
	if code != 1 || last != want || took > failFastWithin {
		t.Fatalf("exit %d after %s, last line %q; want 1 and %q; stderr:\n%s", code, took, last, want, stderr)
	}
}
