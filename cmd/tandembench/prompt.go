package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// promptRule describes promptIDs for the report.
const promptRule = "random token ids: splitmix64 seeded with %d, id = lo + x mod (hi − lo), hi = min(30000, V), lo = 100; " +
	"stream s takes ids [s·P, (s+1)·P); the same ids go to both engines (llama.cpp through --prompt-file)"

// splitmix64 is the generator shared with scripts/llamabench/bench.c.
func splitmix64(state *uint64) uint64 {
	*state += 0x9E3779B97F4A7C15
	z := *state
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// promptIDs returns streams prompts of n token ids each ([streams][n]),
// drawn in order from splitmix64(seed) as bench.c does: ids in [100,
// min(30000, vocab)), or [0, vocab) for a vocabulary of ≤ 100 tokens.
func promptIDs(seed uint64, streams, n, vocab int) [][]int32 {
	hi := uint64(min(30000, vocab))
	lo := uint64(100)
	if hi <= lo {
		lo = 0
	}
	st := seed
	out := make([][]int32, streams)
	for s := range out {
		out[s] = make([]int32, n)
		for i := range out[s] {
			out[s][i] = int32(lo + splitmix64(&st)%(hi-lo))
		}
	}
	return out
}

// writePromptFile writes prompts as whitespace-separated ids, one stream
// per line, for bench.c's --prompt-file.
func writePromptFile(path string, prompts [][]int32) error {
	var b strings.Builder
	for _, p := range prompts {
		for i, id := range p {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write prompt file: %w", err)
	}
	return nil
}
