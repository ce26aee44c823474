//go:build cuda

// Package emu runs the CUDA kernels of gpu/cuda/kernels on the CPU, so
// that the CUDA backend's code (kernel launches, buffer layouts, the
// forward pass) is tested on machines without a GPU. The same .cu sources
// are compiled as host C++ (-DTANDEM_EMU, see kernels/compat.h); device
// memory is host memory; GEMMs are plain loops with the cuBLASLt call's
// semantics (bf16 inputs, f32 sums).
//
// It is slow (a block's threads are fibers switched at every barrier) and
// checks logic, not timing or races between blocks. Device implements the
// device interface gpu/cuda's backend uses; only gpu/cuda's tests and
// benchmarks import it. It imports nothing from this repository.
//
// Usage:
//
//	d := emu.New(1 << 30)
//	defer d.Close()
//	fn, _ := d.Function("tandem_rope")
//	err := d.Launch(fn, [3]uint32{numTokens, 1, 1}, [3]uint32{128, 1, 1}, 0, params)
package emu
