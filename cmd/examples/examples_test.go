package examples

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// build compiles an example into a temporary directory.
func build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./"+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./%s: %v\n%s", name, err, out)
	}
	return bin
}

func runExample(t *testing.T, bin, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, err, o.String(), e.String())
	}
	return o.String(), e.String()
}

// defaultModel is the real default model (make test fetches it).
func defaultModel(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TANDEM_MODEL")
	if path == "" {
		t.Skip("TANDEM_MODEL is not set (make test sets it after make model fetches SmolLM2-135M-Instruct)")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("default model missing: %v (run make model)", err)
	}
	return path
}

var report = regexp.MustCompile(`-- (\d+) turns; last answer ended by (\w+); (\d+) prompt tokens served from the session's cache`)

// TestChat: two turns on the dummy model; the second turn's prompt comes
// largely from the session's cache.
func TestChat(t *testing.T) {
	bin := build(t, "chat")
	out, _ := runExample(t, bin, "Hello, who are you?\nAnd what can you do?\n", "--model", "dummy", "--max-tokens", "8", "--threads", "1")
	m := report.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no report in:\n%s", out)
	}
	cached, _ := strconv.Atoi(m[3])
	if m[1] != "2" || m[2] != "length" || cached < 16 {
		t.Fatalf("report %q: want 2 turns, ended by length, ≥ 16 cached tokens", m[0])
	}
}

func TestBatch(t *testing.T) {
	bin := build(t, "batch")
	prompts := []string{"one", "two two", "three three three"}
	out, errOut := runExample(t, bin, strings.Join(prompts, "\n")+"\n", "--model", "dummy", "--max-tokens", "5", "--threads", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(prompts) {
		t.Fatalf("%d answers for %d prompts:\n%s", len(lines), len(prompts), out)
	}
	for i, line := range lines {
		var a struct {
			Prompt       string `json:"prompt"`
			Finish       string `json:"finish_reason"`
			OutputTokens int    `json:"completion_tokens"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatal(err)
		}
		if a.Prompt != prompts[i] || (a.Finish != "length" && a.Finish != "stop") || a.OutputTokens < 1 || a.OutputTokens > 5 {
			t.Errorf("answer %d: %+v", i, a)
		}
	}
	if !strings.Contains(errOut, "batch: 3 prompts") {
		t.Errorf("no summary on stderr: %q", errOut)
	}
}

// TestBatchDefaultModel runs the README's batch command on the real model.
func TestBatchDefaultModel(t *testing.T) {
	model := defaultModel(t)
	bin := build(t, "batch")
	out, _ := runExample(t, bin, "The capital of France is\n", "--model", model, "--max-tokens", "8")
	if !strings.Contains(out, "Paris") {
		t.Fatalf("answer: %s", out)
	}
}
