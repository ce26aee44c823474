//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// ops launches the kernels of kernels/*.cu on a device: one method per
// kernel, with the kernel's argument order and launch shape (see each
// kernel's comment for layouts). Methods reuse one parameter buffer and
// allocate nothing; an ops is used by one goroutine at a time.
type ops struct {
	dev    device
	fn     [numKernels]uintptr
	slots  [24]uint64 // kernel parameters, 8 bytes each
	nslots int
}

// Kernel indices into ops.fn.
const (
	kDequantRows = iota
	kRMSNorm
	kHeadNorm
	kRoPE
	kAddBias
	kSiLUMul
	kReshapeAndCache
	kAttentionG1
	kAttentionG2
	kAttentionG4
	kAttentionG8
	kAttentionG16
	kAttnCombine
	numKernels
)

var kernelNames = [numKernels]string{
	"tandem_dequant_rows", "tandem_rms_norm", "tandem_head_norm", "tandem_rope", "tandem_add_bias",
	"tandem_silu_mul", "tandem_reshape_and_cache", "tandem_attention_g1", "tandem_attention_g2",
	"tandem_attention_g4", "tandem_attention_g8", "tandem_attention_g16", "tandem_attn_combine",
}

// Limits of the attention kernel (attention.cu).
const (
	attnThreads = 128
	attnTile    = 32
	attnMaxAcc  = 16  // G·D ≤ attnThreads·attnMaxAcc
	attnMaxDim  = 256 // D ≤ 256, D % 8 == 0
	attnMaxG    = 16
)

func newOps(dev device) (*ops, error) {
	o := &ops{dev: dev}
	for i, name := range kernelNames {
		fn, err := dev.Function(name)
		if err != nil {
			return nil, err
		}
		o.fn[i] = fn
	}
	return o, nil
}

// Parameter builders: each appends one 8-byte slot.
func (o *ops) args() *ops        { o.nslots = 0; return o }
func (o *ops) p(v uintptr) *ops  { return o.put(uint64(v)) }
func (o *ops) i(v int) *ops      { return o.put(uint64(uint32(int32(v)))) }
func (o *ops) i64(v int64) *ops  { return o.put(uint64(v)) }
func (o *ops) f(v float32) *ops  { return o.put(uint64(math.Float32bits(v))) }
func (o *ops) b(v bool) *ops     { return o.i(boolInt(v)) }
func (o *ops) put(v uint64) *ops { o.slots[o.nslots] = v; o.nslots++; return o }
func dim3(x, y, z int) [3]uint32 { return [3]uint32{uint32(x), uint32(y), uint32(z)} }
func ceilDiv(a, b int) int       { return (a + b - 1) / b }
func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

func (o *ops) launch(k int, grid, block [3]uint32) error {
	if err := o.dev.Launch(o.fn[k], grid, block, 0, o.slots[:o.nslots]); err != nil {
		return fmt.Errorf("%s: %w", kernelNames[k], err)
	}
	return nil
}

// dequantRows decodes rows of a ggml-typed matrix at src (rowBytes bytes
// each) into dst ([numRows][cols], bf16 or f32): row r is src row
// rows[r], or r when rows is 0.
func (o *ops) dequantRows(dst uintptr, outBF16 bool, src uintptr, typ model.DType, rowBytes int64, rows uintptr, numRows, cols int) error {
	const threads = 128
	o.args().p(dst).b(outBF16).p(src).i(int(typ)).i64(rowBytes).p(rows).i(numRows).i(cols)
	return o.launch(kDequantRows, dim3(numRows, ceilDiv(ceilDiv(cols, 32), threads), 1), dim3(threads, 1, 1))
}

// rmsNorm writes bf16(x[r]·s·w) into out row i for r = rows[i] (or i),
// after x[r] += delta[r] when delta is not 0.
func (o *ops) rmsNorm(out, x, delta, w, rows uintptr, numRows, dim int, eps float32) error {
	o.args().p(out).p(x).p(delta).p(w).p(rows).i(dim).f(eps)
	return o.launch(kRMSNorm, dim3(numRows, 1, 1), dim3(256, 1, 1))
}

// headNorm RMS-normalizes each Q head (gain qw) and K head (gain kw) of
// qkv rows in place.
func (o *ops) headNorm(qkv, qw, kw uintptr, numTok, rowStride, numHeads, numKVHeads, headDim int, eps float32) error {
	o.args().p(qkv).p(qw).p(kw).i(rowStride).i(numHeads).i(headDim).f(eps)
	return o.launch(kHeadNorm, dim3(numTok, numHeads+numKVHeads, 1), dim3(32, 1, 1))
}

