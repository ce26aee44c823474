package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEngineVLLMProtocol runs real `tandem engine --protocol vllm`
// processes (the dummy model on the CPU, or the null backend set to fail)
// behind scripts/vllmwire/fake_frontend.py, a fake vLLM 0.33 frontend
// written from vLLM's source, over real ZeroMQ, in its --structure-only
// mode (any model's greedy tokens pass): the handshake completes, every
// scenario's checks pass (64 concurrent requests with their lengths and
// finish reasons, an abort, utility results and refusals, stop and EOS
// tokens, logprob layouts, prefix-cache hits), and the engine exits as
// vLLM's does: 0 on SIGTERM, 1 after ENGINE_CORE_DEAD.
func TestEngineVLLMProtocol(t *testing.T) {
	python, _ := filepath.Abs(filepath.Join("..", "..", ".cache", "kvevents-venv", "bin", "python"))
	if _, err := os.Stat(python); err != nil {
		t.Skip("no .cache/kvevents-venv (make sdktests makes it): the fake vLLM frontend needs msgspec and pyzmq")
	}
	tests := []struct {
		scenario string
		engines  int
		device   string
		extra    []string // fake frontend flags
		wantRC   int      // the engines' exit code: after SIGTERM, or on their own
	}{
		{"basic", 1, "cpu", nil, 0},
		{"concurrent", 1, "cpu", nil, 0},
		{"utility", 1, "cpu", nil, 0},
		{"abort", 1, "cpu", nil, 0},
		{"death", 1, "null:fail-after=10", nil, 1},
		{"concurrent", 2, "cpu", []string{"--no-coordinator"}, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-dp%d", tt.scenario, tt.engines), func(t *testing.T) {
			rpc := freePort(t)
			var engines []*proc
			for r := range tt.engines {
				engines = append(engines, startProc(t, "engine", "dummy", "--protocol", "vllm", "--device", tt.device,
					"--data-parallel-rpc-port", fmt.Sprint(rpc), "--data-parallel-rank", fmt.Sprint(r),
					"--data-parallel-size", fmt.Sprint(tt.engines), "--threads", "1", "--kv-cache-memory", "64M"))
			}
			args := append([]string{filepath.Join("..", "..", "scripts", "vllmwire", "fake_frontend.py"),
				"--handshake", fmt.Sprintf("tcp://127.0.0.1:%d", rpc), "--engines", fmt.Sprint(tt.engines),
				"--scenario", tt.scenario, "--requests", "64", "--vocab", "320", "--eos", "257",
				"--timeout", "60", "--structure-only"}, tt.extra...)
			out, err := exec.Command(python, args...).Output()
			var sum struct {
				OK       bool
				Checks   map[string]bool
				Failures []string
			}
			if jerr := json.Unmarshal(out, &sum); jerr != nil {
				t.Fatalf("fake frontend: %v, output %q: %v", err, out, jerr)
			}
			if !sum.OK || err != nil {
				t.Fatalf("fake frontend failed (%v): %s", err, strings.Join(sum.Failures, "; "))
			}
			t.Logf("%d checks passed", len(sum.Checks))
			for i, p := range engines {
				if tt.wantRC == 0 {
					p.signal(syscall.SIGTERM)
				}
				select {
				case <-p.done:
				case <-time.After(30 * time.Second):
					t.Fatalf("engine %d still running", i)
				}
				if rc := p.cmd.ProcessState.ExitCode(); rc != tt.wantRC {
					t.Errorf("engine %d exited %d, want %d", i, rc, tt.wantRC)
				}
			}
		})
	}
}
