//go:build cuda

package cuda

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// The GPU benchmarks of `make gpu-check` (gpu/cuda/cmd/gpucheck): copy and
// GEMM ceilings, per-kernel bandwidth, and decode steps of whole models.
// Times come from CUDA events around each repetition (median reported),
// except decode steps, which are wall time of Forward (it ends by copying
// the logits back, as the engine does).

// BenchResult is one measurement.
type BenchResult struct {
	Suite  string             `json:"suite"` // ceilings, kernels, decode
	Name   string             `json:"name"`  // what was run, with its shape
	Value  float64            `json:"value"` // in Unit
	Unit   string             `json:"unit"`  // GB/s, TFLOP/s, tok/s
	Median float64            `json:"ms"`    // milliseconds per repetition (median)
	Extra  map[string]float64 `json:"extra,omitempty"`
}

// BenchModel is a model for the decode suite.
type BenchModel struct {
	Name string
	Cfg  model.Config
	W    *model.Weights
}

// BenchOptions select the benchmarks.
type BenchOptions struct {
	Device  int                           // CUDA ordinal
	Suites  []string                      // of "ceilings", "kernels", "decode", "prefill"
	Models  []BenchModel                  // for decode and prefill
	Prompt  int                           // prefill's prompt, tokens (default 2048)
	Batches []int                         // decode batch sizes, e.g. 1, 32, 128
	Context int                           // tokens of context per sequence when decode is timed
	Steps   int                           // timed decode steps per batch size
	Log     func(format string, a ...any) // progress
}

// BenchReport is RunBench's answer: the device and the measurements.
type BenchReport struct {
	Device        string        `json:"device"`         // e.g. "NVIDIA H200"
	Compute       string        `json:"compute"`        // e.g. "sm_90"
	SMs           int           `json:"sms"`            // multiprocessors
	DriverVersion int           `json:"driver_version"` // CUDA version the driver supports, e.g. 13000
	Kernels       string        `json:"kernels"`        // which kernel image loaded
	Results       []BenchResult `json:"results"`
}

// RunBench runs the selected suites on CUDA device o.Device; on an error
// it stops and returns what it has measured so far.
func RunBench(ctx context.Context, o BenchOptions) (BenchReport, error) {
	dr, err := openDriver(o.Device)
	if err != nil {
		return BenchReport{}, err
	}
	defer dr.Close()
	v, _ := DriverVersion()
	rep := BenchReport{Device: dr.name, Compute: fmt.Sprintf("sm_%d%d", dr.ccMajor, dr.ccMinor), SMs: dr.numSMs,
		DriverVersion: v, Kernels: dr.moduleOf}
	if o.Log != nil {
		o.Log("device %s, %s, %d SMs, driver CUDA %d, kernels: %s", rep.Device, rep.Compute, rep.SMs, v, rep.Kernels)
	}
	bn := &bencher{
		dev:    dr,
		open:   func() (device, error) { return openDriver(o.Device) },
		time:   dr.timeIt,
		shapes: defaultShapes,
	}
	rep.Results, err = bn.run(ctx, o)
	return rep, err
}

// benchShapes are the sizes the ceilings and kernel suites use.
type benchShapes struct {
	copyBytes    int64 // device copy
	gemm         []int // n of the n³ GEMMs
	tokens       int   // T of the elementwise kernels
	dim, ffn     int   // model width, FFN width
	heads        int   // H
	kvHeads      int   // Hkv
	headDim      int   // D
	attnBatches  []int // decode attention batch sizes
	attnContexts []int // and context lengths
}

// defaultShapes are an 8B-class model's (Llama 3 8B) on an H200.
var defaultShapes = benchShapes{
	copyBytes: 4 << 30, gemm: []int{8192, 4096}, tokens: 4096, dim: 4096, ffn: 14336, heads: 32, kvHeads: 8, headDim: 128,
	attnBatches: []int{32, 128}, attnContexts: []int{1024, 8192},
}

