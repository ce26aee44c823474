//go:build cuda

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/tandem-llm/tandem/enginecore/model"
)

// upload copies the weights to the device once: matrices through a
// staging buffer, dequantized there to bf16 by tandem_dequant_rows
// (Q, K, V stacked into one matrix and gate, up into another, so each
// takes one GEMM); token_embd also as in the file, for the embedding
// gather; vectors as f32; the RoPE table for every position.
func (b *Backend) upload(w *model.Weights, freq []float64) error {
	c := &b.cfg
	var staging int64 // bytes: the largest matrix that goes through it
	for _, l := range w.Layers {
		for _, t := range []*model.Tensor{l.Wq, l.Wk, l.Wv, l.Wo, l.W1, l.W3, l.W2} {
			staging = max(staging, int64(len(t.Data)))
		}
	}
	if w.Output != w.TokenEmbed {
		staging = max(staging, int64(len(w.Output.Data)))
	}
	stage, err := b.malloc(staging)
	if err != nil {
		return fmt.Errorf("cuda: staging buffer: %w", err)
	}
	defer b.release(stage)

	// token_embd, raw; the LM head, bf16.
	e := w.TokenEmbed
	b.embedType, b.embedRowBytes = e.Type, int64(e.Type.RowBytes(c.Dim))
	if b.embed, err = b.raw(e.Data); err != nil {
		return err
	}
	if b.output, err = b.malloc(int64(c.VocabSize) * int64(c.Dim) * 2); err != nil {
		return err
	}
	if w.Output == w.TokenEmbed {
		err = b.ops.dequantRows(b.output, true, b.embed, e.Type, b.embedRowBytes, 0, c.VocabSize, c.Dim)
	} else {
		err = b.matrix(b.output, w.Output, stage)
	}
	if err != nil {
		return fmt.Errorf("cuda: output.weight: %w", err)
	}
	if b.outNorm, err = b.vector(w.OutNorm); err != nil {
		return err
	}
	if b.rope, err = b.vector(ropeTable(freq, b.ropeLen)); err != nil {
		return err
	}

	b.layers = make([]layerWeights, len(w.Layers))
	for i := range w.Layers {
		if err := b.uploadLayer(&b.layers[i], &w.Layers[i], stage); err != nil {
			return fmt.Errorf("cuda: layer %d: %w", i, err)
		}
	}
	return b.dev.Sync()
}

func (b *Backend) uploadLayer(d *layerWeights, l *model.Layer, stage uintptr) error {
	c := &b.cfg
	dim, f := int64(c.Dim), int64(c.FFNDim)
	var err error
	alloc := func(p *uintptr, bytes int64) {
		if err == nil {
			*p, err = b.malloc(bytes)
		}
	}
	alloc(&d.wqkv, int64(b.rowStride)*dim*2)
	alloc(&d.wo, dim*int64(b.qDim)*2)
	alloc(&d.wgu, 2*f*dim*2)
	alloc(&d.w2, dim*f*2)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		dst uintptr
		t   *model.Tensor
	}{
		{d.wqkv, l.Wq},
		{d.wqkv + uintptr(b.qDim)*uintptr(dim)*2, l.Wk},
		{d.wqkv + uintptr(b.qDim+b.kvDim)*uintptr(dim)*2, l.Wv},
		{d.wo, l.Wo},
		{d.wgu, l.W1},
		{d.wgu + uintptr(f*dim)*2, l.W3},
		{d.w2, l.W2},
	} {
		if err := b.matrix(m.dst, m.t, stage); err != nil {
			return err
		}
	}
	vec := func(p *uintptr, v []float32) {
		if err == nil && v != nil {
			*p, err = b.vector(v)
		}
	}
	vec(&d.attnNorm, l.AttnNorm)
	vec(&d.ffnNorm, l.FFNNorm)
	vec(&d.qNorm, l.QNorm)
	vec(&d.kNorm, l.KNorm)
	if l.BQ != nil {
		vec(&d.bqkv, append(append(append([]float32(nil), l.BQ...), l.BK...), l.BV...))
	}
	return err
}

// matrix dequantizes t ([out][in], any supported type) into dst as bf16,
// through the staging buffer.
func (b *Backend) matrix(dst uintptr, t *model.Tensor, stage uintptr) error {
	cols := t.Shape[0]
	if err := b.dev.CopyHtoD(stage, t.Data); err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if err := b.ops.dequantRows(dst, true, stage, t.Type, int64(t.Type.RowBytes(cols)), 0, t.Rows(), cols); err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	return b.dev.Sync() // the staging buffer is reused next
}

// raw copies bytes to a new device buffer.
func (b *Backend) raw(data []byte) (uintptr, error) {
	p, err := b.malloc(int64(len(data)))
	if err != nil {
		return 0, err
	}
	return p, b.dev.CopyHtoD(p, data)
}

// vector copies a float32 slice to a new device buffer.
func (b *Backend) vector(v []float32) (uintptr, error) {
	return b.raw(f32Bytes(v))
}

// f32Bytes views v's memory as bytes (no copy).
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// i32Bytes views v's memory as bytes (no copy).
func i32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
