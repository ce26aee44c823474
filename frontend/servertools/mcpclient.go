package servertools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Why a call to an MCP server got no answer.
var (
	errMCPClosed   = errors.New("transport closed")
	errMCPTimeout  = errors.New("request timed out")
	errMCPShutdown = errors.New("cancelled: server shutting down")
	// errMCPNotSent: the request never reached the server (it had
	// exited), so it may be sent again to a new one.
	errMCPNotSent = errors.New("request not sent")
)

// mcpClient is one running MCP server: its process (in a process group
// of its own), a goroutine reading its stdout and handing each response
// to the call waiting for it, one draining its stderr, one waiting for
// it to exit. Calls are concurrent, told apart by their ids.
type mcpClient struct {
	name string
	log  *slog.Logger
	cmd  *exec.Cmd
	// stdin, stdout and stderr are Tandem's ends of the pipes: pollable,
	// so a write has a deadline, and closing stdout ends the reader even
	// while a grandchild still holds the other end open.
	stdin, stdout, stderr *os.File

	wmu sync.Mutex // one line at a time on stdin

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcIn
	stopped error // why the client no longer takes calls; nil while it does

	exited chan struct{} // closed once the process is reaped
	read   chan struct{} // closed once the reader has ended

	tailMu  sync.Mutex
	errTail string // the last stderrTail bytes of stderr, for diagnostics
}

const (
	// stderrTail is how much of an MCP server's stderr is kept.
	stderrTail = 4 << 10
	// mcpStopGrace is how long a server gets to exit once its stdin is
	// closed and its group sent SIGTERM, before SIGKILL.
	mcpStopGrace = 500 * time.Millisecond
	// mcpDrainGrace is how long stdout is still read after the server
	// exited: its last response may still be in the pipe.
	mcpDrainGrace = 200 * time.Millisecond
)

// spawnMCP starts srv's process; the initialize handshake is the
// caller's (mcpSlot.client).
func spawnMCP(srv MCPServer, log *slog.Logger) (*mcpClient, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _, _, _ = inR.Close(), inW.Close(), outR.Close(), outW.Close()
		return nil, err
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = srv.Cwd, inR, outW, errW
	if len(srv.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range srv.Env {
			cmd.Env = append(cmd.Env, k+"="+v) // later wins
		}
	}
	setGroup(cmd)
	err = cmd.Start()
	_, _, _ = inR.Close(), outW.Close(), errW.Close() // the child's ends
	if err != nil {
		_, _, _ = inW.Close(), outR.Close(), errR.Close()
		return nil, fmt.Errorf("failed to spawn %q: %w", srv.Command, err)
	}
	c := &mcpClient{name: srv.Name, log: log, cmd: cmd, stdin: inW, stdout: outR, stderr: errR,
		pending: map[int64]chan rpcIn{}, exited: make(chan struct{}), read: make(chan struct{})}
	go c.readStdout()
	go c.drainStderr()
	go c.wait()
	return c, nil
}

// call sends a request and waits for its response's result: an error
// if the response is one, if the client stops, or once ctx ends (its
// cause: errMCPTimeout, errMCPShutdown), which the server is told with
// notifications/cancelled.
func (c *mcpClient) call(ctx context.Context, method string, params any) (rpcIn, error) {
	c.mu.Lock()
	if c.stopped != nil {
		c.mu.Unlock()
		return rpcIn{}, c.stopped
	}
	c.nextID++
	id, ch := c.nextID, make(chan rpcIn, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	line, err := rpcRequest(id, method, params)
	if err != nil {
		return rpcIn{}, fmt.Errorf("%w: %v", ErrBadParams, err)
	}
	if err := c.send(ctx, line); err != nil {
		return rpcIn{}, fmt.Errorf("%w: %w", errMCPNotSent, err)
	}
	select {
	case msg, ok := <-ch:
		if !ok {
			return rpcIn{}, c.err()
		}
		return msg, responseError(msg)
	case <-ctx.Done():
		// best effort, not bound to ctx: the server may stop the work
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = c.send(sctx, rpcNotification("notifications/cancelled", map[string]any{"requestId": id, "reason": context.Cause(ctx).Error()}))
		}()
		return rpcIn{}, context.Cause(ctx)
	}
}

