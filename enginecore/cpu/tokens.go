package cpu

import (
	"github.com/tandem-llm/tandem/enginecore/cpu/kernels"
	"github.com/tandem-llm/tandem/enginecore/model"
	"github.com/tandem-llm/tandem/enginecore/runner"
)

// tokenStage is a per-token part of a layer: work that touches one
// token's rows only, so the workers split the step's tokens between them
// (a prefill step's norms, RoPE and residual adds would otherwise run on
// one thread while the other waits).
type tokenStage uint8

const (
	stageAttnNorm tokenStage = iota // xb = rmsnorm(x)·attn_norm (xb = x without pre-norms)
	stageRoPEKV                     // biases, QK norm (per head or whole), RoPE (not in NoPE layers); K, V into the cache
	stageFFNNorm                    // (xb2 += Wo's bias,) (xb2 = rmsnorm(xb2)·post_attention_norm,) (xb2 *= residual scale,) x += xb2, then xb = rmsnorm(x)·ffn_norm (or x)
	stageGate                       // hb = act(hb)·hb2, act SiLU, GELU or gpt-oss's clamped SwiGLU
	stageAdd                        // (xb2 = rmsnorm(xb2)·post_ffw_norm,) (xb2 *= residual scale,) x += xb2
)

// tokenJob runs one stage of layer l over a share of the step's tokens
// per worker. Every token's result is computed the same way whatever the
// split.
type tokenJob struct {
	b     *Backend
	stage tokenStage
	l     int
	step  *runner.Step
}

func (j *tokenJob) run(w, numWorkers int) {
	n := len(j.step.TokenIDs)
	j.b.tokens(j.stage, j.l, j.step, w*n/numWorkers, (w+1)*n/numWorkers)
}

// perToken runs stage over the step's tokens on the pool (on the caller
// alone for few tokens: a decode step's stages are a few microseconds).
func (b *Backend) perToken(stage tokenStage, l int, step *runner.Step) {
	j := &b.tok
	j.b, j.stage, j.l, j.step = b, stage, l, step
	n := len(step.TokenIDs)
	work := n * b.cfg.Dim * 8 // a rough multiply-add count of a stage
	if stage == stageGate {
		work = n * b.cfg.FFNDim * 8
	}
	b.pool.run(j, work)
	j.step = nil
}

// tokens runs stage over tokens [t0, t1).
func (b *Backend) tokens(stage tokenStage, l int, step *runner.Step, t0, t1 int) {
	c := &b.cfg
	w := &b.w.Layers[l]
	dim, f, half := c.Dim, c.FFNDim, len(b.freq)
	for t := t0; t < t1; t++ {
		x, xb := b.x[t*dim:(t+1)*dim], b.xb[t*dim:(t+1)*dim]
		switch stage {
		case stageAttnNorm:
			b.preNorm(xb, x, w.AttnNorm)
		case stageRoPEKV:
			qt, kt, vt := b.q[t*b.qDim:(t+1)*b.qDim], b.k[t*b.kvDim:(t+1)*b.kvDim], b.v[t*b.kvDim:(t+1)*b.kvDim]
			if c.QKVBias {
				add(qt, w.BQ)
				add(kt, w.BK)
				add(vt, w.BV)
			}
			switch {
			case c.QKNormFull:
				rmsnorm(qt, qt, w.QNorm, b.eps)
				rmsnorm(kt, kt, w.KNorm, b.eps)
			case c.QKNorm:
				headNorm(qt, c.NumHeads, w.QNorm, b.eps)
				headNorm(kt, c.NumKVHeads, w.KNorm, b.eps)
			}
			cs, sn := b.cos[t*half:(t+1)*half], b.sin[t*half:(t+1)*half]
			if b.freqL != nil && c.Local(l) {
				cs, sn = b.cosL[t*half:(t+1)*half], b.sinL[t*half:(t+1)*half]
			}
			if c.NoRopeLayers == nil || !c.NoRopeLayers[l] {
				rope(qt, c.NumHeads, c.HeadDim, cs, sn, c.RopeNeox)
				rope(kt, c.NumKVHeads, c.HeadDim, cs, sn, c.RopeNeox)
			}
			b.writeKV(l, int(step.SlotMapping[t]), kt, vt)
		case stageFFNNorm:
			if w.BO != nil {
				add(b.xb2[t*dim:(t+1)*dim], w.BO)
			}
			b.residual(x, b.xb2[t*dim:(t+1)*dim], w.PostAttnNorm)
			b.preNorm(xb, x, w.FFNNorm)
		case stageGate:
			gateMul(c.FFNAct, b.hb[t*f:(t+1)*f], b.hb2[t*f:(t+1)*f])
		case stageAdd:
			b.residual(x, b.xb2[t*dim:(t+1)*dim], w.PostFFNNorm)
		}
	}
}

// preNorm writes a sublayer's input xb ([Dim]) from the residual stream
// x: RMS-normalized with gain g, or x itself without pre-norms (OLMo 2).
func (b *Backend) preNorm(xb, x, g []float32) {
	if b.cfg.NoPreNorms {
		copy(xb, x)
		return
	}
	rmsnorm(xb, x, g, b.eps)
}

// residual adds a sublayer's output out ([Dim], overwritten) to the
// residual stream x: after the post-norm of gain g and the residual
// scale, where the model has them.
func (b *Backend) residual(x, out, g []float32) {
	c := &b.cfg
	if c.PostNorms {
		rmsnorm(out, out, g, b.eps)
	}
	if c.ResidualScale > 0 {
		scaleVec(out, float32(c.ResidualScale))
	}
	add(x, out)
}

// gateMul writes act(gate)·up into gate ([F] each), act the model's.
func gateMul(act model.Activation, gate, up []float32) {
	switch act {
	case model.ActGELUTanh:
		kernels.GELUMul(gate, up)
	case model.ActSwiGLUOAI:
		kernels.SwiGLUOAIMul(gate, up)
	default:
		kernels.SiLUMul(gate, up)
	}
}
