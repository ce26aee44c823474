//go:build cuda

package cuda

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/gpu/cuda/emu"
)

// TestBenchOnEmulator runs every benchmark suite on the emulator with
// tiny shapes, so that the GPU check's benchmark code is known to run
// before GPU time is spent on it (timings are wall clock, meaningless).
func TestBenchOnEmulator(t *testing.T) {
	wall := func(warm, reps int, fn func() error) (float64, error) {
		start := time.Now()
		for range warm + reps {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(start).Microseconds()) / 1000 / float64(warm+reps), nil
	}
	open := func() (device, error) { return emu.New(2 << 30), nil }
	dev, _ := open()
	defer dev.Close()
	bn := &bencher{dev: dev, open: open, time: wall, shapes: benchShapes{
		copyBytes: 1 << 20, gemm: []int{64}, tokens: 8, dim: 256, ffn: 512, heads: 4, kvHeads: 2, headDim: 64,
		attnBatches: []int{2}, attnContexts: []int{100},
	}}
	cfg := model.Config{Name: "tiny", Arch: "llama", VocabSize: 300, Dim: 128, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		HeadDim: 32, FFNDim: 256, RopeTheta: 10000, NormEps: 1e-5, MaxContextLen: 512, TiedEmbeddings: true}
	w, err := RandomBF16(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func(c int) { prefillChunk = c }(prefillChunk)
	prefillChunk = 32 // the 70-token prompt in three steps
	var lines []string
	res, err := bn.run(context.Background(), BenchOptions{
		Suites: []string{"ceilings", "kernels", "decode", "prefill"}, Models: []BenchModel{{Name: "tiny", Cfg: cfg, W: w}},
		Batches: []int{1, 3}, Context: 40, Steps: 3, Prompt: 70,
		Log: func(f string, a ...any) { lines = append(lines, f); t.Logf(f, a...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range res {
		count[r.Suite]++
		if !(r.Value > 0) || !(r.Median > 0) {
			t.Errorf("%s %s: value %v %s in %v ms", r.Suite, r.Name, r.Value, r.Unit, r.Median)
		}
		if r.Suite == "decode" && !(r.Extra["fraction_of_bound"] > 0) {
			t.Errorf("%s: fraction of bound %v", r.Name, r.Extra["fraction_of_bound"])
		}
	}
	if count["ceilings"] != 2 || count["kernels"] != 6 || count["decode"] != 2 || count["prefill"] != 1 {
		t.Errorf("results per suite %v, want 2 ceilings, 6 kernels, 2 decode, 1 prefill", count)
	}
	if len(lines) != len(res) {
		t.Errorf("%d log lines for %d results:\n%s", len(lines), len(res), strings.Join(lines, "\n"))
	}
}