func (bn *bencher) run(ctx context.Context, o BenchOptions) ([]BenchResult, error) {
	bn.log = o.Log
	if bn.log == nil {
		bn.log = func(string, ...any) {}
	}
	var err error
	if bn.ops, err = newOps(bn.dev); err != nil {
		return nil, err
	}
	defer bn.freeAll()
	for _, s := range o.Suites {
		if err := ctx.Err(); err != nil {
			return bn.results, err
		}
		switch s {
		case "ceilings":
			err = bn.ceilings()
		case "kernels":
			err = bn.kernels()
		case "decode":
			bn.freeAll() // decode opens a backend (and its device) per model and batch
			err = bn.decodeAll(ctx, o)
		case "prefill":
			bn.freeAll()
			if o.Prompt <= 0 {
				o.Prompt = 2048
			}
			err = bn.prefillAll(ctx, o)
		default:
			err = fmt.Errorf("cuda: unknown bench suite %q", s)
		}
		if err != nil {
			return bn.results, fmt.Errorf("%s: %w", s, err)
		}
	}
	return bn.results, nil
}

type bencher struct {
	dev     device
	open    func() (device, error)                                 // a fresh device for a decode backend
	time    func(warm, reps int, fn func() error) (float64, error) // median ms of fn
	shapes  benchShapes
	ops     *ops
	log     func(string, ...any)
	results []BenchResult
	bufs    []uintptr
	copyBW  float64 // GB/s, from the copy ceiling (read + write)
}

func (bn *bencher) alloc(bytes int64) (uintptr, error) {
	p, err := bn.dev.Alloc(bytes)
	if err == nil {
		bn.bufs = append(bn.bufs, p)
	}
	return p, err
}

func (bn *bencher) freeAll() {
	for _, p := range bn.bufs {
		bn.dev.Free(p)
	}
	bn.bufs = nil
}