// rope rotates the Q and K heads of qkv rows by the angles of positions,
// read from cosSin ([maxPos][D]: cosines, then sines).
func (o *ops) rope(qkv, positions, cosSin uintptr, numTok, rowStride, numHeads, numKVHeads, headDim int, neox bool) error {
	o.args().p(qkv).p(positions).p(cosSin).i(rowStride).i(numHeads).i(numKVHeads).i(headDim).b(neox)
	return o.launch(kRoPE, dim3(numTok, 1, 1), dim3(128, 1, 1))
}

// addBias adds bias ([n] f32) to each of numTok rows of x ([numTok][n]).
func (o *ops) addBias(x, bias uintptr, numTok, n int) error {
	o.args().p(x).p(bias).i(n)
	return o.launch(kAddBias, dim3(numTok, ceilDiv(n, 256), 1), dim3(256, 1, 1))
}

// siluMul writes bf16(silu(gate)·up) ([numTok][f]) from gu ([numTok][2f]).
func (o *ops) siluMul(out, gu uintptr, numTok, f int) error {
	o.args().p(out).p(gu).i(f)
	return o.launch(kSiLUMul, dim3(numTok, ceilDiv(f, 256), 1), dim3(256, 1, 1))
}

// reshapeAndCache stores K and V of each token (in qkv rows at kOff and
// kOff+kvDim) at its slot of one layer's caches kc, vc.
func (o *ops) reshapeAndCache(kc, vc, qkv, slots uintptr, numTok, rowStride, kOff, kvDim int) error {
	o.args().p(kc).p(vc).p(qkv).p(slots).i(rowStride).i(kOff).i(kvDim)
	return o.launch(kReshapeAndCache, dim3(numTok, 1, 1), dim3(128, 1, 1))
}

// attnArgs are one layer's paged-attention inputs.
type attnArgs struct {
	out         uintptr // [T][H·D] bf16
	partAcc     uintptr // [T][H][P][D] f32, when numParts > 1
	partML      uintptr // [T][H][P][2] f32, when numParts > 1
	qkv         uintptr // [T][rowStride] f32
	kc, vc      uintptr // [numBlocks][B][Hkv][D] bf16
	tokSeq      uintptr // [T] int32
	positions   uintptr // [T] int32
	blockTables uintptr // [S][maxBlocks] int32
	maxBlocks   int
	numTok      int
	rowStride   int
	numHeads    int
	numKVHeads  int
	headDim     int
	blockSize   int
	numParts    int // P ≥ 1
	partLen     int // positions per partition, a multiple of attnTile
	scale       float32
}

// attention runs tandem_attention_gN (N the power of two ≥ G) and, with
// more than one partition, tandem_attn_combine.
func (o *ops) attention(a *attnArgs) error {
	k := kAttentionG16
	switch g := a.numHeads / a.numKVHeads; {
	case g <= 1:
		k = kAttentionG1
	case g <= 2:
		k = kAttentionG2
	case g <= 4:
		k = kAttentionG4
	case g <= 8:
		k = kAttentionG8
	}
	o.args().p(a.out).p(a.partAcc).p(a.partML).p(a.qkv).p(a.kc).p(a.vc).p(a.tokSeq).p(a.positions).p(a.blockTables).
		i(a.maxBlocks).i(a.rowStride).i(a.numHeads).i(a.numKVHeads).i(a.headDim).i(a.blockSize).i(a.partLen).f(a.scale)
	if err := o.launch(k, dim3(a.numTok, a.numKVHeads, a.numParts), dim3(attnThreads, 1, 1)); err != nil {
		return err
	}
	if a.numParts == 1 {
		return nil
	}
	o.args().p(a.out).p(a.partAcc).p(a.partML).i(a.headDim).i(a.numParts)
	return o.launch(kAttnCombine, dim3(a.numTok*a.numHeads, 1, 1), dim3(128, 1, 1))
}

// checkAttentionShape reports whether the attention kernel supports the
// model's heads.
func checkAttentionShape(numHeads, numKVHeads, headDim int) error {
	g := numHeads / numKVHeads
	switch {
	case headDim%8 != 0 || headDim > attnMaxDim:
		return fmt.Errorf("%w: head dim %d (the attention kernel needs a multiple of 8, at most %d)", ErrUnsupported, headDim, attnMaxDim)
	case g > attnMaxG || g*headDim > attnThreads*attnMaxAcc:
		return fmt.Errorf("%w: %d query heads per KV head of dim %d (the attention kernel takes G ≤ %d, G·D ≤ %d)",
			ErrUnsupported, g, headDim, attnMaxG, attnThreads*attnMaxAcc)
	}
	return nil
}
