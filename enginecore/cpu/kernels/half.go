package kernels

import "github.com/tandem-llm/tandem/enginecore/model"

// HalfToFloat converts float16 bits to float32 (exact): dst[i] =
// src[i] for i < len(dst) ≤ len(src). The CPU backend's float16 KV cache
// goes through it, a block at a time.
func HalfToFloat(dst []float32, src []uint16) {
	src = src[:len(dst)]
	halfToFloat(dst, src)
}

func halfToFloatGo(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = model.F16ToF32(h)
	}
}
