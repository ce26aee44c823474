package cpu

import (
	"testing"
	"time"
)

// countJob records which workers ran it.
type countJob struct{ ran []int }

func (j *countJob) run(w, n int) { j.ran[w]++ }

// TestPoolRunsEveryWorkerOnce dispatches jobs back to back and after idle
// gaps (so workers both spin and park), cold and hot, checking that every worker runs
// every job exactly once and that do returns only after all did.
func TestPoolRunsEveryWorkerOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		p := newPool(threads)
		j := &countJob{ran: make([]int, threads)}
		const rounds = 300
		for i := range rounds {
			if i%50 == 0 {
				time.Sleep(time.Millisecond) // let the workers park (or, hot, run out of rounds)
			}
			switch i { // cold, then hot from round 100 to 199, then cold
			case 100:
				p.begin()
			case 200:
				p.end()
			}
			p.do(j)
			for w, n := range j.ran {
				if n != i+1 {
					t.Fatalf("threads=%d round %d: worker %d ran %d times", threads, i, w, n)
				}
			}
		}
		p.close()
	}
}

type nopJob struct{}

func (nopJob) run(w, n int) {}

// spinJob burns about n loop iterations per worker.
type spinJob struct {
	n   int
	out [2]int
}

func (j *spinJob) run(w, n int) {
	s := 0
	for i := range j.n {
		s += i ^ s
	}
	j.out[w%2] = s
}

// BenchmarkPoolDo times a dispatch to two threads: empty, and with about
// 10 µs of work per worker plus as much serial work between dispatches
// (like a decode step's matmuls and norms).
func BenchmarkPoolDo(b *testing.B) {
	p := newPool(2)
	defer p.close()
	b.Run("empty", func(b *testing.B) {
		for b.Loop() {
			p.do(nopJob{})
		}
	})
	b.Run("work=10us", func(b *testing.B) {
		j := &spinJob{n: 10000}
		for b.Loop() {
			p.do(j)
			j.run(0, 1)
		}
	})
}
