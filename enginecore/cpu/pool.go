package cpu

import "sync"

// job is one parallel operation. Worker w of numWorkers does its share;
// how work is split is up to the job, and must not change any result
// (each output element is computed by exactly one worker, the same way
// whatever the split), so results do not depend on the thread count.
type job interface {
	run(w, numWorkers int)
}

// pool is a persistent set of worker goroutines. The caller of do is
// worker 0, so a pool of one thread runs everything inline.
type pool struct {
	numWorkers int
	tasks      []chan job // [numWorkers-1] one per extra worker goroutine
	wg         sync.WaitGroup
}

func newPool(numWorkers int) *pool {
	p := &pool{numWorkers: numWorkers}
	for w := 1; w < numWorkers; w++ {
		ch := make(chan job)
		p.tasks = append(p.tasks, ch)
		go func() {
			for j := range ch {
				j.run(w, numWorkers)
				p.wg.Done()
			}
		}()
	}
	return p
}

// do runs j on every worker and returns when all are done. Sending an
// interface holding a pointer allocates nothing.
func (p *pool) do(j job) {
	p.wg.Add(len(p.tasks))
	for _, ch := range p.tasks {
		ch <- j
	}
	j.run(0, p.numWorkers)
	p.wg.Wait()
}

// close stops the worker goroutines; do must not be called afterwards.
func (p *pool) close() {
	for _, ch := range p.tasks {
		close(ch)
	}
	p.tasks = nil
}