// random fills a device buffer with n random bf16 values in [-1, 1) (or
// f32 when f32) — never zeros, which flatter tensor cores.
func (bn *bencher) random(n int64, f32 bool, seed uint64) (uintptr, error) {
	size := int64(2)
	if f32 {
		size = 4
	}
	p, err := bn.alloc(n * size)
	if err != nil {
		return 0, err
	}
	const chunk = 1 << 24
	r := rand.New(rand.NewPCG(seed, 7))
	host := make([]byte, min(n, chunk)*size)
	for off := int64(0); off < n; off += chunk {
		m := min(chunk, n-off)
		for i := range m {
			v := float32(r.Float64()*2 - 1)
			if f32 {
				u := math.Float32bits(v)
				host[4*i], host[4*i+1], host[4*i+2], host[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			} else {
				u := model.F32ToBF16(v)
				host[2*i], host[2*i+1] = byte(u), byte(u>>8)
			}
		}
		if err := bn.dev.CopyHtoD(p+uintptr(off*size), host[:m*size]); err != nil {
			return 0, err
		}
	}
	return p, nil
}

// timeIt runs fn warm times, then reps times between CUDA events, and
// returns the median milliseconds of one repetition.
func (dr *driver) timeIt(warm, reps int, fn func() error) (float64, error) {
	for range warm {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	evs := make([]event, reps+1)
	for i := range evs {
		e, err := dr.newEvent()
		if err != nil {
			return 0, err
		}
		defer dr.destroyEvent(e)
		evs[i] = e
	}
	if err := dr.record(evs[0]); err != nil {
		return 0, err
	}
	for i := range reps {
		if err := fn(); err != nil {
			return 0, err
		}
		if err := dr.record(evs[i+1]); err != nil {
			return 0, err
		}
	}
	ms := make([]float64, reps)
	for i := range reps {
		t, err := dr.elapsed(evs[i], evs[i+1])
		if err != nil {
			return 0, err
		}
		ms[i] = t
	}
	slices.Sort(ms)
	return ms[reps/2], nil
}

func (bn *bencher) add(r BenchResult) {
	bn.results = append(bn.results, r)
	bn.log("%-9s %-58s %10.1f %-7s %8.3f ms", r.Suite, r.Name, r.Value, r.Unit, r.Median)
}

func (bn *bencher) ceilings() error {
	copyBytes := bn.shapes.copyBytes
	src, err := bn.random(copyBytes/2, false, 1)
	if err != nil {
		return err
	}
	dst, err := bn.alloc(copyBytes)
	if err != nil {
		return err
	}
	ms, err := bn.time(2, 10, func() error { return bn.dev.CopyDtoD(dst, src, copyBytes) })
	if err != nil {
		return err
	}
	bn.copyBW = 2 * float64(copyBytes) / ms / 1e6
	bn.add(BenchResult{Suite: "ceilings", Name: fmt.Sprintf("device copy %d MiB (read + write)", copyBytes>>20), Value: bn.copyBW, Unit: "GB/s", Median: ms})
	bn.freeAll()

	for _, n := range bn.shapes.gemm {
		x, err := bn.random(int64(n*n), false, 2)
		if err == nil {
			var w, y uintptr
			if w, err = bn.random(int64(n*n), false, 3); err == nil {
				y, err = bn.alloc(int64(n * n * 2))
			}
			if err == nil {
				ms, err = bn.time(3, 20, func() error { return bn.dev.MatmulBT(y, false, x, w, n, n, n) })
			}
			if err == nil {
				bn.add(BenchResult{Suite: "ceilings", Name: fmt.Sprintf("cuBLASLt bf16 GEMM %d³ (random data)", n),
					Value: 2 * math.Pow(float64(n), 3) / ms / 1e9, Unit: "TFLOP/s", Median: ms})
			}
		}
		bn.freeAll()
		if err != nil {
			return err
		}
	}
	return nil
}

// kernels times each kernel on shapes of an 8B-class model (Dim 4096,
// F 14336, 32/8 heads of 128), counting the bytes it must move.
func (bn *bencher) kernels() error {
	sh := bn.shapes
	T, dim, f, H, Hkv, D := sh.tokens, sh.dim, sh.ffn, sh.heads, sh.kvHeads, sh.headDim
	stride := (H + 2*Hkv) * D
	o := bn.ops
	var err error
	// must keeps the first error; later buffers are then not used.
	must := func(p uintptr, e error) uintptr {
		if err == nil {
			err = e
		}
		return p
	}
	n := func(dims ...int) int64 { // elements of a buffer
		p := int64(1)
		for _, d := range dims {
			p *= int64(d)
		}
		return p
	}
	x := must(bn.random(n(T, dim), true, 4))
	delta := must(bn.random(n(T, dim), true, 5))
	w := must(bn.random(n(dim), true, 6))
	xb := must(bn.alloc(n(T, dim, 2)))
	gu := must(bn.random(n(T, 2, f), true, 7))
	h := must(bn.alloc(n(T, f, 2)))
	qkv := must(bn.random(n(T, stride), true, 8))
	table := must(bn.random(n(T, D), true, 9))
	kc := must(bn.alloc(n(T, Hkv, D, 2)))
	vc := must(bn.alloc(n(T, Hkv, D, 2)))
	q4 := must(bn.random(n(f, dim/32, 9), false, 10)) // the 18 bytes per 32 of a Q4_0 [F][Dim] matrix
	wbf := must(bn.alloc(n(f, dim, 2)))
	posD := must(bn.alloc(n(T, 4)))
	slotD := must(bn.alloc(n(T, 4)))
	if err != nil {
		return err
	}
	pos := make([]int32, T)
	for i := range pos {
		pos[i] = int32(i)
	}
	if err := bn.dev.CopyHtoD(posD, i32Bytes(pos)); err != nil {
		return err
	}
	if err := bn.dev.CopyHtoD(slotD, i32Bytes(pos)); err != nil { // slot = position
		return err
	}
	cases := []struct {
		name  string
		bytes int64 // moved to and from memory
		run   func() error
	}{
		{fmt.Sprintf("rms_norm + residual add T=%d Dim=%d", T, dim), n(T, dim, 4+4+4+2),
			func() error { return o.rmsNorm(xb, x, delta, w, 0, T, dim, 1e-5) }},
		{fmt.Sprintf("silu_mul T=%d F=%d", T, f), n(T, f, 8+2),
			func() error { return o.siluMul(h, gu, T, f) }},
		{fmt.Sprintf("rope T=%d H=%d/%d D=%d", T, H, Hkv, D), n(T, H+Hkv, D, 8),
			func() error { return o.rope(qkv, posD, table, T, stride, H, Hkv, D, true) }},
		{fmt.Sprintf("reshape_and_cache T=%d Hkv=%d D=%d", T, Hkv, D), n(T, Hkv, D, 2, 4+2),
			func() error { return o.reshapeAndCache(kc, vc, qkv, slotD, T, stride, H*D, Hkv*D) }},
		{fmt.Sprintf("dequant Q4_0 → bf16 [%d][%d]", f, dim), n(f, dim/32, 18) + n(f, dim, 2),
			func() error { return o.dequantRows(wbf, true, q4, model.Q4_0, int64(dim/32*18), 0, f, dim) }},
	}
	for _, c := range cases {
		ms, err := bn.time(3, 20, c.run)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		bn.add(BenchResult{Suite: "kernels", Name: c.name, Value: float64(c.bytes) / ms / 1e6, Unit: "GB/s", Median: ms})
	}
	bn.freeAll()
	for _, batch := range sh.attnBatches {
		for _, ctxLen := range sh.attnContexts {
			if err := bn.attention(batch, ctxLen); err != nil {
				return err
			}
		}
	}
	return nil
}

// attention times decode attention: batch sequences of ctxLen positions,
// the shapes' heads, blocks of 16, bf16 cache; GB/s of K and V read.
func (bn *bencher) attention(batch, ctxLen int) error {
	H, Hkv, D, B := bn.shapes.heads, bn.shapes.kvHeads, bn.shapes.headDim, 16
	defer bn.freeAll()
	blocksPer := ceilDiv(ctxLen, B)
	numBlocks := batch * blocksPer
	kv := int64(numBlocks) * int64(B*Hkv*D)
	kc, err := bn.random(kv, false, 11)
	if err != nil {
		return err
	}
	vc, err := bn.random(kv, false, 12)
	if err != nil {
		return err
	}
	stride := (H + 2*Hkv) * D
	qkv, err := bn.random(int64(batch*stride), true, 13)
	if err != nil {
		return err
	}
	out, err := bn.alloc(int64(batch * H * D * 2))
	if err != nil {
		return err
	}
	tables := make([]int32, numBlocks)
	perm := rand.New(rand.NewPCG(14, 0)).Perm(numBlocks)
	for i, p := range perm {
		tables[i] = int32(p)
	}
	seqs, positions := make([]int32, batch), make([]int32, batch)
	for i := range seqs {
		seqs[i], positions[i] = int32(i), int32(ctxLen-1)
	}
	meta, err := bn.alloc(int64(4 * (numBlocks + 2*batch)))
	if err != nil {
		return err
	}
	if err := bn.dev.CopyHtoD(meta, i32Bytes(slices.Concat(tables, seqs, positions))); err != nil {
		return err
	}
	b := &Backend{dev: bn.dev, cfg: model.Config{NumHeads: H, NumKVHeads: Hkv}, capParts: 4 * bn.dev.NumSMs() * H / Hkv}
	numParts, partLen := b.planAttention(batch, ctxLen)
	partAcc, err := bn.alloc(int64(batch * H * numParts * D * 4))
	if err != nil {
		return err
	}
	partML, err := bn.alloc(int64(batch * H * numParts * 2 * 4))
	if err != nil {
		return err
	}
	a := &attnArgs{out: out, partAcc: partAcc, partML: partML, qkv: qkv, kc: kc, vc: vc,
		tokSeq: meta + uintptr(4*numBlocks), positions: meta + uintptr(4*(numBlocks+batch)), blockTables: meta,
		maxBlocks: blocksPer, numTok: batch, rowStride: stride, numHeads: H, numKVHeads: Hkv, headDim: D,
		blockSize: B, numParts: numParts, partLen: partLen, scale: float32(1 / math.Sqrt(float64(D)))}
	ms, err := bn.time(3, 20, func() error { return bn.ops.attention(a) })
	if err != nil {
		return err
	}
	bytes := float64(batch) * float64(ctxLen) * float64(Hkv*D) * 2 * 2
	bn.add(BenchResult{Suite: "kernels", Name: fmt.Sprintf("attention decode batch=%d ctx=%d (GQA %d/%d, D %d, P=%d)", batch, ctxLen, H, Hkv, D, numParts),
		Value: bytes / ms / 1e6, Unit: "GB/s", Median: ms})
	return nil
}
