package enginecore

import (
	"runtime"
	"sync"
)

// compilers is the shell's pool of compile workers: the goroutines that
// run the Engine's compile jobs (NextCompile) off the loop and send their
// results back to it (Engine.Compiled). The loop is its only caller;
// sends never block, because no more jobs are out than there are
// workers, and each result has a buffered slot.
type compilers struct {
	jobs    chan CompileJob    // loop → workers
	results chan CompileResult // workers → loop
	idle    int                // workers without a job; loop only
	wg      sync.WaitGroup
}

// numCompileWorkers is how many constraints compile at once: half the
// CPUs, one or two. The compiles share the CPUs with the forward pass;
// more at once would slow every stream for a burst of new schemas.
func numCompileWorkers() int { return min(2, max(1, runtime.GOMAXPROCS(0)/2)) }

func startCompilers(n int) *compilers {
	p := &compilers{jobs: make(chan CompileJob, n), results: make(chan CompileResult, n), idle: n}
	p.wg.Add(n)
	for range n {
		go func() {
			defer p.wg.Done()
			for j := range p.jobs {
				p.results <- j.Run()
			}
		}()
	}
	return p
}

// dispatch hands the engine's queued compiles to the idle workers.
func (p *compilers) dispatch(e *Engine) {
	for p.idle > 0 {
		j, ok := e.NextCompile()
		if !ok {
			return
		}
		p.idle--
		p.jobs <- j
	}
}

// done notes that a result was taken from results.
func (p *compilers) done() { p.idle++ }

// stop waits for the workers to finish the compiles they are running (a
// compile in C cannot be interrupted) and frees what they compiled.
func (p *compilers) stop() {
	close(p.jobs)
	p.wg.Wait()
	close(p.results)
	for r := range p.results {
		if r.Matcher != nil {
			r.Matcher.Close()
		}
	}
}
