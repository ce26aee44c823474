package main

import (
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCommand runs `tandem bench --dataset multi-turn` against a
// dummy-model server and checks its report: the Markdown tables on stdout,
// the JSON with every request, and the PNG.
func TestBenchCommand(t *testing.T) {
	s := startSplit(t)
	dir := t.TempDir()
	cmd := exec.Command(binPath, "bench", "--base-url", s.base, "--dataset", "multi-turn", "--routing", "label-x",
		"--num-conversations", "3", "--num-turns", "3", "--num-clients", "2", "--output-len", "4",
		"--system-len", "10", "--context-len", "30", "--user-len", "5", "--result-dir", dir, "--name", "r")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tandem bench: %v\n%s", err, out)
	}
	for _, want := range []string{"| label-x | 9/0 |", "TTFT p50 ms | turn 1 | turn 2 | turn 3 |"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Label   string `json:"label"`
			Samples []struct {
				Turn         int `json:"turn"`
				PromptTokens int `json:"prompt_tokens"`
				CachedTokens int `json:"cached_tokens"`
			} `json:"samples"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 1 || len(doc.Runs[0].Samples) != 9 {
		t.Fatalf("result JSON has %d runs / samples %+v", len(doc.Runs), doc.Runs)
	}
	cached := 0
	for _, smp := range doc.Runs[0].Samples {
		if smp.PromptTokens == 0 {
			t.Errorf("sample without usage: %+v", smp)
		}
		if smp.Turn > 1 {
			cached += smp.CachedTokens
		}
	}
	if cached == 0 {
		t.Error("later turns reported no cached tokens: the history was not carried or the usage not read")
	}
	f, err := os.Open(filepath.Join(dir, "r.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("r.png: %v", err)
	}
}
