package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCPUPrecisionFlag: an unknown --cpu-precision stops serve, run-batch
// and engine at once with a message naming the choices (serve would
// otherwise restart a failing engine forever).
func TestCPUPrecisionFlag(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--cpu-precision", "int4", "--port", "1"},
		{"run-batch", "-i", "in.jsonl", "-o", "out.jsonl", "--cpu-precision", "int4"},
		{"engine", "--listen", "ipc:///tmp/tandem-precision-test", "--cpu-precision", "int4"},
	} {
		out, err := exec.Command(binPath, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), `unknown precision "int4" (want one of prompt, fast, high)`) {
			t.Errorf("tandem %s: err %v, output:\n%s", args[0], err, out)
		}
	}
	out, _ := exec.Command(binPath, "engine", "--help").CombinedOutput()
	if !strings.Contains(string(out), "-cpu-precision") {
		t.Errorf("engine --help does not list --cpu-precision:\n%s", out)
	}
}
