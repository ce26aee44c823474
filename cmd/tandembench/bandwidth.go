package main

import (
	"math"
	"sync"
	"time"
)

// Bandwidth is the DRAM read bandwidth measured in the run: a streaming
// read of a buffer much larger than the last-level cache, by 1 and by 2
// threads, best of several passes (decode at batch 1 reads every weight
// once per token, so tok/s × bytes per token can at best reach it).
type Bandwidth struct {
	BufferBytes int64 `json:"buffer_bytes"`
	Passes      int   `json:"passes"`
	// GBps maps a thread count to the best pass, in 1e9 bytes/s.
	GBps   map[int]float64 `json:"gb_per_s"`
	Kernel string          `json:"kernel"` // the read loop: "avx2" or "go"
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

// measureBandwidth reads a buffer of size bytes (rounded down to whole
// 4 KiB pages) passes times per thread count, each thread a contiguous
// share, and keeps the best pass of each.
func measureBandwidth(size int64, threads []int, passes int) *Bandwidth {
	size = size &^ 4095
	buf := make([]uint64, size/8)
	for i := range buf { // touch every page, so that no pass faults them in
		buf[i] = uint64(i)
	}
	b := &Bandwidth{BufferBytes: size, Passes: passes, GBps: map[int]float64{}, Kernel: readKernel}
	var sink uint64
	for _, t := range threads {
		best := math.Inf(1)
		for range passes {
			sums := make([]uint64, t)
			var wg sync.WaitGroup
			start := time.Now()
			share := len(buf) / t &^ 31
			for i := range t {
				part := buf[i*share : (i+1)*share]
				wg.Go(func() { sums[i] = readSum(part) })
			}
			wg.Wait()
			best = min(best, time.Since(start).Seconds())
			for _, s := range sums {
				sink += s
			}
			bytes := float64(share*t) * 8
			b.GBps[t] = max(b.GBps[t], bytes/best/1e9)
		}
	}
	bandwidthSink = sink
	return b
}

// bandwidthSink keeps the sums alive.
var bandwidthSink uint64

// readSumGo folds b (len a multiple of 32) with 8 independent chains.
func readSumGo(b []uint64) uint64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 uint64
	for i := 0; i+32 <= len(b); i += 32 {
		c := b[i : i+32 : i+32]
		a0 ^= c[0] ^ c[8] ^ c[16] ^ c[24]
		a1 ^= c[1] ^ c[9] ^ c[17] ^ c[25]
		a2 ^= c[2] ^ c[10] ^ c[18] ^ c[26]
		a3 ^= c[3] ^ c[11] ^ c[19] ^ c[27]
		a4 ^= c[4] ^ c[12] ^ c[20] ^ c[28]
		a5 ^= c[5] ^ c[13] ^ c[21] ^ c[29]
		a6 ^= c[6] ^ c[14] ^ c[22] ^ c[30]
		a7 ^= c[7] ^ c[15] ^ c[23] ^ c[31]
	}
	return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7
}
