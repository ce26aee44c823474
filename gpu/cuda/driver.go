//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrUnavailable reports that no CUDA device can be used: no driver, no
// device, or a driver too old. Available says why.
var ErrUnavailable = errors.New("cuda: unavailable")

// EnvCuBLASLt names a cuBLASLt library file to load instead of searching
// for libcublasLt.so.13 / .12 on the library path (for example the one in
// a Python venv's nvidia/cu13/lib).
const EnvCuBLASLt = "TANDEM_CUBLASLT"

// driverErr is a failed call: the function and its CUDA/cuBLASLt code.
type driverErr struct {
	call string
	code int
}

func (e *driverErr) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d)", e.call, C.GoString(C.tg_error_name(C.int(e.code))), e.code)
}

func check(call string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &driverErr{call, int(rc)}
}

var driverLoad = sync.OnceValue(func() error {
	var msg [512]C.char
	if rc := C.tg_load(&msg[0], C.size_t(len(msg))); rc != 0 {
		return fmt.Errorf("%w: loading libcuda.so.1: %s", ErrUnavailable, C.GoString(&msg[0]))
	}
	return nil
})

var ltLoad = sync.OnceValue(func() error {
	var msg [512]C.char
	path := C.CString(os.Getenv(EnvCuBLASLt))
	defer C.free(unsafe.Pointer(path))
	if rc := C.tg_lt_load(path, &msg[0], C.size_t(len(msg))); rc != 0 {
		return fmt.Errorf("%w: loading cuBLASLt: %s (set %s to its path)", ErrUnavailable, C.GoString(&msg[0]), EnvCuBLASLt)
	}
	return nil
})

