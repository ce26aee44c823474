package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// batchLine is one result line of run-batch.
type batchLine struct {
	ID       string `json:"id"`
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct{ Code, Message string } `json:"error"`
}

func readBatchOutput(t *testing.T, path string) []batchLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []batchLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l batchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("result line %d: %v: %s", len(out)+1, err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// TestRunBatchTwoHundredLines runs a 200-line batch with a few invalid
// lines against a running engine (--engines), then checks at the engine
// that each line's session_id was honoured.
func TestRunBatchTwoHundredLines(t *testing.T) {
	s := startSplit(t)
	run := fmt.Sprint(time.Now().UnixNano())
	sessions := []string{"batch-a-" + run, "batch-b-" + run}
	invalid := map[int]string{
		13:  `{"custom_id":"l13","method":"POST","url":"/v1/completions","body":{"prompt":`,
		77:  `{"custom_id":"l77","method":"POST","url":"/v1/score","body":{"text_1":"x","text_2":"y"}}`,
		101: `{"custom_id":"l101","method":"GET","url":"/v1/completions","body":{}}`,
		150: `{"custom_id":"l150","method":"POST","url":"/v1/completions","body":{"prompt":"x","temperature":-1}}`, // 400 from the server
		199: `{"custom_id":"l199","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"x"}],"stream":true}}`,
	}
	want := map[string]int{} // session → requests the engine must see
	var in strings.Builder
	for i := range 200 {
		if line, ok := invalid[i]; ok {
			in.WriteString(line + "\n")
			continue
		}
		sid := sessions[i%2]
		want[sid]++
		var url string
		body := map[string]any{"model": "dummy", "session_id": sid}
		// A shared preamble fills a KV block, so each session stays cached
		// (and its engine record with it) between its lines.
		text := fmt.Sprint("a conversation about the sea: line ", i)
		switch i % 3 {
		case 0:
			url, body["messages"], body["max_tokens"] = "/v1/chat/completions", []map[string]string{{"role": "user", "content": text}}, 3
		case 1:
			url, body["prompt"], body["max_tokens"] = "/v1/completions", text, 3
		case 2:
			if i%6 == 5 {
				url, body["input"] = "/v1/embeddings", text
				break
			}
			url, body["input"], body["max_output_tokens"] = "/v1/responses", text, 3
		}
		b, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint("l", i), "method": "POST", "url": url, "body": body})
		in.Write(append(b, '\n'))
	}
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(inPath, []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "run-batch", "-i", inPath, "-o", outPath, "--engines", s.endpoint, "--max-concurrency", "16")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-batch: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "200/200 lines, 5 failed") {
		t.Fatalf("no final progress line in:\n%s", out)
	}
	lines := readBatchOutput(t, outPath)
	if len(lines) != 200 {
		t.Fatalf("%d result lines, want 200", len(lines))
	}
	for i, l := range lines {
		_, bad := invalid[i]
		switch {
		case i == 13 && l.CustomID != "": // not JSON: no custom_id to recover
			t.Fatalf("line 13: custom_id %q from a truncated line", l.CustomID)
		case i != 13 && l.CustomID != fmt.Sprint("l", i) || !strings.HasPrefix(l.ID, "batch_req_"):
			t.Fatalf("line %d: custom_id %q id %q (out of order?)", i, l.CustomID, l.ID)
		case i == 150:
			if l.Response == nil || l.Response.StatusCode != http.StatusBadRequest || l.Error != nil {
				t.Fatalf("line 150: want the server's 400 in response, got %+v", l)
			}
		case bad:
			if l.Error == nil || l.Response != nil {
				t.Fatalf("line %d: invalid line without an error: %+v", i, l)
			}
		case l.Response == nil || l.Response.StatusCode != http.StatusOK || l.Response.RequestID == "":
			t.Fatalf("line %d: %+v", i, l)
		case i%6 == 5:
			var emb struct {
				Data []struct{ Embedding []float64 } `json:"data"`
			}
			if err := json.Unmarshal(l.Response.Body, &emb); err != nil || len(emb.Data) != 1 || len(emb.Data[0].Embedding) < 2 {
				t.Fatalf("line %d (embeddings): %s", i, l.Response.Body)
			}
		}
	}
	for sid, n := range want {
		code, sess := getJSON(t, s.base+"/v1/sessions/"+sid)
		if code != http.StatusOK || int(sess["num_requests"].(float64)) != n {
			t.Fatalf("session %s: %d %v, want %d requests", sid, code, sess["num_requests"], n)
		}
	}
}

// TestRunBatchStartsItsEngine runs a small batch with engines run-batch
// starts itself, writing to stdout.
func TestRunBatchStartsItsEngine(t *testing.T) {
	dir := t.TempDir()
	inPath := filepath.Join(dir, "in.jsonl")
	body := `{"custom_id":"only","method":"POST","url":"/v1/completions","body":{"model":"dummy","prompt":"hi","max_tokens":2,"ignore_eos":true}}`
	if err := os.WriteFile(inPath, []byte(body+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "run-batch", "-i", inPath, "-o", "-", "--model", "dummy", "--max-model-len", "256", "--kv-cache-memory", "16Mi", "--threads", "1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("run-batch: %v\n%s", err, stderr.String())
	}
	var l batchLine
	if err := json.Unmarshal(stdout, &l); err != nil || l.CustomID != "only" || l.Response == nil || l.Response.StatusCode != 200 ||
		!strings.Contains(string(l.Response.Body), `"completion_tokens":2`) {
		t.Fatalf("%v: %s\n%s", err, stdout, stderr.String())
	}
}

// TestRunBatchLoRA: vLLM's run-batch takes --lora-modules, and a line
// naming the module runs with its adapter (another answer than the base
// model's, the same as the module's own answer on a second line).
func TestRunBatchLoRA(t *testing.T) {
	dir := t.TempDir()
	adapter := filepath.Join(dir, "a.gguf")
	writeDummyAdapter(t, adapter, 4)
	inPath := filepath.Join(dir, "in.jsonl")
	line := func(id, model string) string {
		return `{"custom_id":"` + id + `","method":"POST","url":"/v1/completions","body":{"model":"` + model + `","prompt":"Once upon","max_tokens":8,"temperature":0,"ignore_eos":true}}`
	}
	if err := os.WriteFile(inPath, []byte(line("base", "dummy")+"\n"+line("a1", "tuned")+"\n"+line("a2", "tuned")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "run-batch", "-i", inPath, "-o", "-", "--model", "dummy", "--max-model-len", "256", "--kv-cache-memory", "16Mi",
		"--threads", "1", "--enable-lora", "--lora-modules", "tuned="+adapter)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("run-batch: %v\n%s", err, stderr.String())
	}
	text := map[string]string{}
	for _, raw := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		var l batchLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil || l.Response == nil || l.Response.StatusCode != 200 {
			t.Fatalf("%v: %s", err, raw)
		}
		var body struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.Unmarshal(l.Response.Body, &body); err != nil || len(body.Choices) != 1 {
			t.Fatalf("%v: %s", err, l.Response.Body)
		}
		text[l.CustomID] = body.Choices[0].Text
	}
	if text["a1"] != text["a2"] || text["a1"] == text["base"] {
		t.Errorf("base %q, tuned %q and %q", text["base"], text["a1"], text["a2"])
	}
}
