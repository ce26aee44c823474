package cpu

import (
	"sync"
	"sync/atomic"
)

// job is one parallel operation. Worker w of numWorkers does its share;
// how work is split is up to the job, and must not change any result
// (each output element is computed by exactly one worker, the same way
// whatever the split), so results do not depend on the thread count.
type job interface {
	run(w, numWorkers int)
}

// Waiting is a short spin, then a block. A decode step dispatches ~6
// jobs per layer, microseconds apart, and waking a parked goroutine costs
// microseconds, so an idle worker polls for the next job spinPolls times
// (about a microsecond) before it parks, and do polls as long for its
// workers before it blocks. The spin is short on purpose: a spinning
// thread on a busy machine (the frontend process shares the cores) burns
// the time slice that the thread it waits for needs. Measured with two
// compute threads and one other busy process on 2 cores (SmolLM2-135M
// decode): 20 µs spins ran at 65 tok/s, 1 µs spins at 115, plain channels
// at 111; on an idle machine longer spins saved ~6 µs per dispatch.
const spinPolls = 512

// pool is a persistent set of worker goroutines. The caller of do is
// worker 0, so a pool of one thread runs everything inline.
type pool struct {
	numWorkers int
	job        job           // the current job; written by do before gen is bumped
	gen        atomic.Uint64 // dispatch generation: bumped once per do
	pending    atomic.Int32  // workers that have not finished the current job
	closed     atomic.Bool
	sleeping   []atomic.Bool   // [numWorkers] worker parked on wake
	wake       []chan struct{} // [numWorkers] capacity 1
	waiting    atomic.Bool     // do is blocked on done
	done       chan struct{}   // capacity 1: the last worker's wake-up call to do
	wg         sync.WaitGroup
}

func newPool(numWorkers int) *pool {
	p := &pool{
		numWorkers: numWorkers,
		sleeping:   make([]atomic.Bool, numWorkers),
		wake:       make([]chan struct{}, numWorkers),
		done:       make(chan struct{}, 1),
	}
	for w := 1; w < numWorkers; w++ {
		p.wake[w] = make(chan struct{}, 1)
		p.wg.Add(1)
		go p.worker(w)
	}
	return p
}

func (p *pool) worker(w int) {
	defer p.wg.Done()
	var seen uint64
	for {
		g, ok := p.next(w, seen)
		if !ok {
			return
		}
		seen = g
		p.job.run(w, p.numWorkers)
		if p.pending.Add(-1) == 0 && p.waiting.Load() {
			select {
			case p.done <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// next waits for a generation other than seen: it polls, then parks until
// do wakes it. ok is false once the pool is closed.
func (p *pool) next(w int, seen uint64) (gen uint64, ok bool) {
	for {
		for range spinPolls {
			if g := p.gen.Load(); g != seen {
				return g, !p.closed.Load()
			}
		}
		// Park. do bumps gen before it reads sleeping, and we set sleeping
		// before we re-read gen, so one of us sees the other.
		p.sleeping[w].Store(true)
		if p.gen.Load() == seen {
			<-p.wake[w]
		}
		p.sleeping[w].Store(false)
	}
}

// minParallelWork is the work (multiply-adds) below which a job runs on the
// caller alone: a dispatch costs several microseconds (waking a parked
// worker, then waiting for it), which a smaller job does not win back.
// SmolLM2-135M decode at 2 threads (1 token): 1<<20 ran at 132–159 tok/s,
// 1<<22 at 191–200 (only the LM head is split), always splitting at
// 119–125, 1 thread at 184.
const minParallelWork = 1 << 22

// run runs j on every worker, or on the caller alone when work (in
// multiply-adds) is below minParallelWork. Results are the same either way.
func (p *pool) run(j job, work int) {
	if work < minParallelWork {
		j.run(0, 1)
		return
	}
	p.do(j)
}

// do runs j on every worker and returns when all are done. It allocates
// nothing.
func (p *pool) do(j job) {
	if p.numWorkers > 1 {
		p.job = j
		p.pending.Store(int32(p.numWorkers - 1))
		p.gen.Add(1)
		p.wakeSleepers()
	}
	j.run(0, p.numWorkers)
	p.wait()
	p.job = nil
}

// wait returns once every worker has finished the current job: it polls,
// then blocks until the last worker signals done. A stale signal only
// makes it look again.
func (p *pool) wait() {
	for range spinPolls {
		if p.pending.Load() == 0 {
			return
		}
	}
	p.waiting.Store(true)
	for p.pending.Load() != 0 {
		<-p.done
	}
	p.waiting.Store(false)
}

func (p *pool) wakeSleepers() {
	for w := 1; w < p.numWorkers; w++ {
		if p.sleeping[w].Load() {
			select {
			case p.wake[w] <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

// close stops the worker goroutines and waits for them; do must not be
// called afterwards.
func (p *pool) close() {
	p.closed.Store(true)
	p.gen.Add(1)
	p.wakeSleepers()
	p.wg.Wait()
}
