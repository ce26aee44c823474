package cpu

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Sentinel errors, checked with errors.Is.
var (
	ErrNoKVCache   = errors.New("cpu: KV cache not allocated")
	ErrInvalidStep = runner.ErrInvalidStep
	ErrClosed      = errors.New("cpu: backend closed")
)

// Backend is the pure-Go runner.Backend. It is used by one goroutine at a
// time (its worker goroutines are internal).
type Backend struct {
	cfg    model.Config
	w      *model.Weights // norms, biases and token_embd (looked up row by row)
	layers []layer        // packed matrices
	output *kernels.Matrix
	pool   *pool
	eps    float32
	qDim   int       // H*D
	kvDim  int       // Hkv*D
	freq   []float64 // [R/2] RoPE inverse frequencies, scaled (see ropeFreqs); R = RotaryDim
	freqL  []float64 // [R/2] local layers' RoPE inverse frequencies; nil: freq
	scale  float32   // attention scores' scale (model.Config.Scale)

	// KV cache: [L] × {K [numBlocks][Hkv][D][B], V [numBlocks][B][Hkv][D]}, see the package doc.
	kv        []float32 // float32 cache, or nil
	kv16      []uint16  // float16 cache (KVFloat16), or nil
	kvDtype   KVDtype   // what the next AllocateKV makes
	numBlocks int
	blockSize int // B, tokens per block

	// Scratch, sized for capTok tokens; grown by grow, never shrunk.
	capTok int
	x      []float32 // [T][Dim] residual stream
	xb     []float32 // [T][Dim] normalized input of a sublayer
	xb2    []float32 // [T][Dim] sublayer output
	q      []float32 // [T][H*D]
	k      []float32 // [T][Hkv*D]
	v      []float32 // [T][Hkv*D]
	att    []float32 // [T][H*D] attention output
	hb     []float32 // [T][F] gate, then silu(gate)·up (F: max(Fe, Fs) in a mixture of experts)
	hb2    []float32 // [T][F] up
	cos    []float32 // [T][R/2] RoPE cosines per token
	sin    []float32 // [T][R/2]
	cosL   []float32 // [T][R/2] local layers' RoPE cosines; nil unless freqL
	sinL   []float32 // [T][R/2]
	tokSeq []int32   // [T] index into Step.Seqs of each token
	lora   bool      // some Seq of the step being run applies a LoRA adapter
	// loraGroups are the step's adapters and their tokens (checkLoRA);
	// loraX ([n][In]), loraAX ([n][R]) and loraD ([n][Out]) are
	// loraRows' scratch.
	loraGroups           []loraGroup
	loraX, loraAX, loraD []float32
	xl                   []float32 // [T][Dim] normalized last-token rows for the LM head
	moe                  moeScratch

	precision  Precision
	tokPrecise []bool // [capTok] backing array of precise
	precise    []bool // [T] tokens of this step computed precisely, see Precision; the LM head's matmul uses rowPrecise
	rowPrecise []bool // [numRows] the same for the LM head's rows

	mm    matmulJob
	quant quantizeJob
	attn  attnJob
	tok   tokenJob

	attnScratch []attnState // [numWorkers], sized by AllocateKV

	packInfo PackInfo     // where the matrices live (packcache.go)
	unmap    func() error // unmaps the pack cache file; nil when packed into memory
	packData []byte       // the pack cache file's mapping; nil when packed into memory
	// kvRelease unmaps the KV cache (allocZeroed); nil when none.
	kvRelease func()
}

// layer is one block's matrices, packed for the kernels; a mixture of
// experts has router, experts and shared instead of w1, w3 and w2.
type layer struct {
	wq, wk, wv, wo, w1, w3, w2 *kernels.Matrix
	router                     *kernels.Matrix // [E][Dim]
	experts                    []expert        // [E]
	shared                     expert          // nil matrices without a shared expert
}

// expert is one expert's matrices, packed.
type expert struct{ w1, w3, w2 *kernels.Matrix }

var _ runner.Backend = (*Backend)(nil)

