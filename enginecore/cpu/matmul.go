package cpu

import (
	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
)

// parallelQuantizeMin is the activation size (T·in elements) from which
// quantizing is worth a parallel dispatch; below it the caller does it.
const parallelQuantizeMin = 32 * 1024

// matmulOp is out[T][m.Out] = x[T][m.In] · mᵀ; x is the job's activations.
type matmulOp struct {
	out []float32
	m   *kernels.Matrix
}

// matmulJob runs up to three matmuls of the same input (e.g. Q, K, V) in
// one dispatch; each worker takes a contiguous range of every op's row
// groups, so each output element is computed by exactly one worker.
type matmulJob struct {
	act   kernels.Activations
	ops   [3]matmulOp
	numOp int
}

func (j *matmulJob) run(w, numWorkers int) {
	for i := range j.numOp {
		op := &j.ops[i]
		g := op.m.NumGroups()
		op.m.MulGroups(op.out, &j.act, w*g/numWorkers, (w+1)*g/numWorkers)
	}
}

// quantizeJob quantizes the activations of a matmulJob, a share of the
// tokens per worker.
type quantizeJob struct{ act *kernels.Activations }

func (j *quantizeJob) run(w, numWorkers int) {
	n := j.act.NumTok
	j.act.Quantize(w*n/numWorkers, (w+1)*n/numWorkers)
}

// matmul multiplies x ([numTok][in], in = every op's m.In) by up to three
// matrices in one parallel dispatch, quantizing x first if any matrix is
// quantized.
func (b *Backend) matmul(x []float32, numTok int, ops ...matmulOp) {
	j := &b.mm
	j.numOp = copy(j.ops[:], ops)
	in := ops[0].m.In
	quantized, work := false, 0
	residual, super := false, false // the precise forms the ops read
	for _, op := range ops {
		quantized = quantized || op.m.Quantized()
		work += numTok * in * op.m.Out
		super = super || op.m.SuperForm()
		residual = residual || op.m.Quantized() && !op.m.SuperForm()
	}
	j.act.ResetForms(x, numTok, in, b.precise, residual, super)
	if quantized {
		if numTok*in >= parallelQuantizeMin {
			b.pool.do(&b.quant)
		} else {
			j.act.Quantize(0, numTok)
		}
	}
	b.pool.run(j, work)
	j.ops = [3]matmulOp{} // drop references to caller slices
	j.act.X = nil
}
