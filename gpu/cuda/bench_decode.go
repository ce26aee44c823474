//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// backend opens a device of its own and builds m's backend on it
// (closing the backend closes the device).
func (bn *bencher) backend(m BenchModel) (*Backend, error) {
	dev, err := bn.open()
	if err != nil {
		return nil, err
	}
	be, err := newBackend(dev, m.Cfg, m.W)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return be, nil
}

// decodeAll times decode steps of every model at every batch size.
func (bn *bencher) decodeAll(ctx context.Context, o BenchOptions) error {
	for _, m := range o.Models {
		for _, batch := range o.Batches {
			if err := bn.decode(ctx, o, m, batch); err != nil {
				return fmt.Errorf("%s batch %d: %w", m.Name, batch, err)
			}
		}
	}
	return nil
}

// decode prefills batch sequences to o.Context tokens, then times o.Steps
// decode steps (one token per sequence, logits for all of them) and also
// steps that want logits for one sequence only (the cost of copying the
// logits back). The bound is the bytes a step must read (bf16 weights and
// the KV cache) at the measured copy bandwidth.
func (bn *bencher) decode(ctx context.Context, o BenchOptions, m BenchModel, batch int) error {
	be, err := bn.backend(m)
	if err != nil {
		return err
	}
	defer be.Close()
	const bs = 16
	total := o.Context + o.Steps*2 + 4
	blocksPer := ceilDiv(total, bs)
	if err := be.AllocateKV(batch*blocksPer, bs); err != nil {
		return err
	}
	if _, err := be.KVBudget(0.9, 2048, batch); err != nil { // reserve scratch like the engine
		return err
	}
	seqs := make([]runner.Seq, batch)
	tables := make([][]int32, batch)
	for i := range tables {
		tables[i] = make([]int32, blocksPer)
		for j := range tables[i] {
			tables[i][j] = int32(i*blocksPer + j)
		}
	}
	lens := make([]int, batch) // tokens in the cache per sequence
	vocab := m.Cfg.VocabSize
	logits := make([]float32, batch*vocab)
	// step appends n tokens to each sequence (with logits for the first
	// numLogits sequences).
	step := func(n, numLogits int) error {
		var st runner.Step
		for i := range batch {
			seqs[i] = runner.Seq{Start: len(st.TokenIDs), Len: n, ContextLen: lens[i] + n, BlockTable: tables[i], Logits: i < numLogits}
			for p := lens[i]; p < lens[i]+n; p++ {
				st.TokenIDs = append(st.TokenIDs, int32((p*7919+i)%vocab))
				st.Positions = append(st.Positions, int32(p))
				st.SlotMapping = append(st.SlotMapping, tables[i][p/bs]*bs+int32(p%bs))
			}
			lens[i] += n
		}
		st.Seqs = seqs
		return be.Forward(ctx, &st, logits)
	}
	// Prefill in chunks of about 2048 tokens.
	chunk := max(1, 2048/batch)
	for lens[0] < o.Context {
		if err := step(min(chunk, o.Context-lens[0]), 0); err != nil {
			return err
		}
	}
	timeSteps := func(numLogits int) (float64, error) {
		for range 2 { // warm-up
			if err := step(1, numLogits); err != nil {
				return 0, err
			}
		}
		ms := make([]float64, o.Steps)
		for i := range ms {
			start := time.Now()
			if err := step(1, numLogits); err != nil {
				return 0, err
			}
			ms[i] = float64(time.Since(start).Microseconds()) / 1000
		}
		slices.Sort(ms)
		return ms[len(ms)/2], nil
	}
	msAll, err := timeSteps(batch)
	if err != nil {
		return err
	}
	msOne, err := timeSteps(1)
	if err != nil {
		return err
	}
	c := m.Cfg
	qd, kvd := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	weights := float64(c.NumLayers)*float64(c.Dim*(qd+2*kvd)+qd*c.Dim+3*c.Dim*c.FFNDim)*2 + float64(c.VocabSize*c.Dim)*2
	kvRead := float64(batch) * float64(o.Context) * float64(c.NumLayers) * float64(kvd) * 2 * 2
	bound := (weights + kvRead) / (bn.copyBW / 2) / 1e6 // ms at the read half of the copy bandwidth
	if bn.copyBW == 0 {
		bound = math.NaN()
	}
	bn.add(BenchResult{Suite: "decode", Name: fmt.Sprintf("%s batch=%d ctx=%d", m.Name, batch, o.Context),
		Value: float64(batch) / msAll * 1000, Unit: "tok/s", Median: msAll,
		Extra: map[string]float64{
			"ms_step_one_logits_row": msOne,
			"bound_ms":               bound,
			"fraction_of_bound":      bound / msAll,
			"fraction_of_bound_one":  bound / msOne,
			"weights_gb":             weights / 1e9,
			"kv_read_gb":             kvRead / 1e9,
			"logits_mb":              float64(batch*vocab*4) / 1e6,
		}})
	return nil
}

