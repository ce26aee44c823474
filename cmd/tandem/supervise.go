package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Supervision of serve's (and run-batch's) child processes.
//
// Readiness travels over an inherited pipe, like systemd's sd_notify: the
// supervisor passes the write end as fd 3 and names it in $TANDEM_READY_FD;
// the child writes "READY\n" once it serves (an engine once its ROUTER is
// bound, a frontend once its HTTP server accepts) and closes it. A child
// started without the variable does nothing. restartPolicy decides what an
// exit means.

const (
	envReadyFD = "TANDEM_READY_FD"
	readyLine  = "READY\n"
)

// notifyReady tells the supervising process, if any, that this one is
// ready. Only the first call writes.
func notifyReady() {
	s := os.Getenv(envReadyFD)
	if s == "" {
		return
	}
	_ = os.Unsetenv(envReadyFD)
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return
	}
	if f := os.NewFile(uintptr(fd), "ready"); f != nil {
		_, _ = f.WriteString(readyLine)
		_ = f.Close()
	}
}

// child is one supervised process.
type child struct {
	name string // engine-0, frontend-1
	exe  string
	args []string

	policy *restartPolicy // nil: newRestartPolicy()
	stderr io.Writer      // where the child's stderr goes; nil: os.Stderr
}

// runChildren supervises every child until ctx ends or one of them gives
// up (see restartPolicy); then it stops the others and returns that one's
// error, or nil after ctx ended.
func runChildren(ctx context.Context, procs []*child, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for _, p := range procs {
		wg.Go(func() {
			if err := p.supervise(ctx, log); err != nil {
				once.Do(func() {
					first = err
					log.Error("stopping every process", "because", err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	return first
}

// supervise runs the child until ctx ends (nil) or the restart policy
// gives up (an error naming the child and what it said last).
func (c *child) supervise(ctx context.Context, log *slog.Logger) error {
	policy := c.policy
	if policy == nil {
		policy = newRestartPolicy()
	}
	for {
		r, err := c.start()
		if err != nil {
			return fmt.Errorf("%s failed to start: %w", c.name, err)
		}
		log.Info("process started", "child", c.name, "pid", r.cmd.Process.Pid)
		ready := r.ready
		var exitErr error
	wait:
		for {
			select {
			case <-ready:
				ready = nil
				policy.decide(time.Now(), procReady)
				log.Info("process ready", "child", c.name)
			case exitErr = <-r.done:
				break wait
			case <-ctx.Done():
				r.stop(log, c.name)
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if ready != nil && r.wasReady() { // it became ready, then exited, before we looked
			policy.decide(time.Now(), procReady)
		}
		reason := r.reason(exitErr)
		a := policy.decide(time.Now(), procExited)
		switch a.verdict {
		case giveUp:
			if a.startFailed {
				return fmt.Errorf("%s failed to start: %s", c.name, reason)
			}
			return fmt.Errorf("%s crashed %d times within %s; giving up (last: %s)", c.name, a.numCrashes, policy.window, reason)
		case restartAfter:
			log.Error("process exited; restarting", "child", c.name, "err", reason, "crashes", a.numCrashes, "backoff", a.delay)
			select {
			case <-time.After(a.delay):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// run is one start of a child.
type run struct {
	cmd   *exec.Cmd
	ready chan struct{} // closed when the child reports ready
	done  chan error    // the exit, once the readiness pipe is drained too
	tail  *tailWriter   // the child's stderr, copied to ours
}

// start starts the child with the readiness pipe as fd 3 and its stderr
// through a tailWriter.
func (c *child) start() (*run, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderr := c.stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	r := &run{cmd: exec.Command(c.exe, c.args...), ready: make(chan struct{}), done: make(chan error, 1), tail: &tailWriter{w: stderr}}
	r.cmd.Stdout, r.cmd.Stderr = os.Stdout, r.tail
	r.cmd.ExtraFiles = []*os.File{pw} // fd 3
	r.cmd.Env = append(os.Environ(), envReadyFD+"=3")
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = r.cmd.Start()
	_ = pw.Close() // the child has its copy
	if err != nil {
		_ = pr.Close()
		return nil, err
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		defer pr.Close()
		b, _ := io.ReadAll(pr) // EOF when the child closes fd 3 or exits
		if bytes.Contains(b, []byte(readyLine)) {
			close(r.ready)
		}
	}()
	go func() {
		err := r.cmd.Wait()
		select { // a grandchild might hold fd 3 open; do not wait for it
		case <-drained:
		case <-time.After(time.Second):
		}
		r.done <- err
	}()
	return r, nil
}

func (r *run) wasReady() bool {
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// stop asks the child to stop (SIGTERM), and kills it after 10 s.
func (r *run) stop(log *slog.Logger, name string) {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		log.Warn("process ignored SIGTERM; killing", "child", name)
		_ = r.cmd.Process.Kill()
		<-r.done
	}
	log.Info("process stopped", "child", name)
}

// reason says why the child exited: its own error line ("tandem: engine:
// open …" without the "tandem: "), else the exit status and its last line.
func (r *run) reason(err error) string {
	last := r.tail.last()
	if msg, ok := strings.CutPrefix(last, "tandem: "); ok {
		return msg
	}
	s := exitText(err)
	if last != "" {
		s += " (last output: " + last + ")"
	}
	return s
}

func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// tailWriter copies a child's stderr to w and keeps its last non-empty
// line.
type tailWriter struct {
	w io.Writer

	mu      sync.Mutex // guards the fields below
	partial []byte     // the line being written
	lastLn  string     // the last complete non-empty line
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.partial = append(t.partial, p...)
	rest := t.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(rest[:i])); line != "" {
			t.lastLn = line
		}
		rest = rest[i+1:]
	}
	t.partial = append(t.partial[:0], rest[:min(len(rest), 64<<10)]...) // a runaway line: keep its start
	t.mu.Unlock()
	return t.w.Write(p)
}

// last is the last non-empty line, a trailing one without newline
// included.
func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if line := strings.TrimSpace(string(t.partial)); line != "" {
		return line
	}
	return t.lastLn
}