// New checks w against cfg, packs its matrices for the kernels (a copy,
// in memory or in the pack cache of WithPackCache: the tensors' Data is
// not read afterwards, except token_embd rows), and
// starts threads worker threads (the caller's goroutine counts as one;
// threads ≤ 0 means GOMAXPROCS). The Backend reads w and never writes it;
// AllocateKV must be called before Forward.
func New(cfg model.Config, w *model.Weights, threads int, opts ...Option) (*Backend, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := w.Validate(cfg); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	freq, err := ropeFreqs(cfg, w.RopeFreqs)
	if err != nil {
		return nil, err
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	b := &Backend{
		cfg:   cfg,
		w:     w,
		eps:   float32(cfg.NormEps),
		qDim:  cfg.NumHeads * cfg.HeadDim,
		kvDim: cfg.NumKVHeads * cfg.HeadDim,
		freq:  freq,
		freqL: model.LocalRopeFrequencies(cfg),
		scale: float32(cfg.Scale()),
	}
	if err := b.pack(threads, o.packDir); err != nil {
		return nil, err
	}
	b.pool = newPool(threads)
	b.quant.act = &b.mm.act
	b.attn.b = b
	return b, nil
}

// pack packs every matrix, threads at a time, into the pack cache under
// dir when one is given and usable (packcache.go), else into memory,
// releasing each source's file pages once packed (a tied embedding table
// faults back in row by row as tokens read it).
func (b *Backend) pack(threads int, dir string) error {
	b.layers = make([]layer, len(b.w.Layers))
	tasks := []packTask{{&b.output, b.w.Output}}
	for i := range b.w.Layers {
		l, w := &b.layers[i], &b.w.Layers[i]
		tasks = append(tasks, packTask{&l.wq, w.Wq}, packTask{&l.wk, w.Wk}, packTask{&l.wv, w.Wv}, packTask{&l.wo, w.Wo})
		if w.Router == nil {
			tasks = append(tasks, packTask{&l.w1, w.W1}, packTask{&l.w3, w.W3}, packTask{&l.w2, w.W2})
			continue
		}
		l.experts = make([]expert, len(w.Experts))
		tasks = append(tasks, packTask{&l.router, w.Router})
		for e := range w.Experts {
			tasks = append(tasks, l.experts[e].tasks(w.Experts[e])...)
		}
		if w.Shared.W1 != nil {
			tasks = append(tasks, l.shared.tasks(w.Shared)...)
		}
	}
	if dir != "" {
		err := b.packCached(tasks, threads, dir)
		if err == nil {
			return nil
		}
		b.packInfo = PackInfo{Err: err}
	}
	start := time.Now()
	errs := make([]error, len(tasks))
	forEach(len(tasks), threads, func(i int) {
		*tasks[i].dst, errs[i] = kernels.Pack(tasks[i].src)
		if errs[i] == nil {
			releasePages(tasks[i].src.Data)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cpu: %w", err)
	}
	for _, t := range tasks {
		b.packInfo.Bytes += (*t.dst).Bytes()
	}
	b.packInfo.Took = time.Since(start)
	return nil
}

// Model describes the loaded model.
func (b *Backend) Model() runner.ModelInfo {
	return runner.ModelInfo{
		Name:          b.cfg.Name,
		Arch:          b.cfg.Arch,
		VocabSize:     b.cfg.VocabSize,
		MaxContextLen: b.cfg.MaxContextLen,
		EOSTokenIDs:   slices.Clone(b.cfg.EOSTokenIDs),
		BOSTokenID:    b.cfg.BOSTokenID,
		NumLayers:     b.cfg.NumLayers,
		NumKVHeads:    b.cfg.NumKVHeads,
		HeadDim:       b.cfg.HeadDim,
		Dim:           b.cfg.Dim,
		Pooling:       b.cfg.Pooling,
		Classifier:    b.w.Classifier,
	}
}

// KVBytesPerBlock is 2·L·B·Hkv·D·4 bytes: K and V of every layer, float32.
func (b *Backend) KVBytesPerBlock(blockSize int) int64 {
	return 2 * int64(b.cfg.NumLayers) * int64(blockSize) * int64(b.kvDim) * int64(b.kvDtype.bytes())
}

// AllocateKV replaces the KV cache with a zeroed pool of numBlocks blocks
// of blockSize tokens.
func (b *Backend) AllocateKV(numBlocks, blockSize int) error {
	if b.pool == nil {
		return ErrClosed
	}
	if numBlocks <= 0 || blockSize <= 0 {
		return fmt.Errorf("cpu: allocate %d blocks of %d tokens: sizes must be positive", numBlocks, blockSize)
	}
	b.freeKV() // let the old pool go before allocating the new one
	n := 2 * b.cfg.NumLayers * numBlocks * blockSize * b.kvDim
	mem, free, err := allocZeroed(n * b.kvDtype.bytes())
	if err != nil {
		return fmt.Errorf("cpu: allocate a KV cache of %d blocks of %d tokens: %w", numBlocks, blockSize, err)
	}
	b.kvRelease = free
	if b.kvDtype == KVFloat16 {
		b.kv16 = unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(mem))), n)
	} else {
		b.kv = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(mem))), n)
	}
	b.numBlocks, b.blockSize = numBlocks, blockSize
	b.newAttnScratch()
	return nil
}

