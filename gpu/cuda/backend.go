//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// Sentinel errors, checked with errors.Is.
var (
	ErrUnsupported = errors.New("cuda: unsupported model")
	ErrInvalidStep = runner.ErrInvalidStep
	ErrNoKVCache   = errors.New("cuda: KV cache not allocated")
	ErrClosed      = errors.New("cuda: backend closed")
)

// Options configure New.
type Options struct {
	Device int // CUDA ordinal: the N of --device cuda:N
}

// Backend is the CUDA runner.Backend: the model's weights and a paged KV
// cache in one GPU's memory, a forward pass of our kernels and cuBLASLt
// GEMMs. It is used by one goroutine at a time.
type Backend struct {
	dev device
	ops *ops
	cfg model.Config
	eps float32
	// classifier is the model's classification head, applied on the host
	// by the runner (RANK pooling); nil: none.
	classifier *model.Classifier
	// Widths of one token's rows.
	qDim      int // H·D
	kvDim     int // Hkv·D
	rowStride int // H·D + 2·Hkv·D: a token's Q, K and V, side by side
	scale     float32

	// Weights, uploaded once by New (device pointers).
	embed         uintptr     // token_embd as in the file: [V] rows of embedRowBytes, embedType
	embedType     model.DType //
	embedRowBytes int64       //
	output        uintptr     // [V][Dim] bf16 LM head
	outNorm       uintptr     // [Dim] f32
	rope          uintptr     // [ropeLen][D] f32: cosines then sines per position
	ropeLen       int         // positions the RoPE table covers (cfg.MaxContextLen)
	layers        []layerWeights

	// KV cache: [L][2 (K,V)][numBlocks][B][Hkv][D] bf16, one allocation.
	kv        uintptr
	numBlocks int
	blockSize int // B

	// Scratch, sized by grow for capTok tokens and capRows logits rows.
	capTok  int
	capRows int
	x       uintptr // [T][Dim] f32 residual stream
	xb      uintptr // [T][Dim] bf16 normalized sublayer input
	qkv     uintptr // [T][rowStride] f32
	att     uintptr // [T][H·D] bf16 attention output
	delta   uintptr // [T][Dim] f32 sublayer output
	gu      uintptr // [T][2F] f32 gate, then up
	h       uintptr // [T][F] bf16 silu(gate)·up
	xl      uintptr // [R][Dim] bf16 normalized rows that get logits
	logits  uintptr // [R][V] f32
	partAcc uintptr // [capParts][D] f32 split-K attention partials
	partML  uintptr // [capParts][2] f32
	// capParts bounds T·H·P for split-K attention (see planAttention).
	capParts int
	// Step metadata: tokens, positions, slots, token→seq, logits rows,
	// block tables; packed into hostMeta, copied to meta in one go.
	meta     uintptr
	capMeta  int     // int32s meta holds
	hostMeta []int32 //
	hostXB   []byte  // [T][Dim] bf16: the final norm's rows, copied back for Step.Hidden
	attn     attnArgs

	allocs    map[uintptr]int64 // live device allocations → bytes
	allocated int64             // bytes in allocs
	baseFree  int64             // free device bytes before New allocated anything
}

// layerWeights are one block's weights on the device.
type layerWeights struct {
	attnNorm uintptr // [Dim] f32
	wqkv     uintptr // [H·D + 2·Hkv·D][Dim] bf16: Wq rows, then Wk, then Wv
	bqkv     uintptr // [H·D + 2·Hkv·D] f32, or 0 (no QKV bias)
	qNorm    uintptr // [D] f32, or 0 (no QK norm)
	kNorm    uintptr // [D] f32, or 0
	wo       uintptr // [Dim][H·D] bf16
	ffnNorm  uintptr // [Dim] f32
	wgu      uintptr // [2F][Dim] bf16: W1 (gate) rows, then W3 (up)
	w2       uintptr // [Dim][F] bf16
}

