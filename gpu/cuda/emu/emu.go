//go:build cuda

package emu

/*
#cgo CXXFLAGS: -std=c++17 -O2 -I${SRCDIR}
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "emu.h"

// dev turns a device address kept in Go as a uintptr into a C pointer.
static void* dev(uintptr_t p) { return (void*)p; }
static void fill32(uintptr_t p, uint32_t v, size_t n) {
	uint32_t* w = (uint32_t*)p;
	for (size_t i = 0; i < n; i++) w[i] = v;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// ErrBadPointer reports a device pointer the emulator did not allocate, or
// a range past its end.
var ErrBadPointer = errors.New("emu: bad device pointer")

// Device is an emulated GPU. Its methods are safe for concurrent use,
// though launches run one at a time per calling goroutine.
type Device struct {
	total int64 // bytes of "device memory" MemInfo reports

	mu     sync.Mutex
	allocs map[uintptr]int64 // live allocations: pointer → bytes
	used   int64             // bytes allocated
}

// New returns an emulated device that reports total bytes of memory.
func New(total int64) *Device {
	return &Device{total: total, allocs: map[uintptr]int64{}}
}

// Name identifies the device in logs.
func (d *Device) Name() string { return "emulated (CPU)" }

// NumSMs is the multiprocessor count the backend plans for.
func (d *Device) NumSMs() int { return 4 }

// Alloc returns bytes of zeroed memory (malloc'd: host memory standing
// in for device memory; Go never sees it as a Go pointer).
func (d *Device) Alloc(bytes int64) (uintptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("emu: alloc %d bytes", bytes)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used+bytes > d.total {
		return 0, fmt.Errorf("emu: out of memory: %d + %d > %d bytes", d.used, bytes, d.total)
	}
	p := C.calloc(1, C.size_t(bytes))
	if p == nil {
		return 0, fmt.Errorf("emu: calloc %d bytes failed", bytes)
	}
	u := uintptr(p)
	d.allocs[u] = bytes
	d.used += bytes
	return u, nil
}

// Free releases memory from Alloc.
func (d *Device) Free(p uintptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.allocs[p]
	if !ok {
		return fmt.Errorf("%w: free %#x", ErrBadPointer, p)
	}
	delete(d.allocs, p)
	d.used -= n
	C.free(C.dev(C.uintptr_t(p)))
	return nil
}

// MemInfo reports free and total bytes.
func (d *Device) MemInfo() (free, total int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total - d.used, d.total, nil
}

// check reports whether [p, p+n) lies inside one allocation.
func (d *Device) check(p uintptr, n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for base, size := range d.allocs {
		if p >= base && p+uintptr(n) <= base+uintptr(size) {
			return nil
		}
	}
	return fmt.Errorf("%w: %d bytes at %#x", ErrBadPointer, n, p)
}

// CopyHtoD copies src to device memory at dst.
func (d *Device) CopyHtoD(dst uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := d.check(dst, int64(len(src))); err != nil {
		return err
	}
	C.memcpy(C.dev(C.uintptr_t(dst)), unsafe.Pointer(&src[0]), C.size_t(len(src)))
	return nil
}

// CopyDtoH copies device memory at src to dst.
func (d *Device) CopyDtoH(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	if err := d.check(src, int64(len(dst))); err != nil {
		return err
	}
	C.memcpy(unsafe.Pointer(&dst[0]), C.dev(C.uintptr_t(src)), C.size_t(len(dst)))
	return nil
}

// CopyDtoD copies bytes between device buffers.
func (d *Device) CopyDtoD(dst, src uintptr, bytes int64) error {
	if err := d.check(dst, bytes); err != nil {
		return err
	}
	if err := d.check(src, bytes); err != nil {
		return err
	}
	C.memmove(C.dev(C.uintptr_t(dst)), C.dev(C.uintptr_t(src)), C.size_t(bytes))
	return nil
}

// Memset32 fills count 32-bit words at p with value.
func (d *Device) Memset32(p uintptr, value uint32, count int64) error {
	if err := d.check(p, 4*count); err != nil {
		return err
	}
	C.fill32(C.uintptr_t(p), C.uint32_t(value), C.size_t(count))
	return nil
}

// Function resolves a kernel by name.
func (d *Device) Function(name string) (uintptr, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	id := C.tandem_emu_function(cs)
	if id == 0 {
		return 0, fmt.Errorf("emu: no kernel %q", name)
	}
	return uintptr(id), nil
}

// Launch runs kernel fn over grid × block. params are the kernel's
// arguments in order, one 8-byte slot each (32-bit values in the low
// half). sharedBytes must be 0: kernels declare their shared memory
// statically.
func (d *Device) Launch(fn uintptr, grid, block [3]uint32, sharedBytes uint32, params []uint64) error {
	if sharedBytes != 0 {
		return fmt.Errorf("emu: dynamic shared memory is not emulated")
	}
	if len(params) == 0 {
		params = []uint64{0}
	}
	g := [3]C.uint{C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2])}
	b := [3]C.uint{C.uint(block[0]), C.uint(block[1]), C.uint(block[2])}
	if rc := C.tandem_emu_launch(C.int(fn), &g[0], &b[0], (*C.ulonglong)(unsafe.Pointer(&params[0])), C.int(len(params))); rc != 0 {
		return fmt.Errorf("emu: launch of kernel %d over %v × %v: code %d", fn, grid, block, int(rc))
	}
	return nil
}

// MatmulBT computes y[rows][out] = x[rows][in] · w[out][in]ᵀ with bf16 x
// and w, float32 sums, and y float32 (yF32) or bf16.
func (d *Device) MatmulBT(y uintptr, yF32 bool, x, w uintptr, rows, in, out int) error {
	ySize := int64(2)
	if yF32 {
		ySize = 4
	}
	for _, c := range []struct {
		p uintptr
		n int64
	}{{y, ySize * int64(rows*out)}, {x, 2 * int64(rows*in)}, {w, 2 * int64(out*in)}} {
		if err := d.check(c.p, c.n); err != nil {
			return err
		}
	}
	f := C.int(0)
	if yF32 {
		f = 1
	}
	C.tandem_emu_matmul(C.dev(C.uintptr_t(y)), f, (*C.ushort)(C.dev(C.uintptr_t(x))), (*C.ushort)(C.dev(C.uintptr_t(w))),
		C.int(rows), C.int(in), C.int(out))
	return nil
}

// Sync waits for queued work; emulated work is synchronous.
func (d *Device) Sync() error { return nil }

// Close frees every allocation.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.allocs {
		C.free(C.dev(C.uintptr_t(p)))
	}
	d.allocs, d.used = map[uintptr]int64{}, 0
	return nil
}
