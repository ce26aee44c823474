package main

import (
	"bytes"
	"slices"
	"sync"
	"time"
)

// Bandwidth is the DRAM read bandwidth measured in the run: a streaming
// read of a buffer much larger than the last-level cache, by 1 and by 2
// threads, best of several passes (decode at batch 1 reads every weight
// once per token, so tok/s × bytes per token can at best reach it).
type Bandwidth struct {
	BufferBytes int64 `json:"buffer_bytes"`
	Passes      int   `json:"passes"` // per thread count, at the phase's start and end together
	// GBps maps a thread count to the best pass, in 1e9 bytes/s.
	GBps   map[int]float64 `json:"gb_per_s"`
	Kernel string          `json:"kernel"` // the read loop (readKernel)
}

// of is the bandwidth for threads (the largest measured count not above
// it), 0 when none was measured.
func (b *Bandwidth) of(threads int) float64 {
	if b == nil {
		return 0
	}
	best, at := 0.0, 0
	for t, v := range b.GBps {
		if t <= threads && t > at {
			best, at = v, t
		}
	}
	return best
}

// readKernel names the read loop: bytes.IndexByte looking for a byte
// the buffer lacks, the runtime's vectorized (AVX2 on amd64) scan, which
// reads each cache line once and writes nothing.
const readKernel = "bytes.IndexByte"

// measureBandwidth reads a zeroed buffer of size bytes (rounded down to
// whole 4 KiB pages) passes times per thread count, each thread a
// contiguous share, and keeps the best pass of each.
func measureBandwidth(size int64, threads []int, passes int) *Bandwidth {
	size = size &^ 4095
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 { // fault every page in before timing
		buf[i] = 0
	}
	b := &Bandwidth{BufferBytes: size, Passes: passes, GBps: map[int]float64{}, Kernel: readKernel}
	for _, t := range threads {
		share := len(buf) / t &^ 4095
		for range passes {
			found := make([]int, t)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range t {
				part := buf[i*share : (i+1)*share]
				wg.Go(func() { found[i] = bytes.IndexByte(part, 1) })
			}
			wg.Wait()
			took := time.Since(start).Seconds()
			if slices.Max(found) >= 0 {
				panic("tandembench: the bandwidth buffer is not zero")
			}
			b.GBps[t] = max(b.GBps[t], float64(share*t)/took/1e9)
		}
	}
	return b
}

// merge keeps the better of b's and o's bandwidth per thread count (the
// phase measures at its start and its end: other work on the machine
// only lowers a measure).
func (b *Bandwidth) merge(o *Bandwidth) {
	for t, v := range o.GBps {
		b.GBps[t] = max(b.GBps[t], v)
	}
	b.Passes += o.Passes
}
