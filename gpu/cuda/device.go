//go:build cuda

package cuda

// device is what the backend needs of a GPU. driver implements it over
// libcuda and cuBLASLt; gpu/cuda/emu.Device implements it on the CPU for
// tests. Pointers are device addresses; host slices are read or written
// only for the duration of a call. Work is queued in order; CopyDtoH and
// Sync wait for it.
type device interface {
	Name() string
	NumSMs() int
	Alloc(bytes int64) (uintptr, error)
	Free(p uintptr) error
	MemInfo() (free, total int64, err error)
	CopyHtoD(dst uintptr, src []byte) error
	CopyDtoH(dst []byte, src uintptr) error
	CopyDtoD(dst, src uintptr, bytes int64) error
	Memset32(p uintptr, value uint32, count int64) error
	// Function resolves a kernel of kernels/*.cu by name.
	Function(name string) (uintptr, error)
	// Launch runs fn over grid × block; params holds the kernel's
	// arguments, one 8-byte slot each (32-bit values in the low half).
	Launch(fn uintptr, grid, block [3]uint32, sharedBytes uint32, params []uint64) error
	// MatmulBT computes y[rows][out] = x[rows][in] · w[out][in]ᵀ: x and w
	// bf16, sums in f32, y f32 (yF32) or bf16. Row-major throughout.
	MatmulBT(y uintptr, yF32 bool, x, w uintptr, rows, in, out int) error
	Sync() error
	Close() error
}

var _ device = (*driver)(nil)
