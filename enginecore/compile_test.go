package enginecore_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore"
	"github.com/tandem-llm/tandem/enginecore/cpu"
	"github.com/tandem-llm/tandem/enginecore/loader"
	"github.com/tandem-llm/tandem/enginecore/structured"
	"github.com/tandem-llm/tandem/frontend/engineclient"
	"github.com/tandem-llm/tandem/wire"
	"github.com/tandem-llm/tandem/wire/zmq"
)

// heldCompiler holds every compile until release is closed, and says on
// started when one begins: the test decides when a compile ends, so
// nothing depends on how long one takes.
type heldCompiler struct {
	inner    enginecore.Compiler
	started  chan structured.Constraint
	release  chan struct{}
	returned atomic.Int32 // compiles that have returned
}

func (h *heldCompiler) Compile(c structured.Constraint) (*structured.Matcher, error) {
	h.started <- c
	<-h.release
	defer h.returned.Add(1)
	return h.inner.Compile(c)
}

// heldEngine serves the dummy model (with its byte vocabulary) with a
// held compiler. stop cancels Serve and waits for it to return.
func heldEngine(t *testing.T) (c *engineclient.Client, h *heldCompiler, stop func()) {
	t.Helper()
	served, err := loader.Open("dummy", 512)
	if err != nil {
		t.Fatal(err)
	}
	be, err := cpu.New(served.Config, served.Weights, 1)
	if err != nil {
		t.Fatal(err)
	}
	core, err := enginecore.New(enginecore.Config{
		Model: "dummy", ServedModelName: "dummy", MaxModelLen: 512, BlockSize: 16, NumBlocks: 256,
		MaxNumSeqs: 16, MaxNumBatchedTokens: 256, EnablePrefixCaching: true, Vocab: served.Vocab,
		HeartbeatInterval: hbInterval, HeartbeatTimeout: hbTimeout, Logger: quiet,
	}, be)
	if err != nil {
		t.Fatal(err)
	}
	h = &heldCompiler{started: make(chan structured.Constraint, 16), release: make(chan struct{})}
	enginecore.SetCompiler(core, func(inner enginecore.Compiler) enginecore.Compiler { h.inner = inner; return h })
	ep := "ipc://" + filepath.Join(t.TempDir(), "engine.sock")
	router, err := zmq.BindRouter(ep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- core.Serve(ctx, router, nil) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		router.Close()
		be.Close()
	}
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		stop()
	})
	return dial(t, ep), h, stop
}

func waitStarted(t *testing.T, h *heldCompiler) structured.Constraint {
	t.Helper()
	select {
	case c := <-h.started:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("no compile started")
		return structured.Constraint{}
	}
}

// next reads one output of g.
func next(t *testing.T, g *engineclient.Generation) engineclient.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := g.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

const heldSchema = `{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99}},"required":["n"],"additionalProperties":false}`

func schemaParams() wire.SamplingParams {
	p := wire.DefaultSamplingParams()
	p.Temperature, p.MaxTokens = 0, 64
	p.StructuredOutputs = &wire.StructuredOutputs{JSON: heldSchema}
	return p
}