// Available reports whether this process can use a CUDA device: the
// driver loads, initializes and reports at least one device, and
// cuBLASLt loads. When it cannot, reason says why ("loading libcuda.so.1:
// … cannot open shared object file", "no CUDA devices", …).
func Available() (ok bool, reason string) {
	n, err := DeviceCount()
	switch {
	case err != nil:
		return false, err.Error()
	case n == 0:
		return false, "cuda: no CUDA devices"
	}
	if err := ltLoad(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// DeviceCount is the number of CUDA devices visible to this process
// (after CUDA_VISIBLE_DEVICES).
func DeviceCount() (int, error) {
	if err := driverLoad(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.tg_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DriverVersion is the CUDA version the driver supports, e.g. 13000.
func DriverVersion() (int, error) {
	if err := driverLoad(); err != nil {
		return 0, err
	}
	var v C.int
	err := check("cuDriverGetVersion", C.tg_driver_version(&v))
	return int(v), err
}

// driver is a device over the real CUDA driver and cuBLASLt. Kernels run
// on one stream, in order; copies to and from the host are synchronous.
type driver struct {
	d        *C.tg_device
	name     string
	numSMs   int
	ccMajor  int
	ccMinor  int
	module   unsafe.Pointer // CUmodule
	moduleOf string         // which image the module was loaded from
	plans    map[gemmShape]*C.tg_plan
}

// gemmShape keys cuBLASLt plans.
type gemmShape struct {
	yF32          bool
	rows, in, out int
}

// workspaceBytes is cuBLASLt's workspace (NVIDIA recommends 32 MiB on
// Hopper).
const workspaceBytes = 32 << 20

// openDriver opens CUDA device ordinal, loads cuBLASLt and the kernels.
func openDriver(ordinal int) (*driver, error) {
	if err := driverLoad(); err != nil {
		return nil, err
	}
	if err := ltLoad(); err != nil {
		return nil, err
	}
	dr := &driver{plans: map[gemmShape]*C.tg_plan{}}
	if err := check("open device", C.tg_open(C.int(ordinal), &dr.d)); err != nil {
		return nil, fmt.Errorf("cuda:%d: %w", ordinal, err)
	}
	var name [256]C.char
	var sms, major, minor C.int
	if err := check("device info", C.tg_info(dr.d, &name[0], C.int(len(name)), &sms, &major, &minor)); err != nil {
		dr.Close()
		return nil, err
	}
	dr.name, dr.numSMs, dr.ccMajor, dr.ccMinor = C.GoString(&name[0]), int(sms), int(major), int(minor)
	if err := check("cublasLtCreate", C.tg_lt_open(dr.d, workspaceBytes)); err != nil {
		dr.Close()
		return nil, err
	}
	if err := dr.loadKernels(); err != nil {
		dr.Close()
		return nil, err
	}
	return dr, nil
}

// loadKernels loads the first module image the device accepts: the file
// named by $TANDEM_CUDA_KERNELS, then the embedded cubin (sm_90 only),
// then the embedded PTX (JIT-compiled by the driver).
func (dr *driver) loadKernels() error {
	var errs []error
	for _, im := range kernelImages(dr.ccMajor, dr.ccMinor) {
		data, err := im.load()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var log [4096]C.char
		var mod unsafe.Pointer
		rc := C.tg_module_load(dr.d, unsafe.Pointer(&data[0]), &log[0], C.size_t(len(log)), &mod)
		if rc == 0 {
			dr.module, dr.moduleOf = mod, im.name
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w: %s", im.name, check("cuModuleLoadDataEx", rc), C.GoString(&log[0])))
	}
	return fmt.Errorf("cuda: no kernel image loads on %s (sm_%d%d): %w", dr.name, dr.ccMajor, dr.ccMinor, errors.Join(errs...))
}

func (dr *driver) Name() string { return dr.name }
func (dr *driver) NumSMs() int  { return dr.numSMs }

func (dr *driver) Alloc(bytes int64) (uintptr, error) {
	var p C.uint64_t
	if err := check("cuMemAlloc", C.tg_alloc(dr.d, C.size_t(bytes), &p)); err != nil {
		return 0, fmt.Errorf("%w (%d bytes)", err, bytes)
	}
	return uintptr(p), nil
}

func (dr *driver) Free(p uintptr) error { return check("cuMemFree", C.tg_free(dr.d, C.uint64_t(p))) }

func (dr *driver) MemInfo() (free, total int64, err error) {
	var f, t C.size_t
	err = check("cuMemGetInfo", C.tg_meminfo(dr.d, &f, &t))
	return int64(f), int64(t), err
}

func (dr *driver) CopyHtoD(dst uintptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return check("cuMemcpyHtoD", C.tg_htod(dr.d, C.uint64_t(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

func (dr *driver) CopyDtoH(dst []byte, src uintptr) error {
	if len(dst) == 0 {
		return nil
	}
	return check("cuMemcpyDtoH", C.tg_dtoh(dr.d, unsafe.Pointer(&dst[0]), C.uint64_t(src), C.size_t(len(dst))))
}

func (dr *driver) CopyDtoD(dst, src uintptr, bytes int64) error {
	return check("cuMemcpyDtoDAsync", C.tg_dtod(dr.d, C.uint64_t(dst), C.uint64_t(src), C.size_t(bytes)))
}

func (dr *driver) Memset32(p uintptr, value uint32, count int64) error {
	return check("cuMemsetD32Async", C.tg_memset32(dr.d, C.uint64_t(p), C.uint32_t(value), C.size_t(count)))
}

func (dr *driver) Function(name string) (uintptr, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var fn C.uint64_t
	if err := check("cuModuleGetFunction "+name, C.tg_function(dr.module, cs, &fn)); err != nil {
		return 0, err
	}
	return uintptr(fn), nil
}

func (dr *driver) Launch(fn uintptr, grid, block [3]uint32, sharedBytes uint32, params []uint64) error {
	g := [3]C.uint{C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2])}
	b := [3]C.uint{C.uint(block[0]), C.uint(block[1]), C.uint(block[2])}
	var p *C.uint64_t
	if len(params) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&params[0]))
	}
	return check("cuLaunchKernel", C.tg_launch(dr.d, C.uint64_t(fn), &g[0], &b[0], C.uint(sharedBytes), p, C.int(len(params))))
}

func (dr *driver) MatmulBT(y uintptr, yF32 bool, x, w uintptr, rows, in, out int) error {
	key := gemmShape{yF32, rows, in, out}
	p, ok := dr.plans[key]
	if !ok {
		f := C.int(0)
		if yF32 {
			f = 1
		}
		if err := check("cublasLt plan", C.tg_lt_plan(dr.d, f, C.int(rows), C.int(in), C.int(out), &p)); err != nil {
			return fmt.Errorf("%w: y[%d][%d] = x[%d][%d]·wᵀ", err, rows, out, rows, in)
		}
		dr.plans[key] = p
	}
	return check("cublasLtMatmul", C.tg_lt_matmul(dr.d, p, C.uint64_t(y), C.uint64_t(x), C.uint64_t(w)))
}

func (dr *driver) Sync() error { return check("cuStreamSynchronize", C.tg_sync(dr.d)) }

// Close releases the plans, the module and the context.
func (dr *driver) Close() error {
	if dr.d == nil {
		return nil
	}
	for _, p := range dr.plans {
		C.tg_lt_plan_free(p)
	}
	dr.plans = nil
	if dr.module != nil {
		C.tg_module_unload(dr.d, dr.module)
	}
	C.tg_close(dr.d)
	dr.d = nil
	return nil
}

// event is a CUDA event for timing work on the device's stream.
type event struct{ p unsafe.Pointer }

func (dr *driver) newEvent() (event, error) {
	var e event
	err := check("cuEventCreate", C.tg_event_create(dr.d, &e.p))
	return e, err
}

func (dr *driver) record(e event) error { return check("cuEventRecord", C.tg_event_record(dr.d, e.p)) }

// elapsed waits for end and returns the milliseconds between start and end.
func (dr *driver) elapsed(start, end event) (float64, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.tg_event_elapsed(dr.d, start.p, end.p, &ms))
	return float64(ms), err
}

func (dr *driver) destroyEvent(e event) { C.tg_event_destroy(dr.d, e.p) }
