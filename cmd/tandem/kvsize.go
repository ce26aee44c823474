package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/tandem-llm/tandem/enginecore/runner"
)

// defaultKVShare is the share of available memory the KV cache takes when
// --kv-cache-memory is not given.
const defaultKVShare = 0.25

// kvBlocks sizes the KV pool from --kv-cache-memory or the default share of
// MemAvailable, capped at what max-num-seqs requests of max-model-len
// tokens can use, and logs the result.
func kvBlocks(f engineFlags, be runner.Backend, log *slog.Logger) (int, error) {
	perBlock := be.KVBytesPerBlock(f.blockSize) // bytes
	blocksPerSeq := (f.maxModelLen + f.blockSize - 1) / f.blockSize
	maxUseful := blocksPerSeq * f.maxNumSeqs
	var budget int64 // bytes
	if f.kvCacheMemory != "" {
		b, err := parseBytes(f.kvCacheMemory)
		if err != nil {
			return 0, fmt.Errorf("--kv-cache-memory: %w", err)
		}
		budget = b
	} else {
		avail, err := memAvailable()
		if err != nil {
			return 0, fmt.Errorf("engine: sizing the KV cache: %w (set --kv-cache-memory)", err)
		}
		budget = int64(float64(avail) * defaultKVShare)
	}
	n := int(budget / perBlock)
	if f.kvCacheMemory == "" && n > maxUseful {
		n = maxUseful
	}
	if n < 1 {
		return 0, fmt.Errorf("engine: --kv-cache-memory %d bytes holds no KV block (one block of %d tokens takes %d bytes)", budget, f.blockSize, perBlock)
	}
	tokens := n * f.blockSize
	log.Info("KV cache sized",
		"blocks", n, "block_size", f.blockSize, "tokens", tokens,
		"mib", float64(int64(n)*perBlock)/(1<<20),
		"max_concurrency_at_max_model_len", float64(tokens)/float64(f.maxModelLen))
	return n, nil
}

// parseBytes reads "1073741824", "512M", "2G", "64Mi", "1.5GiB".
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b"))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a byte size", s)
	}
	return int64(v * mult), nil
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no MemAvailable in /proc/meminfo")
}