var _ runner.Backend = (*Backend)(nil)

// New opens CUDA device opts.Device, loads the kernels and cuBLASLt, and
// uploads w: matrices are dequantized on the device to bf16 (token_embd
// is also kept as in the file, for the embedding gather). The Backend
// reads w only during New. AllocateKV must be called before Forward.
func New(cfg model.Config, w *model.Weights, opts Options) (*Backend, error) {
	dev, err := openDriver(opts.Device)
	if err != nil {
		return nil, err
	}
	b, err := newBackend(dev, cfg, w)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return b, nil
}

// checkFamily refuses what the kernels do not compute: Gemma's scaled
// embeddings, GELU, post-norms, query scale, sliding windows and
// soft-caps, SmolLM3's layers without RoPE, Granite's residual and logit
// scales (the CPU backend has them).
func checkFamily(cfg model.Config) error {
	if cfg.RopeScaling.Type == "yarn" { // its frequencies it would read, but not its attention factor
		return fmt.Errorf("%w: YaRN RoPE scaling runs on the CPU backend only", ErrUnsupported)
	}
	if cfg.QKNormFull || cfg.NoPreNorms {
		return fmt.Errorf("%w: architecture %q normalizes Q and K as whole vectors or has no pre-norms (OLMo), which runs on the CPU backend only", ErrUnsupported, cfg.Arch)
	}
	if cfg.EmbedScale != 0 || cfg.FFNAct != model.ActSiLU || cfg.PostNorms || cfg.AttnScale != 0 ||
		cfg.SlidingWindow != 0 || cfg.FinalSoftcap != 0 || cfg.AttnSoftcap != 0 || cfg.NoRopeLayers != nil ||
		cfg.ResidualScale != 0 || cfg.LogitScale != 0 || cfg.RopeAttnFactor != 0 {
		return fmt.Errorf("%w: architecture %q (Gemma's embedding scale, GELU, post-norms, sliding window or softcap, SmolLM3's NoPE layers, Granite's scales, or Phi-3's RoPE attn_factor) runs on the CPU backend only", ErrUnsupported, cfg.Arch)
	}
	if cfg.RopeDim != 0 && cfg.RopeDim != cfg.HeadDim {
		return fmt.Errorf("%w: architecture %q rotates %d of %d dims per head (partial RoPE), which runs on the CPU backend only", ErrUnsupported, cfg.Arch, cfg.RopeDim, cfg.HeadDim)
	}
	if cfg.NumExperts > 0 {
		return fmt.Errorf("%w: architecture %q is a mixture of %d experts, which runs on the CPU backend only", ErrUnsupported, cfg.Arch, cfg.NumExperts)
	}
	return nil
}

// kernelTypes are the tensor types the dequant kernel decodes
// (kernels/dequant.cu); the CPU backend reads more.
var kernelTypes = []model.DType{model.F32, model.F16, model.BF16, model.Q4_0, model.Q4_1, model.Q8_0, model.Q4_K, model.Q5_K, model.Q6_K}

// checkTypes refuses a matrix of a type the kernels do not decode.
func checkTypes(w *model.Weights) error {
	check := func(t *model.Tensor) error {
		if t != nil && !slices.Contains(kernelTypes, t.Type) {
			return fmt.Errorf("%w: %s has type %v, which the CUDA backend does not decode (it does %v; the CPU backend does)", ErrUnsupported, t.Name, t.Type, kernelTypes)
		}
		return nil
	}
	errs := []error{check(w.TokenEmbed), check(w.Output)}
	for _, l := range w.Layers {
		for _, t := range []*model.Tensor{l.Wq, l.Wk, l.Wv, l.Wo, l.W1, l.W2, l.W3} {
			errs = append(errs, check(t))
		}
	}
	return errors.Join(errs...)
}