// TestSlowCompileDoesNotStallOtherStreams: while a constraint compiles
// (held for as long as the test likes), an unconstrained stream keeps
// getting tokens, step after step; once the compile ends, the
// constrained request runs and its output validates.
func TestSlowCompileDoesNotStallOtherStreams(t *testing.T) {
	c, h, _ := heldEngine(t)
	ctx := context.Background()
	free, err := c.Generate(ctx, []int32{5, 6, 7, 8}, greedy(500), "free")
	if err != nil {
		t.Fatal(err)
	}
	next(t, free) // running
	constrained, err := c.Generate(ctx, []int32{5, 6, 7, 8}, schemaParams(), "json")
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, h)
	n := 0
	for n < 20 { // 20 steps while the compile is held: the loop never waited for it
		n += len(next(t, free).NewTokenIDs)
	}
	// The free stream may have run to its end by now (the engine does not
	// wait for this reader), so only the waiting count is certain.
	if st := stats(t, c); st.NumWaitingReqs != 1 || st.NumSkippedWaitingReqs != 1 || st.NumRunningReqs > 1 {
		t.Errorf("while compiling: %d running, %d waiting (%d deferred); want at most 1, 1 and 1 (the compiling request waits, deferred)",
			st.NumRunningReqs, st.NumWaitingReqs, st.NumSkippedWaitingReqs)
	}
	close(h.release)
	toks, finish := drain(t, constrained)
	var text []byte
	for _, tok := range toks {
		if tok < 256 {
			text = append(text, byte(tok))
		}
	}
	var v struct{ N *int }
	if err := json.Unmarshal(text, &v); err != nil || v.N == nil || finish != wire.FinishStop {
		t.Fatalf("constrained output %q (finish %v) does not validate: %v", text, finish, err)
	}
	if rest, finish := drain(t, free); finish != wire.FinishLength || 1+n+len(rest) != 500 {
		t.Fatalf("free stream: %d tokens, finish %v", 1+n+len(rest), finish)
	}
}

// TestAbortWhileCompiling: a request aborted while its constraint
// compiles leaves the engine at once, and the compile's result, when it
// comes, adds nothing (it is only cached).
func TestAbortWhileCompiling(t *testing.T) {
	c, h, _ := heldEngine(t)
	g, err := c.Generate(context.Background(), []int32{5, 6, 7, 8}, schemaParams(), "doomed")
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, h)
	g.Close() // ABORT
	if st := stats(t, c); st.NumWaitingReqs != 0 || st.NumRunningReqs != 0 {
		t.Fatalf("after the abort, compile still held: %d running, %d waiting", st.NumRunningReqs, st.NumWaitingReqs)
	}
	close(h.release)
	// The same schema again: a cache hit once the result is in (or it
	// joins the compile): either way, when it ends the result was taken.
	again, err := c.Generate(context.Background(), []int32{5, 6, 7, 8}, schemaParams(), "again")
	if err != nil {
		t.Fatal(err)
	}
	if _, finish := drain(t, again); finish != wire.FinishStop {
		t.Fatalf("again: finish %v", finish)
	}
	if got := h.returned.Load(); got != 1 {
		t.Errorf("%d compiles, want 1 (the second request reuses the first's)", got)
	}
	waitIdle(t, c, 5*time.Second) // the aborted request never came back
}

// TestCompileErrorAfterTheWait: a constraint that fails to compile on
// the worker finishes its request with the error, naming the keyword.
func TestCompileErrorAfterTheWait(t *testing.T) {
	c, h, _ := heldEngine(t)
	close(h.release)
	p := schemaParams()
	p.StructuredOutputs = &wire.StructuredOutputs{Regex: `(?<=a)b`}
	g, err := c.Generate(context.Background(), []int32{5, 6, 7, 8}, p, "bad")
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, h)
	o := next(t, g)
	msg, _ := o.StopReason.(string)
	if o.FinishReason != wire.FinishError || msg == "" {
		t.Fatalf("finish %v %q, want an error", o.FinishReason, msg)
	}
	t.Logf("refused: %s", msg)
}

// TestShutdownWhileCompiling: Serve returns only once the compile it was
// running has returned: no worker outlives the engine.
func TestShutdownWhileCompiling(t *testing.T) {
	c, h, stop := heldEngine(t)
	g, err := c.Generate(context.Background(), []int32{5, 6, 7, 8}, schemaParams(), "pending")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	waitStarted(t, h)
	go func() {
		time.Sleep(10 * time.Millisecond) // not an assertion: lets stop begin while the compile is held
		close(h.release)
	}()
	stop()
	if got := h.returned.Load(); got != 1 {
		t.Fatalf("Serve returned with %d compiles returned, want 1", got)
	}
}
