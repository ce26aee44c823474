package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFrontendVLLMEngines runs `tandem frontend --engine-protocol vllm`
// in front of two fake `vllm serve --headless` engines
// (scripts/vllmwire/fake_engine.py, written from vLLM 0.33's source, over
// real ZeroMQ) and asks it what a client would over HTTP: a streamed chat
// completion with logprobs ends with vLLM's finish reason, a
// conversation's second turn lands on the engine that holds the first
// and reports its cached tokens, every ADD carries session_id at index
// 20, and a client that disconnects gets its request aborted in the
// engine.
func TestFrontendVLLMEngines(t *testing.T) {
	model := defaultModel(t)
	python, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "kvevents-venv", "bin", "python"))
	if _, err := os.Stat(python); err != nil {
		t.Skip("no .cache/kvevents-venv (make sdktests makes it): the fake vLLM engine needs msgspec and pyzmq")
	}
	rpc, port := freePort(t), freePort(t)
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "rank0.log"), filepath.Join(dir, "rank1.log")}
	fe := startProc(t, "frontend", "--engine-protocol", "vllm", "--model", model, "--data-parallel-size", "2", "--served-model-name", "smol",
		"--data-parallel-rpc-port", fmt.Sprint(rpc), "--port", fmt.Sprint(port))
	for r, log := range logs {
		cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "vllmwire", "fake_engine.py"),
			"--handshake", fmt.Sprintf("tcp://127.0.0.1:%d", rpc), "--rank", fmt.Sprint(r), "--vocab", "49152",
			"--step-ms", "5", "--log", log)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHealthy(t, base, fe)

	chat := func(session string, messages []map[string]string) (content string, finish string, logprobs int, usage map[string]any) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "smol", "messages": messages, "max_tokens": 6, "stream": true,
			"logprobs": true, "top_logprobs": 2, "session_id": session, "stream_options": map[string]any{"include_usage": true}})
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta        struct{ Content string }
					FinishReason *string `json:"finish_reason"`
					Logprobs     *struct {
						Content []struct {
							TopLogprobs []any `json:"top_logprobs"`
						}
					}
				}
				Usage map[string]any
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			if c.Usage != nil {
				usage = c.Usage
			}
			for _, ch := range c.Choices {
				content += ch.Delta.Content
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
				if ch.Logprobs != nil {
					for _, lp := range ch.Logprobs.Content {
						if len(lp.TopLogprobs) != 2 {
							t.Errorf("top_logprobs has %d entries, want 2", len(lp.TopLogprobs))
						}
						logprobs++
					}
				}
			}
		}
		return content, finish, logprobs, usage
	}
	long := strings.Repeat("Tell me about the sea and the ships that sail on it. ", 6)
	turn1 := []map[string]string{{"role": "user", "content": long}}
	content, finish, lps, usage := chat("conv-7", turn1)
	if finish != "length" || lps != 6 || usage["completion_tokens"] != float64(6) {
		t.Fatalf("turn 1: finish %q, %d logprobs, usage %v; want length, 6, 6 completion tokens", finish, lps, usage)
	}
	turn2 := append(turn1, map[string]string{"role": "assistant", "content": content}, map[string]string{"role": "user", "content": "And then?"})
	_, finish, _, usage = chat("conv-7", turn2)
	details, _ := usage["prompt_tokens_details"].(map[string]any)
	if finish != "length" || details == nil || details["cached_tokens"].(float64) < 16 {
		t.Errorf("turn 2: finish %q, usage %v; want length and the first turn's blocks cached", finish, usage)
	}
	adds := func(log string) (n int, sessions []string) {
		b, _ := os.ReadFile(log)
		for line := range strings.Lines(string(b)) {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["type"] == "ADD" {
				n++
				if m["num_fields"] != float64(22) {
					t.Errorf("ADD with %v fields, want 22", m["num_fields"])
				}
				if s, ok := m["session_id"].(string); ok {
					sessions = append(sessions, s)
				}
			}
		}
		return n, sessions
	}
	var holder int = -1
	for r, log := range logs {
		_, s := adds(log)
		switch len(s) {
		case 2:
			holder = r
		case 1:
			t.Errorf("rank %d saw one turn of conv-7: the turns were split across engines", r)
		}
	}
	if holder < 0 {
		t.Fatalf("no engine saw both turns of conv-7 at index 20")
	}
	// The session API and the metrics work over vLLM engines too.
	code, sess := getJSON(t, base+"/v1/sessions/conv-7")
	if code != 200 || sess["engine_index"] != float64(holder) || sess["num_requests"] != float64(2) {
		t.Errorf("GET /v1/sessions/conv-7: %d %v; want engine %d, 2 requests", code, sess, holder)
	}
	mresp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`vllm:num_requests_running{engine="0"`, `vllm:num_requests_running{engine="1"`, "vllm:request_success_total"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A client that goes away: its request is aborted in the engine.
	body, _ := json.Marshal(map[string]any{"model": "smol", "prompt": "Once upon a time", "max_tokens": 4000, "stream": true, "ignore_eos": true})
	resp, err := http.Post(base+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var aborted bool
		for _, log := range logs {
			b, _ := os.ReadFile(log)
			aborted = aborted || strings.Contains(string(b), `"type": "ABORT"`)
		}
		if aborted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no ABORT reached an engine after the client disconnected")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