// newBackend builds a Backend on dev, which it then owns.
func newBackend(dev device, cfg model.Config, w *model.Weights) (*Backend, error) {
	if err := w.Validate(cfg); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if err := checkFamily(cfg); err != nil {
		return nil, err
	}
	if err := checkTypes(w); err != nil {
		return nil, err
	}
	if err := checkAttentionShape(cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim); err != nil {
		return nil, err
	}
	if cfg.MaxContextLen <= 0 {
		return nil, fmt.Errorf("%w: context length %d", ErrUnsupported, cfg.MaxContextLen)
	}
	freq, err := ropeFreqs(cfg, w.RopeFreqs)
	if err != nil {
		return nil, err
	}
	o, err := newOps(dev)
	if err != nil {
		return nil, err
	}
	free, _, err := dev.MemInfo()
	if err != nil {
		return nil, err
	}
	qd, kvd := cfg.NumHeads*cfg.HeadDim, cfg.NumKVHeads*cfg.HeadDim
	b := &Backend{
		dev:        dev,
		ops:        o,
		cfg:        cfg,
		classifier: w.Classifier,
		eps:        float32(cfg.NormEps),
		qDim:       qd,
		kvDim:      kvd,
		rowStride:  qd + 2*kvd,
		scale:      float32(1 / math.Sqrt(float64(cfg.HeadDim))),
		ropeLen:    cfg.MaxContextLen,
		allocs:     map[uintptr]int64{},
		baseFree:   free,
		capParts:   4 * dev.NumSMs() * (cfg.NumHeads / cfg.NumKVHeads),
	}
	if err := b.upload(w, freq); err != nil {
		b.Close()
		return nil, err
	}
	if b.partAcc, err = b.malloc(int64(b.capParts) * int64(cfg.HeadDim) * 4); err == nil {
		b.partML, err = b.malloc(int64(b.capParts) * 2 * 4)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// malloc allocates device memory and records it for Close and KVBudget.
func (b *Backend) malloc(bytes int64) (uintptr, error) {
	p, err := b.dev.Alloc(max(bytes, 4))
	if err != nil {
		return 0, err
	}
	b.allocs[p] = max(bytes, 4)
	b.allocated += max(bytes, 4)
	return p, nil
}

// release frees p (0 is a no-op).
func (b *Backend) release(p uintptr) {
	if n, ok := b.allocs[p]; ok {
		_ = b.dev.Free(p)
		delete(b.allocs, p)
		b.allocated -= n
	}
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
		Classifier:    b.classifier,
	}
}

// DeviceName is the GPU's name, e.g. "NVIDIA H200".
func (b *Backend) DeviceName() string { return b.dev.Name() }

// KVBytesPerBlock is 2·L·B·Hkv·D·2 bytes: K and V of every layer, bf16.
func (b *Backend) KVBytesPerBlock(blockSize int) int64 {
	return 2 * int64(b.cfg.NumLayers) * int64(blockSize) * int64(b.kvDim) * 2
}

// AllocateKV replaces the KV cache with a zeroed one of numBlocks blocks
// of blockSize tokens.
func (b *Backend) AllocateKV(numBlocks, blockSize int) error {
	if b.dev == nil {
		return ErrClosed
	}
	if numBlocks <= 0 || blockSize <= 0 {
		return fmt.Errorf("cuda: allocate %d blocks of %d tokens: sizes must be positive", numBlocks, blockSize)
	}
	b.release(b.kv)
	b.kv, b.numBlocks, b.blockSize = 0, 0, 0
	bytes := int64(numBlocks) * b.KVBytesPerBlock(blockSize)
	kv, err := b.malloc(bytes)
	if err != nil {
		return fmt.Errorf("cuda: KV cache of %d blocks: %w", numBlocks, err)
	}
	if err := b.dev.Memset32(kv, 0, bytes/4); err != nil {
		b.release(kv)
		return err
	}
	b.kv, b.numBlocks, b.blockSize = kv, numBlocks, blockSize
	return nil
}

// layerKV returns layer l's K and V caches, each [numBlocks][B][Hkv][D].
func (b *Backend) layerKV(l int) (k, v uintptr) {
	n := uintptr(b.numBlocks) * uintptr(b.blockSize) * uintptr(b.kvDim) * 2 // bytes per cache
	k = b.kv + uintptr(2*l)*n
	return k, k + n
}

// KVBudget reserves scratch for steps of up to maxTokens tokens and
// maxSeqs logits rows, then returns how many bytes the KV cache may take:
// utilization × total device memory, less what this backend's process
// already took (context, kernels, cuBLASLt, weights, scratch), and never
// more than the free memory less a 256 MiB margin.
func (b *Backend) KVBudget(utilization float64, maxTokens, maxSeqs int) (int64, error) {
	if b.dev == nil {
		return 0, ErrClosed
	}
	if utilization <= 0 || utilization > 1 {
		return 0, fmt.Errorf("cuda: --gpu-memory-utilization %g: want a fraction in (0, 1]", utilization)
	}
	maxTokens, maxSeqs = max(maxTokens, 1), max(min(maxSeqs, maxTokens), 1)
	if err := b.grow(maxTokens, maxSeqs); err != nil {
		return 0, err
	}
	// Metadata for block tables of blocks of 8 tokens or more.
	if err := b.growMeta(4*maxTokens + maxSeqs + maxSeqs*ceilDiv(b.ropeLen, 8)); err != nil {
		return 0, err
	}
	free, total, err := b.dev.MemInfo()
	if err != nil {
		return 0, err
	}
	used := b.baseFree - free // everything allocated since New began (ours, plus libraries)
	budget := min(int64(utilization*float64(total))-used, free-256<<20)
	if budget <= 0 {
		return 0, fmt.Errorf("cuda: no memory left for the KV cache: %.1f GiB of %.1f GiB in use at --gpu-memory-utilization %g",
			float64(total-free)/(1<<30), float64(total)/(1<<30), utilization)
	}
	return budget, nil
}

// grow makes the scratch hold numTok tokens and numRows logits rows.
func (b *Backend) grow(numTok, numRows int) error {
	c := &b.cfg
	if numTok > b.capTok {
		n := max(numTok, 2*b.capTok)
		for _, p := range []uintptr{b.x, b.xb, b.qkv, b.att, b.delta, b.gu, b.h} {
			b.release(p)
		}
		b.capTok = 0
		for _, a := range []struct {
			p     *uintptr
			bytes int
		}{
			{&b.x, n * c.Dim * 4}, {&b.xb, n * c.Dim * 2}, {&b.qkv, n * b.rowStride * 4}, {&b.att, n * b.qDim * 2},
			{&b.delta, n * c.Dim * 4}, {&b.gu, n * 2 * c.FFNDim * 4}, {&b.h, n * c.FFNDim * 2},
		} {
			p, err := b.malloc(int64(a.bytes))
			if err != nil {
				return fmt.Errorf("cuda: scratch for %d tokens: %w", n, err)
			}
			*a.p = p
		}
		b.capTok = n
	}
	if numRows > b.capRows {
		n := max(numRows, min(2*b.capRows, b.capTok))
		b.release(b.xl)
		b.release(b.logits)
		b.capRows = 0
		var err error
		if b.xl, err = b.malloc(int64(n) * int64(c.Dim) * 2); err == nil {
			b.logits, err = b.malloc(int64(n) * int64(c.VocabSize) * 4)
		}
		if err != nil {
			return fmt.Errorf("cuda: logits for %d rows: %w", n, err)
		}
		b.capRows = n
	}
	return nil
}

// Close frees everything on the device and closes it.
func (b *Backend) Close() error {
	if b.dev == nil {
		return nil
	}
	_ = b.dev.Sync()
	for p := range b.allocs {
		_ = b.dev.Free(p)
	}
	b.allocs, b.allocated = nil, 0
	err := b.dev.Close()
	b.dev, b.ops = nil, nil
	return err
}