// prefillChunk is the most tokens of a prompt one prefill step computes
// (the engine's default --max-num-batched-tokens; tests lower it).
var prefillChunk = 2048

// prefillAll times a prompt's prefill for every model.
func (bn *bencher) prefillAll(ctx context.Context, o BenchOptions) error {
	for _, m := range o.Models {
		if err := bn.prefill(ctx, o, m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}

// prefill times one sequence's prompt of o.Prompt tokens computed in
// steps of up to 2048 (the engine's default --max-num-batched-tokens),
// logits for its last token only, after one untimed prompt: the median
// of three, as prompt tokens per second.
func (bn *bencher) prefill(ctx context.Context, o BenchOptions, m BenchModel) error {
	be, err := bn.backend(m)
	if err != nil {
		return err
	}
	defer be.Close()
	const bs, reps = 16, 4
	chunk := prefillChunk
	n := o.Prompt
	blocks := ceilDiv(n, bs)
	if err := be.AllocateKV(blocks, bs); err != nil {
		return err
	}
	if _, err := be.KVBudget(0.9, chunk, 1); err != nil { // reserve scratch like the engine
		return err
	}
	table := make([]int32, blocks)
	for i := range table {
		table[i] = int32(i)
	}
	vocab := m.Cfg.VocabSize
	logits := make([]float32, vocab)
	run := func() error { // the prompt over the same blocks each time
		for start := 0; start < n; start += chunk {
			l := min(chunk, n-start)
			st := runner.Step{Seqs: []runner.Seq{{Len: l, ContextLen: start + l, BlockTable: table, Logits: start+l == n, PromptLen: n}}}
			for p := start; p < start+l; p++ {
				st.TokenIDs = append(st.TokenIDs, int32((p*7919)%vocab))
				st.Positions = append(st.Positions, int32(p))
				st.SlotMapping = append(st.SlotMapping, table[p/bs]*bs+int32(p%bs))
			}
			if err := be.Forward(ctx, &st, logits); err != nil {
				return err
			}
		}
		return nil
	}
	ms := make([]float64, reps)
	for i := range ms {
		start := time.Now()
		if err := run(); err != nil {
			return err
		}
		ms[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	timed := slices.Clone(ms[1:]) // the first warms up
	slices.Sort(timed)
	med := timed[len(timed)/2]
	bn.add(BenchResult{Suite: "prefill", Name: fmt.Sprintf("%s prompt=%d", m.Name, n),
		Value: float64(n) / med * 1000, Unit: "tok/s", Median: med, Extra: map[string]float64{"first_ms": ms[0]}})
	return nil
}

// RandomBF16 returns weights of cfg's shape with random bf16 matrices
// (uniform in ±1/sqrt(in)) and unit norms, drawn in parallel: the
// benchmark's 1B-class model, made in seconds where model.Random takes
// minutes.
func RandomBF16(cfg model.Config, seed uint64) (*model.Weights, error) {
	type job struct {
		t   **model.Tensor
		out int
		in  int
	}
	w := &model.Weights{Layers: make([]model.Layer, cfg.NumLayers)}
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	jobs := []job{{&w.TokenEmbed, cfg.VocabSize, cfg.Dim}}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		l.AttnNorm, l.FFNNorm = ones(cfg.Dim), ones(cfg.Dim)
		jobs = append(jobs, job{&l.Wq, qd, cfg.Dim}, job{&l.Wk, kvd, cfg.Dim}, job{&l.Wv, kvd, cfg.Dim}, job{&l.Wo, cfg.Dim, qd},
			job{&l.W1, cfg.FFNDim, cfg.Dim}, job{&l.W3, cfg.FFNDim, cfg.Dim}, job{&l.W2, cfg.Dim, cfg.FFNDim})
	}
	w.OutNorm = ones(cfg.Dim)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			scale := 2 / math.Sqrt(float64(j.in))
			data := make([]byte, 2*j.out*j.in)
			for k := 0; k < len(data); k += 2 {
				u := model.F32ToBF16(float32((r.Float64() - 0.5) * scale))
				data[k], data[k+1] = byte(u), byte(u>>8)
			}
			*j.t = &model.Tensor{Name: "random." + strconv.Itoa(i), Type: model.BF16, Shape: []int{j.in, j.out}, Data: data}
		})
	}
	wg.Wait()
	w.Output = w.TokenEmbed
	if err := w.Validate(cfg); err != nil {
		return nil, err
	}
	return w, nil
}
