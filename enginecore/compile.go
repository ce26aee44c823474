package enginecore

import (
	"errors"
	"slices"
	"time"

	"github.com/tandem-llm/tandem/enginecore/sched"
	"github.com/tandem-llm/tandem/enginecore/structured"
	"github.com/tandem-llm/tandem/wire"
)

// Compiling off the step loop: a request whose constraint is not in the
// compile cache waits in the engine's holding area (not in the
// scheduler, so it holds no KV blocks and no step waits for it) while
// the shell compiles the constraint on a worker goroutine:
//
//	ADD (cache miss) → holding area; the constraint is queued once,
//	                   however many requests wait on it
//	NextCompile      → the shell hands the job to an idle worker
//	job.Run()        → on the worker: Compiler.Compile
//	Compiled(result) → on the loop: cache it, then add each waiting
//	                   request to the scheduler with a copy (or finish
//	                   each with the compile's error)
//
// An ABORT or a silent frontend takes a request out of the holding area;
// a constraint nobody waits for any more is not compiled if its job was
// not handed out yet, and is only cached if it was.

// Compiler compiles a constraint into a fresh matcher. It must be safe
// for concurrent use: the shell calls it from its compile workers.
// *structured.Vocab is the engine's.
type Compiler interface {
	Compile(structured.Constraint) (*structured.Matcher, error)
}

// CompileJob is a constraint requests are waiting on. Run may be called
// on any goroutine; its result goes back to Engine.Compiled on the
// engine's.
type CompileJob struct {
	Constraint structured.Constraint
	compiler   Compiler
}

// Run compiles the job's constraint.
func (j CompileJob) Run() CompileResult {
	m, err := j.compiler.Compile(j.Constraint)
	return CompileResult{Constraint: j.Constraint, Matcher: m, Err: err}
}

// CompileResult is a finished compile: a pristine matcher, or the error.
type CompileResult struct {
	Constraint structured.Constraint
	Matcher    *structured.Matcher // nil when Err is set; Compiled takes it over
	Err        error
}

// holding is the requests waiting for their constraint to compile.
type holding struct {
	reqs    map[string]*held                          // by request key
	pending map[structured.Constraint]*pendingCompile // constraints being waited on
	queue   []structured.Constraint                   // pending ones not handed out yet, oldest first
}

type held struct {
	req *sched.Request
	c   structured.Constraint
}

type pendingCompile struct {
	waiters []string // request keys, in ADD order
	started bool     // handed out by NextCompile: its result will come
}

func newHolding() *holding {
	return &holding{reqs: map[string]*held{}, pending: map[structured.Constraint]*pendingCompile{}}
}

// hold parks r until c is compiled, queueing c unless it already is.
func (h *holding) hold(r *sched.Request, c structured.Constraint) {
	h.reqs[r.ID] = &held{req: r, c: c}
	p := h.pending[c]
	if p == nil {
		p = &pendingCompile{}
		h.pending[c] = p
		h.queue = append(h.queue, c)
	}
	p.waiters = append(p.waiters, r.ID)
}

// release takes the request of key out of the holding area (nil if it
// is not there). A constraint left without waiters before its job was
// handed out is dropped from the queue.
func (h *holding) release(key string) *sched.Request {
	w := h.reqs[key]
	if w == nil {
		return nil
	}
	delete(h.reqs, key)
	p := h.pending[w.c]
	p.waiters = slices.DeleteFunc(p.waiters, func(k string) bool { return k == key })
	if len(p.waiters) == 0 && !p.started {
		delete(h.pending, w.c)
		h.queue = slices.DeleteFunc(h.queue, func(c structured.Constraint) bool { return c == w.c })
	}
	return w.req
}

// NextCompile hands out the oldest queued compile (ok false when none is
// queued). The shell runs it and gives the result to Compiled.
func (e *Engine) NextCompile() (job CompileJob, ok bool) {
	h := e.holding
	if len(h.queue) == 0 {
		return CompileJob{}, false
	}
	c := h.queue[0]
	h.queue = h.queue[1:]
	h.pending[c].started = true
	return CompileJob{Constraint: c, compiler: e.compiler}, true
}

// NumCompiling is the number of requests waiting for a compile.
func (e *Engine) NumCompiling() int { return len(e.holding.reqs) }

// Compiled takes a finished compile: the requests waiting on it go to
// the scheduler, each with its own copy of the matcher, or finish with
// the compile's error (FinishError, as a refused ADD). The matcher is
// kept in the compile cache.
func (e *Engine) Compiled(now time.Time, res CompileResult) []Out {
	e.clock = now
	h := e.holding
	p := h.pending[res.Constraint]
	if p == nil || !p.started { // not handed out by NextCompile: not ours
		if res.Matcher != nil {
			res.Matcher.Close()
		}
		return nil
	}
	delete(h.pending, res.Constraint)
	if res.Err == nil && res.Matcher == nil {
		res.Err = errors.New("enginecore: the compiler returned no matcher")
	}
	var outs []Out
	for _, key := range p.waiters {
		w := h.reqs[key]
		delete(h.reqs, key)
		if res.Err != nil {
			outs = append(outs, e.reject(now, w.req.Client, w.req.WireID, wire.CodeInvalidRequest, res.Err.Error()))
			continue
		}
		if out, refused := e.admit(now, w.req, e.newConstraint(res.Matcher.Clone())); refused {
			outs = append(outs, out)
		}
	}
	if res.Matcher != nil {
		e.compiled.Put(res.Constraint, res.Matcher)
	}
	return outs
}
