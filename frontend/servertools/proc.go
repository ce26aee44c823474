package servertools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
)

// procResult is what a finished command gave.
type procResult struct {
	Output   string // stdout and stderr as they interleaved, up to the cap, then truncatedNote
	ExitCode int    // -1: not started, or killed
	TimedOut bool
}

// truncatedNote ends output cut at its cap.
const truncatedNote = "\n[output truncated]"

// drainGrace is how long a killed command's pipe is read before it is
// closed: a child that left the process group may hold it open.
const drainGrace = 2 * time.Second

// procSpec is one command to run.
type procSpec struct {
	Args      []string
	Dir       string        // "" = the server's working directory
	Stdin     []byte        // nil: stdin is empty
	MaxOutput int           // bytes kept; more is read and dropped so the child never blocks
	Timeout   time.Duration // then the command's process group is killed
	// SplitStderr keeps stderr out of Output (raw file bytes must not
	// be mixed with diagnostics); by default the two interleave.
	SplitStderr bool
	// OnChunk, if set, gets each piece of output as it is read, within
	// the cap; returning false kills the command (the caller is gone).
	OnChunk func(string) bool
}

// runProc runs p. ctx ending kills the command as the timeout does, but
// is not reported as a timeout.
func runProc(ctx context.Context, p procSpec) procResult {
	res := procResult{ExitCode: -1}
	r, w, err := os.Pipe()
	if err != nil {
		res.Output = "failed to spawn process"
		return res
	}
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.Dir, w, w
	if p.SplitStderr {
		cmd.Stderr = nil
	}
	if p.Stdin != nil {
		cmd.Stdin = bytes.NewReader(p.Stdin)
	}
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		_, _ = r.Close(), w.Close()
		res.Output = "failed to spawn process"
		return res
	}
	_ = w.Close()
	var timedOut, killed atomic.Bool
	kill := func() {
		if killed.CompareAndSwap(false, true) {
			killGroup(cmd)
			time.AfterFunc(drainGrace, func() { _ = r.Close() })
		}
	}
	timer := time.AfterFunc(p.Timeout, func() { timedOut.Store(true); kill() })
	stop := context.AfterFunc(ctx, kill)

	var out []byte
	truncated := false
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 && !truncated {
			chunk := buf[:n]
			if room := p.MaxOutput - len(out); n > room {
				chunk, truncated = chunk[:room], true
			}
			out = append(out, chunk...)
			if p.OnChunk != nil && len(chunk) > 0 && !p.OnChunk(string(chunk)) {
				kill()
			}
		}
		if err != nil {
			break
		}
	}
	timer.Stop()
	stop()
	_ = r.Close()
	werr := cmd.Wait()
	res.ExitCode = cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		res.ExitCode = -1
	}
	res.Output, res.TimedOut = string(out), timedOut.Load()
	if truncated {
		res.Output += truncatedNote
	}
	return res
}
