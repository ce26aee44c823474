package kvcache

import (
	"fmt"
	"testing"
)

func newBenchManager(b *testing.B, numBlocks, blockSize int) *Manager {
	b.Helper()
	m, err := New(Config{NumBlocks: numBlocks, BlockSize: blockSize, EnablePrefixCaching: true})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkAllocateFree allocates a request's blocks and frees them again,
// in a pool whose other blocks are all cached (so hashless blocks come
// first and cached ones stay resident).
func BenchmarkAllocateFree(b *testing.B) {
	const blockSize = 16
	for _, numBlocks := range []int{1, 32, 256} {
		b.Run(fmt.Sprint("blocks=", numBlocks), func(b *testing.B) {
			m := newBenchManager(b, 4096, blockSize)
			warm := tokens(0, 2048*blockSize)
			m.Lookup("warm", warm, "", "S", Adapter{})
			m.Allocate("warm", len(warm))
			m.Commit("warm", warm, len(warm))
			m.Free("warm")
			for b.Loop() {
				if !m.Allocate("r", numBlocks*blockSize) {
					b.Fatal("Allocate failed")
				}
				m.Free("r")
			}
		})
	}
}

// BenchmarkLookup finds (and releases) a cached prefix: hashing every block
// of the prompt and pinning the hits.
func BenchmarkLookup(b *testing.B) {
	const blockSize = 16
	for _, numTokens := range []int{1024, 8192} {
		b.Run(fmt.Sprint("tokens=", numTokens), func(b *testing.B) {
			m := newBenchManager(b, 4096, blockSize)
			prompt := tokens(0, numTokens)
			m.Lookup("a", prompt, "salt", "S", Adapter{})
			m.Allocate("a", len(prompt))
			m.Commit("a", prompt, len(prompt))
			m.Free("a")
			want := (numTokens - 1) / blockSize * blockSize
			for b.Loop() {
				if got := m.Lookup("b", prompt, "salt", "S", Adapter{}); got != want {
					b.Fatalf("Lookup = %d, want %d", got, want)
				}
				m.Free("b")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(numTokens/blockSize), "ns/block")
		})
	}
}
