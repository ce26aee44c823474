package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// job is one parallel operation. Worker w of numWorkers does its share;
// how work is split is up to the job, and must not change any result
// (each output element is computed by exactly one worker, the same way
// whatever the split), so results do not depend on the thread count.
type job interface {
	run(w, numWorkers int)
}

// Waiting outside a forward pass is a short spin, then a block. A decode step dispatches ~6
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

// hotRounds bounds a hot wait: after that many spin-and-yield rounds
// (~100 µs) a thread parks after all, so a partner descheduled by other
// load does not keep this one polling for a whole time slice.
const hotRounds = 64

// Between begin and end (one forward pass) the pool is hot: waiting
// threads park only after hotRounds. A forward pass dispatches hundreds of jobs a few
// microseconds apart with serial work (norms, RoPE) between them, longer
// than the short spin, so parked workers were woken hundreds of times a
// step, each wake-up costing more than the job share it bought; decode
// then ran no faster on two threads than on one. Hot threads poll as
// llama.cpp's threads do, but every spinPolls polls they yield the CPU
// (runtime.Gosched for this process's goroutines, sched_yield for other
// processes), so a busy machine loses one poll period, not a time slice.
// With two `yes` processes on the same 2 cores, hot decode at 2 threads
// ran as fast as the cold pool's (52–55 tok/s against 52).

// pool is a persistent set of worker goroutines. The caller of do is
// worker 0, so a pool of one thread runs everything inline.
type pool struct {
	numWorkers int
	hot        atomic.Bool   // between begin and end: waiters spin and yield (see hotRounds)
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
		for rounds := 0; ; rounds++ {
			for range spinPolls {
				if g := p.gen.Load(); g != seen {
					return g, !p.closed.Load()
				}
			}
			if !p.hot.Load() || rounds >= hotRounds {
				break
			}
			yield()
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
// caller alone. In a hot pool (every job is dispatched inside a forward
// pass) a dispatch costs well under a microsecond, so nearly every matmul
// of a decode step is split: each thread then streams its share of the
// weights, and decode, bound by memory bandwidth, scales with threads.
// SmolLM2-135M-shaped decode, 1 token, AVX2 EPYC, best of 6 rounds in one
// process: 1 thread 60 tok/s; 2 threads splitting from 1<<22 (only the LM
// head) 72, from 1<<17 103, from 1<<15 104; a cold pool splitting from
// 1<<15 68 (each wake-up costs more than the share it buys).
const minParallelWork = 1 << 15

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
	for rounds := 0; ; rounds++ {
		for range spinPolls {
			if p.pending.Load() == 0 {
				return
			}
		}
		if !p.hot.Load() || rounds >= hotRounds {
			break
		}
		yield()
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

// begin makes the pool hot until end: call it around a burst of jobs
// (a forward pass).
func (p *pool) begin() {
	if p.numWorkers > 1 {
		p.hot.Store(true)
		p.wakeSleepers()
	}
}

// end lets idle workers park again.
func (p *pool) end() { p.hot.Store(false) }

// yield gives the CPU to any other runnable goroutine of this process,
// then to any other thread waiting for this core.
func yield() {
	runtime.Gosched()
	syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
}

// close stops the worker goroutines and waits for them; do must not be
// called afterwards.
func (p *pool) close() {
	p.closed.Store(true)
	p.gen.Add(1)
	p.wakeSleepers()
	p.wg.Wait()
}
