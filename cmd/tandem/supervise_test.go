package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// shChild is a child that runs script with sh, its stderr discarded, with
// a fast restart policy.
func shChild(name, script string) *child {
	return &child{name: name, exe: "/bin/sh", args: []string{"-c", script}, stderr: io.Discard,
		policy: &restartPolicy{minBackoff: time.Millisecond, maxBackoff: 4 * time.Millisecond, maxCrashes: 3, window: time.Minute}}
}

// TestSupervise runs real processes (sh) through the supervisor: the
// readiness pipe, the child's last stderr line in the error, start-up
// failure versus crash limit, and stopping the others.
func TestSupervise(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tests := []struct {
		name    string
		procs   []*child
		wantErr string
	}{
		{"exit before ready is a start failure with the child's error", []*child{
			shChild("engine-0", "echo 'level=INFO msg=loading' >&2; echo 'tandem: engine: open /no/such/file: no such file or directory' >&2; exit 1"),
		}, "engine-0 failed to start: engine: open /no/such/file: no such file or directory"},
		{"a signal before ready names the signal and the last line", []*child{
			shChild("engine-0", "echo 'level=INFO msg=\"loading model\"' >&2; kill -9 $$"),
		}, `engine-0 failed to start: signal: killed (last output: level=INFO msg="loading model")`},
		{"a child that never reports ready and exits 0", []*child{
			shChild("frontend-0", "exit 0"),
		}, "frontend-0 failed to start: exit status 0"},
		{"crashes after ready until the limit", []*child{
			shChild("engine-1", "echo READY >&3; echo 'panic: boom' >&2; exit 2"),
		}, "engine-1 crashed 3 times within 1m0s; giving up (last: exit status 2 (last output: panic: boom))"},
		{"one failure stops the others", []*child{
			shChild("frontend-0", "echo READY >&3; exec sleep 60"),
			shChild("engine-0", "sleep 0.2; echo 'tandem: engine: bad' >&2; exit 1"),
		}, "engine-0 failed to start: engine: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := runChildren(context.Background(), tt.procs, log)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("runChildren = %v, want %q", err, tt.wantErr)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

// TestSuperviseStops: ctx ending stops a ready child (SIGTERM) and is no
// error.
func TestSuperviseStops(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := runChildren(ctx, []*child{shChild("engine-0", "echo READY >&3; exec sleep 60")}, log); err != nil {
		t.Fatalf("runChildren = %v", err)
	}
}

func TestTailWriter(t *testing.T) {
	var b strings.Builder
	tw := &tailWriter{w: &b}
	for _, p := range []string{"first\n", "sec", "ond\n\n  \n", "tandem: engine: x"} {
		_, _ = tw.Write([]byte(p))
	}
	if got := tw.last(); got != "tandem: engine: x" {
		t.Errorf("last = %q", got)
	}
	_, _ = tw.Write([]byte("\n\n"))
	if got := tw.last(); got != "tandem: engine: x" {
		t.Errorf("last after blank lines = %q", got)
	}
	if b.String() != "first\nsecond\n\n  \ntandem: engine: x\n\n" {
		t.Errorf("copied %q", b.String())
	}
}