// layerKV returns layer l's K cache, [numBlocks][Hkv][D][B] (transposed
// within a block), and V cache, [numBlocks][B][Hkv][D].
func (b *Backend) layerKV(l int) (k, v []float32) {
	n := b.numBlocks * b.blockSize * b.kvDim
	base := 2 * l * n
	return b.kv[base : base+n], b.kv[base+n : base+2*n]
}

// layerKV16 is layerKV of a float16 cache.
func (b *Backend) layerKV16(l int) (k, v []uint16) {
	n := b.numBlocks * b.blockSize * b.kvDim
	base := 2 * l * n
	return b.kv16[base : base+n], b.kv16[base+n : base+2*n]
}

// Close stops the worker goroutines and drops the weights and the cache.
func (b *Backend) Close() error {
	if b.pool == nil {
		return nil
	}
	b.pool.close()
	b.freeKV()
	b.pool, b.w, b.layers, b.output, b.packData = nil, nil, nil, nil, nil
	if b.unmap != nil {
		err := b.unmap() // no matrix points into the cache file any more
		b.unmap = nil
		return err
	}
	return nil
}

// ReleaseKV frees the KV cache's memory while the engine sleeps (sleep
// mode); AllocateKV makes a new one before the next Forward.
func (b *Backend) ReleaseKV() { b.freeKV() }

// ReleaseWeights drops the resident pages of the weights mapped from
// files while the engine sleeps (sleep level 2): the pack cache's
// matrices and the token embeddings. They stay in the page cache and
// fault back in on the next Forward; matrices packed into memory stay.
func (b *Backend) ReleaseWeights() {
	files := readFileRanges()
	dropPages(b.packData, files)
	if b.w != nil && b.w.TokenEmbed != nil {
		dropPages(b.w.TokenEmbed.Data, files)
	}
}

// freeKV releases the KV cache's memory; nothing may read it afterwards.
func (b *Backend) freeKV() {
	b.kv, b.kv16 = nil, nil
	if b.kvRelease != nil {
		b.kvRelease()
		b.kvRelease = nil
	}
}

// grow makes the scratch buffers hold numTok tokens.
func (b *Backend) grow(numTok int) {
	if numTok > b.capTok {
		n := max(numTok, 2*b.capTok)
		c := b.cfg
		b.x = make([]float32, n*c.Dim)
		b.xb = make([]float32, n*c.Dim)
		b.xb2 = make([]float32, n*c.Dim)
		b.xl = make([]float32, n*c.Dim)
		b.q = make([]float32, n*b.qDim)
		b.att = make([]float32, n*b.qDim)
		b.k = make([]float32, n*b.kvDim)
		b.v = make([]float32, n*b.kvDim)
		f := c.FFNDim
		if c.NumExperts > 0 {
			f = max(c.ExpertFFNDim, c.SharedExpertFFNDim)
			if c.MoELayers != nil { // dense layers too
				f = max(f, c.FFNDim)
			}
			b.growMoE(n)
		}
		b.hb = make([]float32, n*f)
		b.hb2 = make([]float32, n*f)
		b.cos = make([]float32, n*len(b.freq))
		b.sin = make([]float32, n*len(b.freq))
		if b.freqL != nil {
			b.cosL = make([]float32, n*len(b.freqL))
			b.sinL = make([]float32, n*len(b.freqL))
		}
		b.tokSeq = make([]int32, n)
		b.tokPrecise = make([]bool, n)
		b.capTok = n
	}
}

// check validates step (runner.Step.Validate) and fills tokSeq. The token
// scratch must already hold the step's tokens.
func (b *Backend) check(step *runner.Step, numLogits int) (numRows int, err error) {
	sh, err := step.Validate(runner.Limits{VocabSize: b.cfg.VocabSize, NumBlocks: b.numBlocks, BlockSize: b.blockSize, Dim: b.cfg.Dim}, numLogits)
	if err != nil {
		return 0, fmt.Errorf("cpu: %w", err)
	}
	for si, s := range step.Seqs {
		for t := s.Start; t < s.Start+s.Len; t++ {
			b.tokSeq[t] = int32(si)
		}
	}
	return sh.NumRows, nil
}
