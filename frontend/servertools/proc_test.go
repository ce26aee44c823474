package servertools

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunProc(t *testing.T) {
	tests := []struct {
		name     string
		spec     procSpec
		output   string
		exit     int
		timedOut bool
	}{
		{"output and exit code", procSpec{Args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, "out\nerr\n", 3, false},
		{"stderr split off", procSpec{Args: []string{"sh", "-c", "echo out; echo err >&2"}, SplitStderr: true}, "out\n", 0, false},
		{"cap", procSpec{Args: []string{"sh", "-c", "printf 0123456789"}, MaxOutput: 4}, "0123" + truncatedNote, 0, false},
		{"stdin", procSpec{Args: []string{"cat"}, Stdin: []byte("in")}, "in", 0, false},
		// the shell's child is killed with it, so the pipe closes at once
		{"timeout kills the group", procSpec{Args: []string{"sh", "-c", "echo started; sleep 30"}, Timeout: 50 * time.Millisecond}, "started\n", -1, true},
		{"not found", procSpec{Args: []string{"/nonexistent/tool"}}, "failed to spawn process", -1, false},
		{"bad dir", procSpec{Args: []string{"true"}, Dir: "/nonexistent/dir"}, "failed to spawn process", -1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spec.MaxOutput == 0 {
				tc.spec.MaxOutput = 1 << 10
			}
			if tc.spec.Timeout == 0 {
				tc.spec.Timeout = 10 * time.Second
			}
			start := time.Now()
			res := runProc(context.Background(), tc.spec)
			if res.Output != tc.output || res.ExitCode != tc.exit || res.TimedOut != tc.timedOut {
				t.Errorf("got %q exit %d timed out %v, want %q %d %v", res.Output, res.ExitCode, res.TimedOut, tc.output, tc.exit, tc.timedOut)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

// TestRunProcStops: a chunk callback returning false, or the context
// ending, kills the command at once, not as a timeout.
func TestRunProcStops(t *testing.T) {
	var chunks []string
	res := runProc(context.Background(), procSpec{Args: []string{"sh", "-c", "echo a; sleep 30; echo b"}, MaxOutput: 100, Timeout: time.Minute,
		OnChunk: func(s string) bool { chunks = append(chunks, s); return false }})
	if strings.Join(chunks, "") != "a\n" || res.TimedOut || res.ExitCode != -1 {
		t.Errorf("chunks %q, result %+v", chunks, res)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res = runProc(ctx, procSpec{Args: []string{"sh", "-c", "echo a; sleep 30"}, MaxOutput: 100, Timeout: time.Minute,
		OnChunk: func(string) bool { cancel(); return true }})
	if res.Output != "a\n" || res.TimedOut || res.ExitCode != -1 {
		t.Errorf("cancelled: %+v", res)
	}
}