// send writes one line to stdin within ctx's deadline; a failed write
// stops the client (a half-written line would corrupt the stream).
func (c *mcpClient) send(ctx context.Context, line []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.err(); err != nil {
		return err
	}
	dl, _ := ctx.Deadline() // none: no deadline
	_ = c.stdin.SetWriteDeadline(dl)
	if _, err := c.stdin.Write(line); err != nil {
		c.stop(fmt.Errorf("%w: writing: %v", errMCPClosed, err))
		return c.err()
	}
	return nil
}

// err is why the client stopped, nil while it runs.
func (c *mcpClient) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// alive reports whether the client still takes calls.
func (c *mcpClient) alive() bool { return c.err() == nil }

// stop marks the client stopped with why (the first reason stays).
func (c *mcpClient) stop(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped == nil {
		c.stopped = why
	}
}

// readStdout hands each response to its call; a request from the
// server gets its reply. When stdout ends, every waiting call fails.
func (c *mcpClient) readStdout() {
	err := readLines(c.stdout, maxMCPLine, func(line []byte) {
		id, msg, reply, ok := parseRPC(line)
		if reply != nil {
			go func() { // not from the reader: a full stdin must not stall it
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = c.send(ctx, reply)
			}()
		}
		if !ok {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- msg // buffered; a stale id (a call that gave up) has none
		}
	})
	c.stop(fmt.Errorf("%w: stdout: %v", errMCPClosed, err))
	c.mu.Lock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.read)
}

// drainStderr logs the server's stderr and keeps its tail: an undrained
// pipe would block the server.
func (c *mcpClient) drainStderr() {
	_ = readLines(c.stderr, 64<<10, func(line []byte) {
		c.log.Debug("MCP server stderr", "server", c.name, "line", string(line))
		c.tailMu.Lock()
		c.errTail += string(line) + "\n"
		if n := len(c.errTail); n > stderrTail {
			c.errTail = c.errTail[n-stderrTail:]
		}
		c.tailMu.Unlock()
	})
}

// wait reaps the process; then its group goes too (a grandchild would
// hold the pipes open), and stdout is closed once the last of it had
// time to be read.
func (c *mcpClient) wait() {
	err := c.cmd.Wait()
	c.stop(fmt.Errorf("%w: MCP server exited: %v", errMCPClosed, exitText(err)))
	killGroup(c.cmd)
	close(c.exited)
	select {
	case <-c.read:
	case <-time.After(mcpDrainGrace):
	}
	_, _, _ = c.stdin.Close(), c.stdout.Close(), c.stderr.Close()
}

// exitText is how a process ended.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// diagnostics is why the client stopped and the tail of its stderr.
func (c *mcpClient) diagnostics() string {
	var parts []string
	if err := c.err(); err != nil {
		parts = append(parts, err.Error())
	}
	c.tailMu.Lock()
	if t := strings.TrimSpace(c.errTail); t != "" {
		parts = append(parts, "last stderr: "+t)
	}
	c.tailMu.Unlock()
	return strings.Join(parts, "; ")
}

// close stops the server: stdin closed and SIGTERM to its group, then
// SIGKILL after mcpStopGrace; it returns once the process is reaped
// and the reader has ended (closing stdout ends it even while a
// grandchild that left the group holds the pipe).
func (c *mcpClient) close() {
	c.stop(errMCPClosed)
	_ = c.stdin.Close()
	termGroup(c.cmd)
	select {
	case <-c.exited:
	case <-time.After(mcpStopGrace):
		killGroup(c.cmd)
		<-c.exited
	}
	_ = c.stdout.Close()
	<-c.read
}
